import os, urllib.request, threading, uuid
import botocore.exceptions
import dynorm
from dynorm import Entity, Table, fields, Index, F, Q, backend

dynorm.configure(endpoint=os.environ.get("DYNORM_ENDPOINT", "http://127.0.0.1:8719"),
                 table_prefix=f"adv9-{uuid.uuid4().hex[:6]}-")

class T(Table):
    class Meta:
        table_name = "t"
        gsi_count = 1

class Cnt(Entity):
    name = fields.String()
    value = fields.Integer(default=0)
    note = fields.String(null=True)
    version = fields.Version()
    class Meta:
        table = T
        entity_type = "CNT"
        pk = "{version}#CNT#{name}"
        sk = "M"

class Item(Entity):
    sku = fields.String()
    name = fields.String(null=True)
    warehouse = fields.String(null=True)
    stock = fields.Integer(default=0)
    tags = fields.Set(str)
    hist = fields.List(null=True)
    class Meta:
        table = T
        entity_type = "ITEM"
        pk = "{version}#ITEM#{sku}"
        sk = "M"
        indexes = {"by_wh": Index("GSI1", pk="{version}#WH#{warehouse}", sk="ITEM#{sku}")}

class LoseFirst:
    def __init__(self, between=None):
        self.delivered = 0; self.between = between
    def __call__(self, request, **kw):
        if self.delivered == 0:
            self.delivered += 1
            req = urllib.request.Request(request.url, data=request.body, headers=dict(request.headers.items()))
            urllib.request.urlopen(req, timeout=10).read()
            if self.between: self.between()
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

class lose:
    def __init__(self, op, between=None):
        self.op = op; self.f = LoseFirst(between)
    def __enter__(self):
        backend.register_hook(f"before-send.dynamodb.{self.op}", self.f); return self.f
    def __exit__(self, *a):
        backend.unregister_hook(f"before-send.dynamodb.{self.op}", self.f)

def raw(model, **key):
    r = backend.call("GetItem", {"TableName": model._meta.table.table_name(), "ConsistentRead": True,
                                 "Key": model._meta.primary_key(key)})
    return r.get("Item")

def rep(ok, what, detail=""):
    print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" ({detail})"), flush=True)

def setup():
    T.create_table(wait=True)
def teardown():
    T.delete_table(wait=False)
