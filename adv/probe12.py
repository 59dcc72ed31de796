import os, datetime as dt, decimal
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
import dynorm
from dynorm import Entity, Index, Q, Table, fields
dynorm.configure(endpoint=os.environ["DYNORM_ENDPOINT"])
D = decimal.Decimal; utc = dt.timezone.utc
class T12(Table):
    class Meta:
        table_name = "adv11-t12"
        lsis = {"LSI1": "score"}
        gsi_count = 1
class E(Entity):
    g = fields.String()
    day = fields.DateTime()
    eid = fields.String()
    score = fields.Integer(null=True)
    tag = fields.String(default="a")
    class Meta:
        table = T12; entity_type = "E"
        pk = "E#{g}"; sk = "D#{day:%Y-%m-%d}#{eid}"
        indexes = {"by_score": Index("LSI1"), "by_tag": Index("GSI1", pk="T#{tag}", sk="{score:04d}")}
try: T12.delete_table()
except Exception: pass
T12.create_table()
nine = dt.datetime(2024, 3, 1, 9, tzinfo=utc)
for i in range(12): E.objects.create(g="g", day=nine + dt.timedelta(hours=5 * i), eid=f"e{i}", score=i % 5, tag="ab"[i % 2])
cases = {
 "list lossy eq": (lambda: E.objects.filter(g="g", day=nine), lambda q: list(q), lambda q: q.explain()),
 "first filter": (lambda: E.objects.filter(g="g", tag="b"), lambda q: q.first(), lambda q: q[:1].explain()),
 "last LSI window": (lambda: E.objects.filter(g="g", score__gt=1, score__lt=4), lambda q: q.last(), lambda q: q.reverse()[:1].explain()),
 "count LSI window": (lambda: E.objects.filter(g="g", score__gt=1, score__lt=4), lambda q: q.count(), lambda q: q.explain(count=True)),
 "count GSI": (lambda: E.objects.filter(tag="a", score__gte=2), lambda q: q.count(), lambda q: q.explain(count=True)),
 "page": (lambda: E.objects.filter(g="g", tag="a"), lambda q: q.page(size=3), lambda q: q[:4].explain()),
 "get non-key": (lambda: E.objects.filter(g="g", eid="e1"), lambda q: q.get(), lambda q: q[:2].explain()),
 "slice": (lambda: E.objects.filter(g="g", tag="a"), lambda q: list(q[2:5]), lambda q: q[2:5].explain()),
 "exists": (lambda: E.objects.filter(g="g", score=3), lambda q: q.exists(), lambda q: q[:1].explain()),
 "values": (lambda: E.objects.filter(g="g", score=3), lambda q: q.values("tag"), lambda q: q.only("tag").explain()),
 "latest": (lambda: E.objects.filter(g="g"), lambda q: q.latest(), lambda q: q.reverse()[:1].explain()),
}
for name, (mk, run, ex) in cases.items():
    try:
        plan = ex(mk())
        with dynorm.capture() as c:
            run(mk())
        sent = c.requests[0].params if c.requests else None
        ok = sent == plan.params
        print(("SAFE: " if ok else "BUG: ") + f"explain()==first request for {name}" + ("" if ok else f" (expected {plan.params}, got {sent})"))
    except Exception as e:
        print(f"INFO {name} raised {type(e).__name__}: {str(e)[:150]}")
