"""Key-version copies and read_versions through a multi-attribute GSI and GetItem-with-checks."""
from common import *
from dynorm import Entity, Index, Table, fields, InvalidQuery
import dynorm, asyncio

class Rolls(Table):
    class Meta:
        table_name = "p3"
        gsis = {"ByMaker": {"pk": {"maker": "S"}, "sk": {"size": "N"}}}

class Roll(Entity):
    roll_id = fields.String()
    maker = fields.String(null=True)
    size = fields.Integer(null=True)
    note = fields.String(null=True)
    class Meta:
        table = Rolls
        entity_type = "ROLL"
        key_version = "v3"
        read_versions = ["v3", "v2"]
        pk = "{version}#R#{roll_id}"
        sk = "METADATA"
        indexes = {"by_maker": Index("ByMaker", pk=("maker",), sk=("size",))}

Rolls.create_table(wait=True)
def put(version, rid, size, note, maker="m"):
    it = {"PK": {"S": f"{version}#R#{rid}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
          "roll_id": {"S": rid}, "note": {"S": note}}
    if maker: it["maker"] = {"S": maker}
    if size is not None: it["size"] = {"N": str(size)}
    backend.call("PutItem", {"TableName": Rolls.table_name(), "Item": it})
def raw(version, rid):
    return backend.call("GetItem", {"TableName": Rolls.table_name(), "Key": {"PK": {"S": f"{version}#R#{rid}"}, "SK": {"S": "METADATA"}}, "ConsistentRead": True}).get("Item")


class VRoll(Entity):
    roll_id = fields.String()
    maker = fields.String(null=True)
    size = fields.Integer(null=True)
    note = fields.String(null=True)
    version = fields.Version()
    class Meta:
        table = Rolls
        entity_type = "VROLL"
        key_version = "v3"
        read_versions = ["v3", "v2"]
        pk = "{version}#V#{roll_id}"
        sk = "METADATA"
        indexes = {"by_maker": Index("ByMaker", pk=("maker",), sk=("size",))}

n = [0]
def fresh():
    n[0] += 1; rid = f"r{n[0]}"
    put("v3", rid, 5, "current"); put("v2", rid, 2, "stale")
    return rid
rid = fresh()
try:
    r = Roll.objects.get(roll_id=rid, size=2)
    out(False, "get(roll_id, size=<value only the shadowed v2 copy holds>)", f"expected DoesNotExist, got note={r.note!r} fallback={r._state.fallback}")
    r.note = "overwrite"; r.save()
    cur = raw("v3", rid)
    out(cur["note"]["S"] == "current" and cur["size"]["N"] == "5", "save() of that instance keeps the current item", f"v3 item now size={cur['size']} note={cur['note']}")
except Roll.DoesNotExist:
    out(True, "get(roll_id, size=stale) -> DoesNotExist")
rid = fresh()
lst = [x.note for x in Roll.objects.filter(roll_id=rid, size=2)]
out(lst == [], "filter(roll_id, size=stale) iteration", f"expected [], got {lst}")
out(Roll.objects.filter(roll_id=rid, size=2).count() == 0, "count")
out(Roll.objects.filter(roll_id=rid, size=2).exists() is False, "exists")
l2 = [x.note for x in Roll.objects.filter(maker="m", size=2)]
out(l2 == [], "index filter(maker, size=2) drops shadowed stale copy", f"got {l2}")
rid = fresh()
try:
    obj, created = Roll.objects.get_or_create(roll_id=rid, size=2, defaults={"note": "new"})
    out(False, "get_or_create(roll_id, size=stale)", f"expected an error (the item under the key differs), got created={created} note={obj.note!r} fallback={obj._state.fallback}")
except Exception as ex:
    out(True, f"get_or_create(roll_id=r1,size=2) raised {type(ex).__name__}: {ex}")
rid = fresh()
try:
    r = asyncio.run(Roll.objects.aget(roll_id=rid, size=2))
    out(False, "aget(roll_id, size=stale)", f"expected DoesNotExist, got note={r.note!r}")
except Roll.DoesNotExist:
    out(True, "aget stale -> DoesNotExist")
# versioned
def vput(version, rid, size, note, ver):
    backend.call("PutItem", {"TableName": Rolls.table_name(), "Item": {"PK": {"S": f"{version}#V#{rid}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "VROLL"},
          "roll_id": {"S": rid}, "note": {"S": note}, "maker": {"S": "m"}, "size": {"N": str(size)}, "version": {"N": str(ver)}}})
vput("v3", "x1", 5, "current", 4); vput("v2", "x1", 2, "stale", 1)
try:
    r = VRoll.objects.get(roll_id="x1", size=2)
    out(False, "versioned get(roll_id, size=stale)", f"expected DoesNotExist, got note={r.note!r} version={r.version}")
    r.note = "overwrite"
    try:
        r.save(); cur = backend.call("GetItem", {"TableName": Rolls.table_name(), "Key": {"PK": {"S": "v3#V#x1"}, "SK": {"S": "METADATA"}}})["Item"]
        out(False, "versioned save of stale copy", f"v3 now {cur['note']} {cur['size']} {cur['version']}")
    except Exception as e:
        out(True, f"versioned save of stale copy raised {type(e).__name__}")
except VRoll.DoesNotExist:
    out(True, "versioned get stale -> DoesNotExist")
Rolls.delete_table()
