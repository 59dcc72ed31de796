from common import *
from dynorm import Entity, Index, Table, fields, F
exec(open("p5_updates.py").read().split("T5.create_table(wait=True)")[0].split("import dynorm, asyncio")[1])
import dynorm, asyncio
T5.create_table(wait=True)
for i in range(7):
    Film.objects.create(tenant_id="t", film_id=f"f{i}", region="eu", year=2000 + i % 3, title=f"T{i}")
for label, qs in [("only(film_id)", Film.objects.filter(tenant_id="t", region="eu").only("film_id")),
                  ("only(title)", Film.objects.filter(tenant_id="t", region="eu").only("title")),
                  ("year=2001 only(film_id)", Film.objects.filter(tenant_id="t", region="eu", year=2001).only("film_id"))]:
    try:
        seen, cur, k = [], None, 0
        while k < 20:
            p = qs.page(size=2, cursor=cur); seen += [f.film_id for f in p.items]; cur = p.cursor; k += 1
            if not cur: break
        exp = [f.film_id for f in qs]
        out(seen == exp and len(set(seen)) == len(seen), f"pages of {label}", f"{seen} vs {exp}")
    except Exception as e:
        out(False, f"pages of {label}", f"{type(e).__name__}: {str(e)[:200]}")
    try:
        vs = qs.values("film_id")
        out(len(vs) == len(list(qs)), f"values of {label}")
    except Exception as e:
        out(False, f"values {label}", f"{type(e).__name__}: {e}")
async def ap():
    qs = Film.objects.filter(tenant_id="t", region="eu").only("film_id")
    seen, cur = [], None
    for _ in range(20):
        p = await qs.apage(size=3, cursor=cur); seen += [f.film_id for f in p.items]; cur = p.cursor
        if not cur: break
    return seen
s = asyncio.run(ap())
out(len(s) == 7 and len(set(s)) == 7, "apage only()", f"{s}")
T5.delete_table()
