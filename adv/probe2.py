import os, datetime as dt, decimal, random, sys, itertools
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
import dynorm
from dynorm import Entity, Index, Q, Table, fields
dynorm.configure(endpoint=os.environ["DYNORM_ENDPOINT"])
R = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
D = decimal.Decimal
class T2(Table):
    class Meta:
        table_name = "adv11-t2"
        gsi_count = 1

class Num(Entity):
    g = fields.String()
    v = fields.Decimal()
    tag = fields.String(default="a")
    class Meta:
        table = T2; entity_type = "NUM"
        pk = "NUM#{g}"; sk = "{v}"

class Other(Entity):
    g = fields.String()
    x = fields.String()
    v = fields.Decimal(null=True)
    class Meta:
        table = T2; entity_type = "OTH"
        pk = "NUM#{g}"; sk = "{x}"

class When(Entity):
    g = fields.String()
    at = fields.DateTime()
    n = fields.Integer()
    class Meta:
        table = T2; entity_type = "WHEN"
        pk = "W#{g}"; sk = "{at}#{n:04d}"

def probe(label, ok, exp, got):
    print(("SAFE: " if ok else "BUG: ") + label + ("" if ok else f" (expected {exp!r}, got {got!r})"))
try: T2.delete_table()
except Exception: pass
T2.create_table()
vals = [D(0), D("-0.0"), D("1.5"), D("-1.5"), D("1E-130"), D("-1E-130"), D("9.999999999999999999999999999999999999E+125"),
        D("-9.999999999999999999999999999999999999E+125"), D("1.000000000000000000000000000000000001"), D("1"), D("10"), D("-10"),
        D("0.1"), D("-0.1"), D("123456789012345678901234567890123456.78"), D("-5"), D("-50"), D("-5.5"), D("2.05"), D("2.5")]
stored = []
for v in vals:
    try:
        Num.objects.create(g="g", v=v, tag=R.choice("ab"))
        stored.append(v)
    except dynorm.AlreadyExists:
        pass
    except Exception as e:
        print("INFO refused", v, type(e).__name__, str(e)[:80])
for x in ["a", "b"]:
    Other.objects.create(g="g", x=x, v=D(1))
exp_all = sorted(set(stored))
got = [o.v for o in Num.objects.filter(g="g")]
probe("Decimal sk natural order", got == exp_all, exp_all, got)
bad = 0
for i in range(60):
    lk = R.choice(["lt", "lte", "gt", "gte", "between", "exact", "ne"])
    pool = exp_all + [D("1.4999"), D("-1.50001"), D("0"), D("2"), D("1E-129"), D("-1E+125")]
    a = R.choice(pool); b = R.choice(pool)
    v = (min(a, b), max(a, b)) if lk == "between" else a
    f = {"lt": lambda x: x < v, "lte": lambda x: x <= v, "gt": lambda x: x > v, "gte": lambda x: x >= v,
         "between": lambda x: v[0] <= x <= v[1], "exact": lambda x: x == v, "ne": lambda x: x != v}[lk]
    exp = [x for x in exp_all if f(x)]
    qs = Num.objects.filter(g="g", **{f"v__{lk}": v})
    shape = R.choice(["list", "rev", "count", "first", "last", "page", "slice"])
    try:
        if shape == "list": got, e2 = [o.v for o in qs], exp
        elif shape == "rev": got, e2 = [o.v for o in qs.reverse()], exp[::-1]
        elif shape == "count": got, e2 = qs.count(), len(exp)
        elif shape == "first": o = qs.first(); got, e2 = (o.v if o else None), (exp[0] if exp else None)
        elif shape == "last": o = qs.last(); got, e2 = (o.v if o else None), (exp[-1] if exp else None)
        elif shape == "slice": got, e2 = [o.v for o in qs[1:4]], exp[1:4]
        else:
            got, c = [], None
            for _ in range(30):
                p = qs.page(size=2, cursor=c); got += [o.v for o in p]; c = p.cursor
                if c is None: break
            e2 = exp
        if got != e2:
            bad += 1; print(f"BUG: Num v__{lk}={v!r} {shape} (expected {e2!r}, got {got!r})")
    except dynorm.InvalidQuery as e:
        if exp: print(f"BUG: refused v__{lk}={v!r} with non-empty answer: {e}")
    except Exception as e:
        bad += 1; print(f"BUG: Num v__{lk}={v!r} {shape} raised {type(e).__name__}: {str(e)[:150]}")
