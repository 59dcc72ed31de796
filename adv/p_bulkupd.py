import os, sys, uuid, json, urllib.request
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8612")
sys.path.insert(0, ".")
import botocore.exceptions
import dynorm
from dynorm import Entity, Table, fields, capture, backend
from tests.faults import Hook
sfx = uuid.uuid4().hex[:6]
class T(Table):
    class Meta: table_name = f"advb-{sfx}"
class C(Entity):
    cid = fields.String()
    n = fields.Integer(default=0)
    note = fields.String(null=True)
    version = fields.Version()
    class Meta:
        table = T; pk = "C#{cid}"; sk = "C"
T.create_table()
def p(ok, what, detail=""):
    print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" ({detail})"))
def raw(cid):
    return backend.call("GetItem", {"TableName": T.table_name(), "Key": {"PK": {"S": f"C#{cid}"}, "SK": {"S": "C"}}, "ConsistentRead": True}).get("Item")
objs = C.objects.bulk_create([C(cid=f"c{i}") for i in range(5)])
# undeclared attribute preserved
backend.call("UpdateItem", {"TableName": T.table_name(), "Key": {"PK": {"S": "C#c0"}, "SK": {"S": "C"}}, "UpdateExpression": "SET extra_attr = :x", "ExpressionAttributeValues": {":x": {"S": "keep"}}})
for o in objs: o.n = 7
C.objects.bulk_update(objs, ["n"])
r = raw("c0"); p(r.get("extra_attr") == {"S": "keep"} and r["n"]["N"] == "7", "bulk_update keeps undeclared attrs")
p([o.version for o in objs] == [2]*5, "bulk_update bumps in-memory versions", [o.version for o in objs])
# lost response on TransactWriteItems
state = {"n": 0}
def lost(request, **kw):
    state["n"] += 1
    if state["n"] == 1:
        data = request.body; headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        urllib.request.urlopen(urllib.request.Request(request.url, data=data, headers=headers), timeout=10).read()
        raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)
for o in objs: o.n = 8
try:
    with Hook("before-send.dynamodb.TransactWriteItems", lost):
        k = C.objects.bulk_update(objs, ["n"])
    vs = [raw(f"c{i}")["version"]["N"] for i in range(5)]
    p(k == 5 and vs == ["3"]*5 and [o.version for o in objs] == [3]*5, "bulk_update with lost response (retry idempotent)", f"{k} {vs} {[o.version for o in objs]}")
except Exception as e:
    vs = [raw(f"c{i}")["version"]["N"] for i in range(5)]
    p(False, "bulk_update with lost response reported failed but applied", f"{type(e).__name__}: {str(e)[:120]}; stored versions {vs}")
# conflict in chunk 2
fresh = list(C.objects.scan()) if hasattr(C.objects, "scan") else objs
fresh = sorted(fresh, key=lambda o: o.cid)
stale = C.objects.get(cid="c3"); stale.note = "other"; stale.save()
for o in fresh: o.n = 9
try:
    C.objects.bulk_update(fresh, ["n"], chunk_size=2)
    p(False, "conflict expected")
except dynorm.BatchIncomplete as e:
    vs = [(raw(f"c{i}")["n"]["N"], raw(f"c{i}")["version"]["N"]) for i in range(5)]
    mem = [o.version for o in fresh]
    p(vs[:2] == [("9","4")]*2 and vs[2][0] == "8" and mem[:2] == [4,4] and mem[2:] == [3,3,3], "bulk_update conflict in chunk 2", f"stored {vs} mem {mem} unprocessed {[o.cid for o in e.unprocessed]}")
T.delete_table()
