import os, sys, uuid, datetime as dt
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8612")
import dynorm
from dynorm import Entity, Table, fields, capture, Q
import boto3

sfx = uuid.uuid4().hex[:6]
class T(Table):
    class Meta:
        table_name = f"advh-{sfx}"
        gsis = {"GSI1": ("GSI1PK", "GSI1SK")}

class Ev(Entity):
    dev = fields.String()
    seq = fields.Integer()
    note = fields.String(null=True)
    version = fields.Version()
    class Meta:
        table = T
        pk = "DEV#{dev}"
        sk = "EV#{seq:08d}"

class Other(Entity):
    dev = fields.String()
    name = fields.String()
    class Meta:
        table = T
        pk = "DEV#{dev}"
        sk = "O#{name}"

T.create_table(exist_ok=True)
raw = boto3.client("dynamodb", endpoint_url=os.environ["DYNORM_ENDPOINT"], region_name="us-east-1",
                   aws_access_key_id="dynormlocal", aws_secret_access_key="dynormlocal")
def rawitems():
    return raw.scan(TableName=T.table_name(), ConsistentRead=True)["Items"]
def p(ok, what, detail=""):
    print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" ({detail})"))

objs = Ev.objects.bulk_create([Ev(dev="d", seq=i) for i in range(5)])
Other(dev="d", name="x").save()
qs = Ev.objects.filter(dev="d")
# latest with "-" field
try:
    a = qs.latest("-seq"); p(a.seq == 0, "latest('-seq') is Django's earliest", f"expected seq 0, got {a.seq}")
except Exception as e: p(False, "latest('-seq')", repr(e))
try:
    a = qs.earliest("-seq"); p(a.seq == 4, "earliest('-seq') is Django's latest", f"expected seq 4, got {a.seq}")
except Exception as e: p(False, "earliest('-seq')", repr(e))
p(qs.latest().seq == 4 and qs.earliest().seq == 0, "latest()/earliest()")
p(qs.filter(seq__lt=3).latest().seq == 2, "latest with sk filter")
p(qs.filter(note__exists=False, seq__lt=2).latest().seq == 1, "latest with filter expr")
# Q(pk=)
try:
    r = list(Ev.objects.filter(Q(pk=("d", 1)) | Q(pk=("d", 2))))
    p(sorted(o.seq for o in r) == [1, 2], "Q(pk=...) OR", r)
except Exception as e: p(False, "Q(pk=(..)) inside Q objects (filter(pk=) works)", f"expected items 1,2, got {type(e).__name__}: {str(e)[:120]}")
try:
    p(Ev.objects.get(pk=("d", 3)).seq == 3, "get(pk=tuple)")
except Exception as e: p(False, "get(pk=tuple)", repr(e)[:150])
# values_list
p(qs.values_list("pk", flat=True) == [("d", i) for i in range(5)], "values_list pk flat")
p(qs.values_list("pk", "note")[0] == (("d", 0), None), "values_list pk+note")
# in_bulk
try:
    r = Ev.objects.in_bulk([("d", 1), ("d", 1), ("d", 99)]); p(set(r) == {("d", 1)}, "in_bulk duplicates/missing", r)
except Exception as e: p(False, "in_bulk with a duplicate id", f"expected {{('d',1): obj}}, got {type(e).__name__}: {str(e)[:150]}")
try:
    r = Ev.objects.in_bulk([]); p(r == {}, "in_bulk([])", r)
except Exception as e: p(False, "in_bulk([])", repr(e)[:150])
try:
    r = qs.in_bulk(); p(set(r) == {("d", i) for i in range(5)}, "qs.in_bulk()", r)
except Exception as e: p(False, "qs.in_bulk()", repr(e)[:150])
try:
    r = qs.filter(seq__gte=3).in_bulk([("d", 1), ("d", 4)]); p(set(r) == {("d", 4)}, "filtered qs.in_bulk(ids) respects filter (Django)", f"expected only ('d',4), got {sorted(r)}")
except Exception as e: p(False, "filtered in_bulk", repr(e)[:150])
try:
    Ev.objects.in_bulk(["d"]); p(False, "in_bulk bare value on composite key", "no error")
except dynorm.DynormError as e: p(True, "in_bulk bare value on composite key")
except Exception as e: p(False, "in_bulk bare value composite", repr(e)[:150])
# none chained
n = qs.none()
with capture() as c:
    r = [list(n.filter(seq=1)), n.count(), n.exists(), n.first(), n.values_list("seq", flat=True), n.in_bulk([("d",1)]), n.delete(), list(n.order_by("-seq") if hasattr(n,"order_by") else []), list(n.reverse()), n.values(), list(n[0:2])]
p(c.count == 0, "none() chain sends no request", c.operations)
with capture() as c:
    for name, fn in [("latest", lambda: n.latest()), ("get", lambda: n.get(seq=1)), ("update", lambda: n.filter(seq=1).update(note="x")), ("get_or_create", lambda: n.get_or_create(dev="d", seq=1)), ("bulk_update", lambda: n.bulk_update(objs[:1], ["note"]))]:
        try:
            r = fn(); print("   none().%s ->" % name, repr(r)[:80])
        except Exception as e: print("   none().%s raises %s: %s" % (name, type(e).__name__, str(e)[:100]))
print("   none() ops:", c.operations)
# delete on filtered qs doesn't touch Other
before = len(rawitems())
cnt = qs.filter(seq__gte=3).delete()
after = rawitems()
p(cnt == 2 and len(after) == before - 2, "qs.delete count", f"{cnt} {before} {len(after)}")
p(any(i["SK"]["S"] == "O#x" for i in after), "qs.delete keeps other entity")
# pk property vs field named pk
print("   Ev(dev='d',seq=1).pk =", Ev(dev="d", seq=1).pk)
T.delete_table()
