from common import *
exec(open("p3_versions.py").read().split("Rolls.create_table(wait=True)")[0].split("from common import *")[1])
import asyncio
Rolls.create_table(wait=True)
def put(version, rid, size, note):
    backend.call("PutItem", {"TableName": Rolls.table_name(), "Item": {"PK": {"S": f"{version}#R#{rid}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
          "roll_id": {"S": rid}, "maker": {"S": "m"}, "size": {"N": str(size)}, "note": {"S": note}}})
put("v2", "r3", 3, "old-only"); put("v3", "r1", 1, "cur"); put("v2", "r1", 1, "stale")
def run(label, fn, exp):
    try:
        got = fn()
    except Exception as e:
        got = f"{type(e).__name__}"
    out(got == exp, label, f"expected {exp}, got {got}")
run("filter(maker, size__gte=2)", lambda: [r.roll_id for r in Roll.objects.filter(maker="m", size__gte=2)], ["r3"])
run("filter(maker, size__gte=2, roll_id=r3)", lambda: [r.roll_id for r in Roll.objects.filter(maker="m", size__gte=2, roll_id="r3")], ["r3"])
run("filter(roll_id=r3, size__gte=2)", lambda: [r.roll_id for r in Roll.objects.filter(roll_id="r3", size__gte=2)], ["r3"])
run("get(roll_id=r3, size__gte=2)", lambda: Roll.objects.get(roll_id="r3", size__gte=2).roll_id, "r3")
run("get(roll_id=r3)", lambda: Roll.objects.get(roll_id="r3").roll_id, "r3")
run("get(roll_id=r3, size=3)", lambda: Roll.objects.get(roll_id="r3", size=3).roll_id, "r3")
run("filter(roll_id=r3, size=3) list", lambda: [r.roll_id for r in Roll.objects.filter(roll_id="r3", size=3)], ["r3"])
run("filter(roll_id=r3) list", lambda: [r.roll_id for r in Roll.objects.filter(roll_id="r3")], ["r3"])
run("filter(roll_id=r3).count()", lambda: Roll.objects.filter(roll_id="r3").count(), 1)
run("filter(roll_id=r3).exists()", lambda: Roll.objects.filter(roll_id="r3").exists(), True)
run("get(maker=m, size=1) with two copies", lambda: Roll.objects.get(maker="m", size=1).note, "cur")
run("filter(roll_id=r3, maker=m).exclude(note='x')", lambda: [r.roll_id for r in Roll.objects.filter(roll_id="r3", maker="m").exclude(note="x")], ["r3"])
Rolls.delete_table()
