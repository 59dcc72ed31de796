from common import *
exec(open("p3_versions.py").read().split("Rolls.create_table(wait=True)")[0].split("from common import *")[1])
Rolls.create_table(wait=True)
def put(version, rid, size, note):
    backend.call("PutItem", {"TableName": Rolls.table_name(), "Item": {"PK": {"S": f"{version}#R#{rid}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
          "roll_id": {"S": rid}, "maker": {"S": "m"}, "size": {"N": str(size)}, "note": {"S": note}}})
put("v3", "r1", 5, "current"); put("v2", "r1", 2, "stale")
try:
    obj, created = Roll.objects.update_or_create(roll_id="r1", size=2, defaults={"note": "x"})
    cur = backend.call("GetItem", {"TableName": Rolls.table_name(), "Key": {"PK": {"S": "v3#R#r1"}, "SK": {"S": "METADATA"}}})["Item"]
    out(False, "update_or_create(roll_id=r1, size=2) when the current item has size 5", f"expected AlreadyExists, got created={created}; current item now size={cur['size']} note={cur['note']}")
except Exception as e:
    out(True, f"update_or_create raised {type(e).__name__}: {e}")
# without version copies: does update_or_create(full key + size mismatch) raise?
put("v3", "r2", 5, "current")
try:
    obj, created = Roll.objects.update_or_create(roll_id="r2", size=2, defaults={"note": "x"})
    print("INFO no-copy uoc:", created, obj.size, obj.note)
except Exception as e:
    print(f"INFO no-copy uoc raised {type(e).__name__}: {e}")
Rolls.delete_table()
