"""Range bounds with adversarial values on N / S / datetime multi-attribute sort attributes."""
from common import *
from decimal import Decimal as D
import datetime as dt
from dynorm import Entity, Index, Table, fields
import dynorm

class T4(Table):
    class Meta:
        table_name = "p4"
        gsis = {"ByInt": {"pk": {"k": "S"}, "sk": {"year": "N"}},
                "ByNum": {"pk": {"k": "S"}, "sk": {"score": "N"}},
                "ByDec": {"pk": {"k": "S"}, "sk": {"dec": "N"}},
                "ByWhen": {"pk": {"k": "S"}, "sk": {"when": "S"}}}

class E(Entity):
    k = fields.String()
    eid = fields.String()
    year = fields.Integer(null=True)
    score = fields.Number(null=True)
    dec = fields.Decimal(null=True)
    when = fields.DateTime(null=True)
    class Meta:
        table = T4
        pk = "K#{k}"
        sk = "E#{eid}"
        indexes = {"by_int": Index("ByInt", pk=("k",), sk=("year",)), "by_num": Index("ByNum", pk=("k",), sk=("score",)),
                   "by_dec": Index("ByDec", pk=("k",), sk=("dec",)), "by_when": Index("ByWhen", pk=("k",), sk=("when",))}
T4.create_table(wait=True)
years = [1999, 2000, 2001, -1, 0]
nums = [1, D("1.0000000000000000000000000000000000001"), D("0.99999999999999999999999999999999999999"), D("-0.5"), 0]
tz = dt.timezone(dt.timedelta(hours=-5)); tz2 = dt.timezone(dt.timedelta(hours=14))
whens = [dt.datetime(1, 1, 1, 12, tzinfo=dt.timezone.utc), dt.datetime(999, 12, 31, tzinfo=dt.timezone.utc), dt.datetime(2024, 3, 1, 23, tzinfo=tz),
         dt.datetime(2024, 3, 2, 3, tzinfo=dt.timezone.utc), dt.datetime(2024, 3, 2, 12, tzinfo=tz2), dt.datetime(9999, 12, 31, 12, tzinfo=dt.timezone.utc)]
for i in range(6):
    E.objects.create(k="a", eid=f"e{i}", year=years[i] if i < 5 else None, score=nums[i] if i < 5 else None,
                     dec=D(str(nums[i])) if i < 5 else None, when=whens[i])
items = list(E.objects.filter(k="a").using("primary"))
def check(label, field, lk, bound, pyval):
    try:
        got = sorted(e.eid for e in E.objects.filter(k="a", **{f"{field}__{lk}": bound}))
    except Exception as ex:
        out(True, f"{label}: refused ({type(ex).__name__}: {str(ex)[:80]})"); return
    import operator
    op = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}[lk]
    exp = sorted(e.eid for e in items if getattr(e, field) is not None and op(pyval(getattr(e, field)), pyval(bound)))
    out(got == exp, label, f"expected {exp}, got {got}")
for lk in ("gt", "gte", "lt", "lte"):
    check(f"year__{lk}=1999.5", "year", lk, 1999.5, lambda v: D(str(v)))
    check(f"year__{lk}=D('2000.5')", "year", lk, D("2000.5"), lambda v: D(str(v)))
    check(f"score__{lk}=41-digit", "score", lk, D("0.99999999999999999999999999999999999999999"), lambda v: D(str(v)))
    check(f"score__{lk}=1+1e-40", "score", lk, D("1.0000000000000000000000000000000000000001"), lambda v: D(str(v)))
    check(f"dec__{lk}=41-digit", "dec", lk, D("0.99999999999999999999999999999999999999999"), lambda v: D(str(v)))
    check(f"score__{lk}=float 0.9999999999999999", "score", lk, 0.9999999999999999, lambda v: D(repr(v)) if isinstance(v, float) else D(str(v)))
    check(f"score__{lk}=-0.0", "score", lk, -0.0, lambda v: D(str(v)))
    for w in [dt.datetime(2024, 3, 2, 4, 0, tzinfo=dt.timezone.utc), dt.datetime(2024, 3, 1, 23, 30, tzinfo=tz), dt.datetime(1000, 1, 1), dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(2024, 3, 2)]:
        check(f"when__{lk}={w.isoformat()}", "when", lk, w, lambda v: v if v.tzinfo else v.replace(tzinfo=dt.timezone.utc))
# ordering by when
got = [e.eid for e in E.objects.filter(k="a").order_by("when")]
exp = [e.eid for e in sorted(items, key=lambda e: e.when)]
out(got == exp, "order_by(when) with offsets and old years", f"expected {exp} got {got}")
T4.delete_table()
