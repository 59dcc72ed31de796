import os, uuid
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8612")
import dynorm
from dynorm import Entity, Table, fields, capture
sfx = uuid.uuid4().hex[:6]
class T(Table):
    class Meta: table_name = f"advr-{sfx}"
class Dev(Entity):
    site = fields.String(); num = fields.Integer()
    class Meta:
        table = T; pk = "S#{site}"; sk = "D#{num:05d}"
class Ev(Entity):
    eid = fields.String(); dev = fields.Reference(Dev); note = fields.String(null=True)
    class Meta:
        table = T; pk = "E#{eid}"; sk = "E"
T.create_table()
def p(ok, what, detail=""):
    print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" ({detail})"))
devs = [Dev(site=s, num=n) for s in ("a", "b#", "ü") for n in (1, 10)]
for d in devs: d.save()
evs = [Ev(eid=f"e{i}", dev=devs[i % len(devs)], note=None if i % 3 else "x") for i in range(24)]
for e in evs: e.save()
allev = list(Ev.objects.scan())
for d in devs:
    got = sorted(e.eid for e in Ev.objects.scan().filter(dev=d))
    exp = sorted(e.eid for e in allev if e.dev == d.key)
    p(got == exp and got, f"filter(dev=instance {d.key})", f"{got} vs {exp}")
try:
    got = sorted(e.eid for e in Ev.objects.scan().filter(dev__in=devs[:2]))
    exp = sorted(e.eid for e in allev if e.dev in (devs[0].key, devs[1].key))
    p(got == exp, "filter(dev__in=[instances])", f"{got} vs {exp}")
except Exception as ex: p(False, "filter(dev__in=[instances])", repr(ex)[:200])
# isnull hint: exact=None
try:
    got = sorted(e.eid for e in Ev.objects.scan().filter(note=None))
    exp = sorted(e.eid for e in allev if e.note is None)
    p(got == exp, "filter(note=None) as the isnull hint says", f"{len(got)} vs {len(exp)}")
except Exception as ex: p(False, "filter(note=None) (isnull hint says exact=None)", repr(ex)[:200])
for lk in ("note__icontains", "note__isnull", "note__year", "note__startswith", "dev__site"):
    try:
        with capture() as c: list(Ev.objects.scan().filter(**{lk: "x" if "null" not in lk else True}))
        p(False, f"habit lookup {lk}", "no error")
    except dynorm.InvalidQuery as ex: p(c.count == 0 and "supported" in str(ex), f"habit lookup {lk} -> {str(ex)[:110]}")
    except Exception as ex: p(False, f"habit lookup {lk}", repr(ex)[:200])
# all().delete(): only this entity
n = Ev.objects.scan().delete()
left = [i["PK"]["S"] for i in dynorm.backend.call("Scan", {"TableName": T.table_name(), "ConsistentRead": True})["Items"]]
p(n == 24 and len(left) == 6 and all(x.startswith("S#") for x in left), "scan().delete() only this entity", f"{n} {left}")
try:
    print("   all().delete():", Ev.objects.all().delete())
except Exception as ex: print("   all().delete() ->", type(ex).__name__, str(ex)[:120])
T.delete_table()
