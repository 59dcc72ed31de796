"""Bad range values on multi-attribute sort attributes: refused before any request, never a wrong answer."""
from common import *
from dynorm import Entity, Index, Table, fields
import dynorm
exec(open("p5_updates.py").read().split("T5.create_table(wait=True)")[0].split("import dynorm, asyncio")[1])
T5.create_table(wait=True)
for i, (y, t) in enumerate([(2000, "a"), (2001, "b"), (2002, "\U0010FFFF")]):
    Film.objects.create(tenant_id="t", film_id=f"f{i}", region="eu", year=y, title=t)
base = Film.objects.filter(tenant_id="t", region="eu")
cases = [("title__gt", "\ud800", {"year": 2000}), ("title__begins_with", "\udfff", {"year": 2000}), ("title", "\ud800", {"year": 2000}),
         ("year__gt", "2000", {}), ("year__gt", True, {}), ("year__gt", None, {}), ("year__between", (2000,), {}), ("year__between", [2001, 2000], {}),
         ("title__gt", 5, {"year": 2000}), ("year__gte", float("nan"), {}), ("year__lt", float("inf"), {}), ("year__in", [2000, 2001], {}),
         ("title__begins_with", "", {"year": 2000}), ("title__gt", "", {"year": 2000}), ("title__lte", "", {"year": 2000}), ("title__between", ("", "b"), {"year": 2001}),
         ("title__between", ("", ""), {"year": 2001}), ("year__between", (2000, 2000), {}), ("year__exists", True, {}), ("year__ne", 2000, {}),
         ("region__begins_with", "e", {}), ("tenant_id__gt", "s", {})]
for k, v, extra in cases:
    kw = {k: v, **extra}
    with dynorm.capture() as cap:
        try:
            got = [f.film_id for f in base.filter(**kw)]
            ops = cap.operations
            print(f"INFO {kw!r} -> {got} ops={ops}")
        except Exception as e:
            bad = any(op for op in cap.operations) or type(e).__name__ in ("ServiceError", "UnicodeEncodeError", "TypeError", "AttributeError", "KeyError", "ClientError", "ParamValidationError", "ValueError", "InvalidOperation")
            out(not bad, f"{kw!r} refused: {type(e).__name__}", f"{type(e).__name__}: {str(e)[:150]} ops={cap.operations}")
T5.delete_table()
