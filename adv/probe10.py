import os, random, sys
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
import dynorm
from dynorm import Entity, Index, Q, Table, fields
dynorm.configure(endpoint=os.environ["DYNORM_ENDPOINT"])
class T10(Table):
    class Meta:
        table_name = "adv11-t10"
        delimiter = "::"
class MF(Entity):
    g = fields.String()
    a = fields.String()
    b = fields.String()
    class Meta:
        table = T10; entity_type = "MF"
        pk = "G::{g}"; sk = "R::{a}::{b}"
try: T10.delete_table()
except Exception: pass
T10.create_table()
R = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
AL = ["#", "$", "%", ":", ";", "::", " ", "\x01", "a", "z", "é", "\U0010ffff", "~", "\x7f", "0"]
def s(): return "".join(R.choice(AL) for _ in range(R.randint(1, 3)))
recs = set()
while len(recs) < 60: recs.add((s(), s()))
recs = sorted(recs)
with MF.batch_write() if hasattr(MF, "batch_write") else open(os.devnull) as _:
    pass
MF.objects.bulk_create([MF(g="g", a=a, b=b) for a, b in recs])
bad = 0
def chk(label, got, exp):
    global bad
    if got != exp:
        bad += 1; print(f"BUG: {label} (expected {exp[:6]!r}.., got {got[:6]!r}..)")
chk("natural order (a,b)", [(o.a, o.b) for o in MF.objects.filter(g="g")], recs)
try: chk("order_by(a)", [(o.a, o.b) for o in MF.objects.filter(g="g").order_by("a")], recs)
except dynorm.InvalidQuery as e: print("INFO order_by a refused", e)
chk("order_by(-a)", [(o.a, o.b) for o in MF.objects.filter(g="g").order_by("-a")], recs[::-1])
for i in range(50):
    a0 = R.choice(recs)[0] if R.random() < .7 else s()
    b0 = R.choice(recs)[1] if R.random() < .7 else s()
    kind = R.choice(["a_gt", "a_lt", "a_bw", "a_pref", "b_gt_pinned", "b_lte_pinned", "b_begins_pinned", "a_pinned_order"])
    if kind == "a_gt": qs, f = MF.objects.filter(g="g", a__gt=a0), lambda r: r[0] > a0
    elif kind == "a_lt": qs, f = MF.objects.filter(g="g", a__lt=a0), lambda r: r[0] < a0
    elif kind == "a_bw":
        lo, hi = sorted([a0, s()]); qs, f = MF.objects.filter(g="g", a__between=(lo, hi)), lambda r: lo <= r[0] <= hi
    elif kind == "a_pref":
        p = a0[:R.randint(1, len(a0))]; qs, f = MF.objects.filter(g="g", a__begins_with=p), lambda r: r[0].startswith(p)
    elif kind == "b_gt_pinned": qs, f = MF.objects.filter(g="g", a=a0, b__gt=b0), lambda r: r[0] == a0 and r[1] > b0
    elif kind == "b_lte_pinned": qs, f = MF.objects.filter(g="g", a=a0, b__lte=b0), lambda r: r[0] == a0 and r[1] <= b0
    elif kind == "b_begins_pinned":
        p = b0[:1]; qs, f = MF.objects.filter(g="g", a=a0, b__begins_with=p), lambda r: r[0] == a0 and r[1].startswith(p)
    else: qs, f = MF.objects.filter(g="g", a=a0).order_by("-b"), None
    exp = [r for r in recs if f(r)] if f else [r for r in recs if r[0] == a0][::-1]
    try:
        chk(f"{kind} a0={a0!r} b0={b0!r}", [(o.a, o.b) for o in qs], exp)
        qs = qs._clone() if hasattr(qs, "_clone") else qs
        qs._cache = None
        shape = R.choice(["count", "first", "slice", "page"])
        if shape == "count": chk(f"{kind} count", [qs.count()], [len(exp)])
        elif shape == "first": o = qs.first(); chk(f"{kind} first", [(o.a, o.b) if o else None], [exp[0] if exp else None])
        elif shape == "slice": chk(f"{kind} [1:3]", [(o.a, o.b) for o in qs[1:3]], exp[1:3])
        else:
            got, c = [], None
            for _ in range(70):
                pg = qs.page(size=R.randint(1, 4), cursor=c); got += [(o.a, o.b) for o in pg]; c = pg.cursor
                if c is None: break
            chk(f"{kind} pages", got, exp)
    except Exception as e:
        bad += 1; print(f"BUG: {kind} a0={a0!r} b0={b0!r} raised {type(e).__name__}: {str(e)[:150]}")
if not bad: print("SAFE: multi-field '::' delimiter keys: 50 random queries (order, ranges, begins_with, count, first, slices, pages)")
