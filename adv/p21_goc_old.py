from common import *
exec(open("p3_versions.py").read().split("Rolls.create_table(wait=True)")[0].split("from common import *")[1])
Rolls.create_table(wait=True)
def put(version, rid, size, note):
    backend.call("PutItem", {"TableName": Rolls.table_name(), "Item": {"PK": {"S": f"{version}#R#{rid}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
          "roll_id": {"S": rid}, "maker": {"S": "m"}, "size": {"N": str(size)}, "note": {"S": note}}})
put("v2", "r3", 4, "precious")
for fn in ("get_or_create", "update_or_create"):
    try:
        obj, created = getattr(Roll.objects, fn)(roll_id="r3", size=3, defaults={"maker": "m"})
        keys = sorted((i["PK"]["S"], i.get("note", {}).get("S")) for i in raw_scan(Rolls))
        g = Roll.objects.get(roll_id="r3")
        out(False, f"{fn}(roll_id=r3, size=3) while r3 exists at v2 with size 4", f"created={created}; table {keys}; get(roll_id=r3).note={g.note!r}")
    except Exception as e:
        out(True, f"{fn} raised {type(e).__name__}: {str(e)[:120]}")
    Rolls.delete_table(); Rolls.create_table(wait=True); put("v2", "r3", 4, "precious")
Rolls.delete_table()
Rolls.create_table(wait=True); put("v2", "r3", 4, "precious")
try:
    Roll.objects.create(roll_id="r3", size=1)
    out(False, "create(roll_id=r3) while r3 exists at v2 (read_versions)", f"created; get().note={Roll.objects.get(roll_id='r3').note!r}")
except Exception as e:
    out(True, f"create raised {type(e).__name__}")
Rolls.delete_table()
