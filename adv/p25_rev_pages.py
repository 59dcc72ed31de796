from common import *
from dynorm import Entity, Index, Table, fields
exec(open("p5_updates.py").read().split("T5.create_table(wait=True)")[0].split("import dynorm, asyncio")[1])
import dynorm, asyncio
T5.create_table(wait=True)
random.seed(25)
for i in range(40):
    Film.objects.create(tenant_id="t", film_id=f"f{i:02d}", region="eu", year=random.choice([1, 2]), title=random.choice(["a", "b"]))
for label, qs in [("reverse", Film.objects.filter(tenant_id="t", region="eu").reverse()),
                  ("-year,-title", Film.objects.filter(tenant_id="t", region="eu").order_by("-year", "-title")),
                  ("year=2 reverse", Film.objects.filter(tenant_id="t", region="eu", year=2).reverse()),
                  ("year__lte=1 desc", Film.objects.filter(tenant_id="t", region="eu", year__lte=1).order_by("-year"))]:
    full = [f.film_id for f in qs]
    for size in (1, 3, 7):
        seen, cur = [], None
        for _ in range(60):
            p = qs.page(size=size, cursor=cur); seen += [f.film_id for f in p.items]; cur = p.cursor
            if not cur: break
        out(seen == full, f"{label} pages size={size}", f"{len(seen)} vs {len(full)}")
    sl = [f.film_id for f in qs[5:12]]
    out(sl == full[5:12], f"{label} slice")
T5.delete_table()