if not bad: print("SAFE: 60 random Decimal-sk range queries in shared partition")
# count in shared partition
probe("count() in shared partition, sk starts with placeholder", Num.objects.filter(g="g").count() == len(exp_all), len(exp_all), Num.objects.filter(g="g").count())
probe("Other count", Other.objects.filter(g="g").count() == 2, 2, Other.objects.filter(g="g").count())
# datetime with offsets
tzs = [dt.timezone.utc, dt.timezone(dt.timedelta(hours=-5)), dt.timezone(dt.timedelta(hours=14)), dt.timezone(dt.timedelta(hours=-12, minutes=-30))]
whens = []
base = dt.datetime(2024, 3, 1, 23, 0, tzinfo=tzs[1])
for i in range(12):
    at = (base + dt.timedelta(minutes=R.randint(-2000, 2000), microseconds=R.randint(0, 999999))).astimezone(R.choice(tzs))
    n = R.randint(0, 9999)
    When.objects.create(g="g", at=at, n=n); whens.append((at, n))
whens.sort(key=lambda t: (t[0], t[1]))
got = [(o.at, o.n) for o in When.objects.filter(g="g")]
probe("datetime sk order", got == whens, whens, got)
try:
    got = [(o.at, o.n) for o in When.objects.filter(g="g").order_by("-at")]
    probe("order_by(-at)", got == whens[::-1], whens[::-1], got)
except dynorm.InvalidQuery as e: print("INFO order_by at refused", e)
bad = 0
for i in range(30):
    lk = R.choice(["lt", "lte", "gt", "gte", "exact"])
    v = R.choice(whens)[0].astimezone(R.choice(tzs)) + R.choice([dt.timedelta(0), dt.timedelta(microseconds=1), -dt.timedelta(microseconds=1)])
    f = {"lt": lambda x: x < v, "lte": lambda x: x <= v, "gt": lambda x: x > v, "gte": lambda x: x >= v, "exact": lambda x: x == v}[lk]
    exp = [w for w in whens if f(w[0])]
    got = [(o.at, o.n) for o in When.objects.filter(g="g", **{f"at__{lk}": v})]
    if got != exp: bad += 1; print(f"BUG: When at__{lk}={v} (expected {exp}, got {got})")
if not bad: print("SAFE: 30 datetime-with-offset range queries")
# cursor reuse across modified queryset
qs = Num.objects.filter(g="g")
p1 = qs.page(size=3)
for label, q2 in [("filter tag", qs.filter(tag="a")), ("reverse", qs.reverse()), ("v__gt", qs.filter(v__gt=D(0))), ("only", qs.only("tag")), ("other g", Num.objects.filter(g="h"))]:
    try:
        r = q2.page(size=3, cursor=p1.cursor)
        print(f"BUG: cursor from plain qs accepted on {label} (expected InvalidCursor, got {len(r.items)} items)")
    except dynorm.InvalidCursor:
        print(f"SAFE: cursor refused on {label}")
    except Exception as e:
        print(f"BUG: cursor on {label} raised {type(e).__name__}: {str(e)[:100]}")
# tamper
c = p1.cursor
for label, t in [("flip last", c[:-1] + ("A" if c[-1] != "A" else "B")), ("flip first", ("A" if c[0] != "A" else "B") + c[1:]), ("truncate", c[:-5]), ("empty", ""), ("garbage", "!!!"), ("padding", c + "=="), ("ws", c+"\n")]:
    try:
        r = qs.page(size=3, cursor=t); print(f"BUG: tampered cursor {label} accepted ({len(r.items)} items)")
    except dynorm.InvalidCursor: print(f"SAFE: tampered cursor {label} refused")
    except Exception as e: print(f"BUG: tampered cursor {label} raised {type(e).__name__}: {str(e)[:100]}")
