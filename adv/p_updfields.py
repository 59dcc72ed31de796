import os, sys, uuid, urllib.request
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8612")
sys.path.insert(0, ".")
import botocore.exceptions
import dynorm
from dynorm import Entity, Table, fields, backend, capture
from tests.faults import Hook
def p(ok, what, detail=""):
    print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" ({detail})"))
class T(Table):
    class Meta: table_name = f"advu-{uuid.uuid4().hex[:6]}"
class C(Entity):
    cid = fields.String(); n = fields.Integer(default=0); note = fields.String(null=True); version = fields.Version()
    class Meta:
        table = T; pk = "C#{cid}"; sk = "C"
T.create_table()
state = {"n": 0}
def lost(request, **kw):
    state["n"] += 1
    if state["n"] == 1:
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        urllib.request.urlopen(urllib.request.Request(request.url, data=request.body, headers=headers), timeout=10).read()
        raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)
def raw(cid): return backend.call("GetItem", {"TableName": T.table_name(), "Key": {"PK": {"S": f"C#{cid}"}, "SK": {"S": "C"}}, "ConsistentRead": True})["Item"]
for op, ev in [("save(update_fields)", "UpdateItem"), ("save()", "UpdateItem"), ("delete()", "DeleteItem")]:
    c = C(cid=op); c.save()
    state["n"] = 0
    try:
        with Hook(f"before-send.dynamodb.{ev}", lost):
            c.note = "x"
            if op == "save(update_fields)": c.save(update_fields=["note"])
            elif op == "save()": c.save()
            else: c.delete()
        if op == "delete()":
            try: raw(op); p(False, op + " lost response", "still there")
            except KeyError: p(True, op + " lost response")
        else:
            r = raw(op); p(r["note"]["S"] == "x" and r["version"]["N"] == "2" and c.version == 2, f"{op} lost response", f"{r} mem v{c.version}")
    except dynorm.DynormError as e:
        p(False, f"{op} with lost response reported failed", f"{type(e).__name__}: {str(e)[:120]}")
# qs.delete lost response count
for i in range(30): C(cid=f"d{i}").save()
state["n"] = 0
with Hook("before-send.dynamodb.BatchWriteItem", lost):
    try:
        n = C.objects.scan().filter(cid__begins_with="d").delete()
        left = [x for x in C.objects.scan() if x.cid.startswith("d")]
        p(n == 30 and not left, "scan().delete() with lost BatchWriteItem response", f"{n} left {len(left)}")
    except dynorm.DynormError as e:
        left = [x for x in C.objects.scan() if x.cid.startswith("d")]
        print("   delete lost:", type(e).__name__, str(e)[:150], "left", len(left))
T.delete_table()
