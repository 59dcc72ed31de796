"""Key attribute size limits on multi-attribute GSIs (sort attribute <= 1024 bytes, partition <= 2048)."""
from common import *
from dynorm import Entity, Index, Table, fields
exec(open("p5_updates.py").read().split("T5.create_table(wait=True)")[0].split("import dynorm, asyncio")[1])
import dynorm
T5.create_table(wait=True)
for label, kw in [("title 1025 bytes", dict(title="x" * 1025, year=1)), ("title 1024 bytes", dict(title="x" * 1024, year=1)),
                  ("region 2049 bytes", dict(region="r" * 2049, year=1, title="a")), ("title 600 x U+10FFFF (2400 bytes)", dict(title="\U0010FFFF" * 600, year=1))]:
    kw.setdefault("region", "eu")
    try:
        Film.objects.create(tenant_id="t", film_id=label.replace(" ", "_"), **kw)
        print(f"INFO {label}: accepted by dynorm and DynamoDB Local")
    except Exception as e:
        print(f"INFO {label}: {type(e).__name__}: {str(e)[:200]}")
T5.delete_table()
