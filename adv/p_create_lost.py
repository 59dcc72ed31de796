import os, sys, uuid, urllib.request
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8612")
sys.path.insert(0, ".")
import botocore.exceptions
import dynorm
from dynorm import Entity, Table, fields, backend
from tests.faults import Hook
def p(ok, what, detail=""):
    print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" ({detail})"))
sfx = uuid.uuid4().hex[:6]
class T(Table):
    class Meta:
        table_name = f"advc-{sfx}"
        ttl_attribute = "expires"
class X(Entity):
    xid = fields.String(); expires = fields.TTL(null=True)
    class Meta:
        table = T; pk = "X#{xid}"; sk = "X"
state = {"n": 0}
def lost(request, **kw):
    state["n"] += 1
    if state["n"] == 1:
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        urllib.request.urlopen(urllib.request.Request(request.url, data=request.body, headers=headers), timeout=10).read()
        raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)
for exist_ok in (False, True):
    state["n"] = 0
    T.Meta.table_name = f"advc-{uuid.uuid4().hex[:6]}"
    T._meta.table_name = T.Meta.table_name if hasattr(T, "_meta") else None
    name = T.table_name()
    try:
        with Hook("before-send.dynamodb.CreateTable", lost):
            r = T.create_table(exist_ok=exist_ok)
        ttl = backend.call("DescribeTimeToLive", {"TableName": name})["TimeToLiveDescription"]
        p(ttl.get("TimeToLiveStatus") == "ENABLED" and (r is True), f"create_table(exist_ok={exist_ok}) with a lost CreateTable response",
          f"expected True and TTL enabled, got returned {r}, TTL {ttl.get('TimeToLiveStatus')}")
    except dynorm.DynormError as e:
        exists = name in backend.call("ListTables", {})["TableNames"]
        p(not exists, f"create_table(exist_ok={exist_ok}) with a lost CreateTable response reported failed",
          f"raised {type(e).__name__}: {str(e)[:90]} but table exists={exists}")
    try: T.delete_table()
    except Exception: pass
