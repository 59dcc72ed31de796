from common import *
from dynorm import Entity, Index, Table, fields, F
exec(open("p5_updates.py").read().split("T5.create_table(wait=True)")[0].split("import dynorm, asyncio")[1])
import dynorm
T5.create_table(wait=True)
data = [(2000, "Alpha"), (2001, "beta"), (2002, "Gamma"), (None, "x"), (2001, None)]
for i, (y, t) in enumerate(data):
    Film.objects.create(tenant_id="t", film_id=f"f{i}", region="eu", year=y, title=t)
base = Film.objects.filter(tenant_id="t", region="eu")
def run(label, fn, exp):
    try:
        got = fn()
        out(got == exp, label, f"expected {exp}, got {got}")
    except Exception as e:
        print(f"INFO {label}: {type(e).__name__}: {str(e)[:160]}")
ids = lambda qs: sorted(f.film_id for f in qs)
run("year__range=(2000,2001)", lambda: ids(base.filter(year__range=(2000, 2001))), ["f0", "f1"])
run("year__isnull=True", lambda: ids(base.filter(year__isnull=True)), ["f3"])
run("year__isnull=False", lambda: ids(base.filter(year__isnull=False)), ["f0", "f1", "f2", "f4"])
run("year__exists=False", lambda: ids(base.filter(year__exists=False)), ["f3"])
run("title__startswith=A", lambda: ids(base.filter(year=2000, title__startswith="A")), ["f0"])
run("title__in", lambda: ids(base.filter(title__in=["Alpha", "x"])), ["f0", "f3"])
run("year__in", lambda: ids(base.filter(year__in=[2001])), ["f1", "f4"])
run("exclude(year=2001)", lambda: ids(base.exclude(year=2001)), ["f0", "f2", "f3"])
run("filter(year=2001) count", lambda: base.filter(year=2001).count(), 2)
run("len(filter(year=2001))", lambda: len(base.filter(year=2001)), 2)
run("bool(filter(year=1))", lambda: bool(base.filter(year=1)), False)
run("earliest(year)", lambda: base.earliest("year").film_id, "f0")
run("latest(year)", lambda: base.latest("year").film_id, "f2")
run("order_by(year) list", lambda: [f.film_id for f in base.order_by("year")], ["f0", "f1", "f4", "f2"])
T5.delete_table()
