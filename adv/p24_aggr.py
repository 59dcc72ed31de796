from common import *
from dynorm import Entity, Index, Table, fields
exec(open("p5_updates.py").read().split("T5.create_table(wait=True)")[0].split("import dynorm, asyncio")[1])
import dynorm
T5.create_table(wait=True)
for label, kw in [("tenant 1100 + region 1100", dict(tenant_id="t" * 1100, region="r" * 1100, year=1, title="a")),
                  ("year 2024 + title 1020", dict(tenant_id="t", region="eu", year=2024, title="x" * 1020)),
                  ("title 1022 + year 1", dict(tenant_id="t", region="eu", year=1, title="x" * 1022))]:
    with dynorm.capture() as cap:
        try:
            Film.objects.create(film_id="f", **kw); print(f"INFO {label}: accepted")
            Film.objects.filter(tenant_id=kw["tenant_id"], film_id="f").delete()
        except Exception as e:
            print(f"INFO {label}: {type(e).__name__}: {str(e)[:160]} requests={cap.operations}")
T5.delete_table()
