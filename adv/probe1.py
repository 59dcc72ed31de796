import os, datetime as dt, decimal, random, sys
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
import dynorm
from dynorm import Entity, Index, Q, Table, fields
dynorm.configure(endpoint=os.environ["DYNORM_ENDPOINT"])
R = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 1)

class T1(Table):
    class Meta:
        table_name = "adv11-t1"
        gsi_count = 1

class Perc(Table):
    class Meta:
        table_name = "adv11-perc"
        key_encoding = "percent"

class Ev(Entity):
    g = fields.String()
    day = fields.DateTime()
    eid = fields.String()
    class Meta:
        table = T1; entity_type = "EV"
        pk = "EV#{g}"; sk = "D#{day:%Y-%m-%d}#{eid}"

class Dm(Entity):
    g = fields.String()
    day = fields.DateTime()
    class Meta:
        table = T1; entity_type = "DM"
        pk = "DM#{g}"; sk = "D#{day:%d.%m.%Y %H%M%S%f}"

class PN(Entity):
    g = fields.String()
    name = fields.String()
    class Meta:
        table = Perc; entity_type = "PN"
        pk = "PN#{g}"; sk = "N#{name}"

def probe(label, ok, exp, got):
    print(("SAFE: " if ok else "BUG: ") + label + ("" if ok else f" (expected {exp!r}, got {got!r})"))

for t in (T1, Perc):
    try: t.delete_table()
    except Exception: pass
    t.create_table()

utc = dt.timezone.utc
# 1 lossy spec then another field: order_by('day')
days = [dt.datetime(2024,3,1,h,tzinfo=utc) for h in (9, 3, 15, 1)]
for i, d in enumerate(days):
    Ev.objects.create(g="g", day=d, eid="abcd"[i])
try:
    got = [e.day.hour for e in Ev.objects.filter(g="g").order_by("day")]
    exp = sorted(d.hour for d in days)
    probe("order_by on lossy-spec field followed by another field", got == exp, exp, got)
except dynorm.InvalidQuery as e:
    print("SAFE: order_by lossy refused:", str(e)[:100])
# 2 unordered spec
dms = [dt.datetime(2024,1,31,tzinfo=utc), dt.datetime(2024,2,1,tzinfo=utc), dt.datetime(2023,12,15,tzinfo=utc)]
for d in dms: Dm.objects.create(g="g", day=d)
try:
    got = [e.day.date().isoformat() for e in Dm.objects.filter(g="g").order_by("day")]
    exp = sorted(d.date().isoformat() for d in dms)
    probe("order_by on unordered-spec field", got == exp, exp, got)
except dynorm.InvalidQuery as e:
    print("SAFE: order_by unordered refused:", str(e)[:100])
try:
    got = [e.day.date().isoformat() for e in Dm.objects.filter(g="g", day__gt=dt.datetime(2024,1,1,tzinfo=utc))]
    exp = sorted(d.date().isoformat() for d in dms if d > dt.datetime(2024,1,1,tzinfo=utc))
    probe("range on unordered-spec field", sorted(got) == exp, exp, got)
except dynorm.InvalidQuery as e:
    print("SAFE?: range unordered refused:", str(e)[:100])
# 3 percent table order_by name
names = ["a#", "a$", "a", "a%", "a#z", "b"]
for n in names: PN.objects.create(g="g", name=n)
try:
    got = [p.name for p in PN.objects.filter(g="g").order_by("name")]
    exp = sorted(names)
    probe("order_by(name) on percent-encoded table", got == exp, exp, got)
except dynorm.InvalidQuery as e:
    print("SAFE: percent order_by refused:", str(e)[:100])
for lk, v in [("lt", "a$"), ("gt", "a#"), ("gte", "a$"), ("between", ("a#", "a$")), ("begins_with", "a#")]:
    try:
        got = sorted(p.name for p in PN.objects.filter(g="g", **{f"name__{lk}": v}))
        f = {"lt": lambda x: x < v, "gt": lambda x: x > v, "gte": lambda x: x >= v,
             "between": lambda x: v[0] <= x <= v[1], "begins_with": lambda x: x.startswith(v)}[lk]
        exp = sorted(n for n in names if f(n))
        probe(f"percent table name__{lk}={v!r}", got == exp, exp, got)
    except Exception as e:
        print(f"BUG: percent name__{lk} raised {type(e).__name__}: {str(e)[:120]}")
# PN first/last
got = PN.objects.filter(g="g").order_by("-sk").first().name if True else None
print("INFO percent -sk first:", got)
