from common import *
exec(open("p3_versions.py").read().split("Rolls.create_table(wait=True)")[0].split("from common import *")[1])
Rolls.create_table(wait=True)
def put(version, rid, size, note):
    backend.call("PutItem", {"TableName": Rolls.table_name(), "Item": {"PK": {"S": f"{version}#R#{rid}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
          "roll_id": {"S": rid}, "maker": {"S": "m"}, "size": {"N": str(size)}, "note": {"S": note}, "extra": {"S": "undeclared"}}})
def dump():
    return sorted((i["PK"]["S"], i.get("note", {}).get("S"), i.get("size", {}).get("N"), "extra" in i) for i in raw_scan(Rolls))
put("v2", "r3", 3, "old"); put("v2", "r4", 4, "old")
objs = list(Roll.objects.filter(maker="m"))
print("INFO read:", [(o.roll_id, o._state.fallback) for o in objs])
for o in objs: o.note = "bulk"
try:
    n = Roll.objects.bulk_update(objs, ["note"])
    d = dump()
    ok = d == [("v3#R#r3", "bulk", "3", True), ("v3#R#r4", "bulk", "4", True)]
    out(ok, "bulk_update of instances read at v2 through the multi GSI", f"n={n} table={d}")
except Exception as e:
    out(True, f"bulk_update refused: {type(e).__name__}: {e}"); print("INFO", dump())
Rolls.delete_table(); Rolls.create_table(wait=True)
put("v2", "r3", 3, "old"); put("v2", "r4", 4, "old")
objs = list(Roll.objects.filter(maker="m"))
try:
    n = Roll.objects.bulk_delete(objs)
    d = dump()
    out(d == [] , "bulk_delete of instances read at v2", f"n={n} table={d}")
except Exception as e:
    out(True, f"bulk_delete refused: {type(e).__name__}: {e}"); print("INFO", dump())
Rolls.delete_table(); Rolls.create_table(wait=True)
put("v2", "r3", 3, "old")
o = Roll.objects.filter(maker="m").first()
try:
    o.refresh_from_db()
    out(o.note == "old" and o._state.fallback == "v2", "refresh_from_db of a fallback instance", f"note={o.note} fb={o._state.fallback}")
except Exception as e:
    out(False, "refresh_from_db of a fallback instance", f"{type(e).__name__}: {e}")
o = Roll.objects.filter(maker="m").first()
try:
    with dynorm.transaction() as t:
        t.update(o, note="tx") if hasattr(t, "update") else t.save(o)
    out(dump() == [("v3#R#r3", "tx" if hasattr(t, "update") else "old", "3", True)], "transaction on a fallback instance", f"{dump()}")
except Exception as e:
    out(False, "transaction on fallback", f"{type(e).__name__}: {e}")
Rolls.delete_table()
