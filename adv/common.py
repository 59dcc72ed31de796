import os, sys, asyncio, time
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dynorm
from dynorm import Entity, Table, fields, F, Q
dynorm.configure(endpoint=os.environ.get("DYNORM_ENDPOINT", "http://127.0.0.1:8714"), table_prefix=f"adv14-{os.getpid()}-")

class T(Table):
    class Meta:
        table_name = "advt"
        gsis = {"GSI1": ("GSI1PK", "GSI1SK")}

class Ctr(Entity):
    name = fields.String()
    n = fields.Integer(default=0)
    class Meta:
        table = T
        entity_type = "CTR"
        pk = "{version}#CTR#{name}"
        sk = "METADATA"

class VCtr(Entity):
    name = fields.String()
    n = fields.Integer(default=0)
    version = fields.Version()
    class Meta:
        table = T
        entity_type = "VCTR"
        pk = "{version}#VCTR#{name}"
        sk = "METADATA"

class Item(Entity):
    grp = fields.String()
    iid = fields.String()
    val = fields.String(null=True)
    num = fields.Decimal(null=True)
    big = fields.String(null=True)
    class Meta:
        table = T
        entity_type = "ITEM"
        pk = "{version}#GRP#{grp}"
        sk = "ITEM#{iid}"

def raw_all():
    items = []
    resp = dynorm.backend.call("Scan", {"TableName": T.table_name()})
    items += resp["Items"]
    while "LastEvaluatedKey" in resp:
        resp = dynorm.backend.call("Scan", {"TableName": T.table_name(), "ExclusiveStartKey": resp["LastEvaluatedKey"]})
        items += resp["Items"]
    return items

def setup():
    T.create_table(wait=True)

def teardown():
    try: T.delete_table(wait=False)
    except Exception: pass

def report(ok, what, detail=""):
    print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" ({detail})"), flush=True)

class LagProbe:
    def __init__(self, interval=0.005):
        self.interval=interval; self.max=0.0
    async def run(self):
        loop=asyncio.get_running_loop()
        try:
            while True:
                t=loop.time(); await asyncio.sleep(self.interval); lag=loop.time()-t-self.interval
                self.max=max(self.max,lag)
        except asyncio.CancelledError:
            pass
