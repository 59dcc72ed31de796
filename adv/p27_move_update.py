from common import *
exec(open("p3_versions.py").read().split("Rolls.create_table(wait=True)")[0].split("from common import *")[1])
import asyncio
from dynorm import F
Rolls.create_table(wait=True)
def put(version, rid, size, note):
    backend.call("PutItem", {"TableName": Rolls.table_name(), "Item": {"PK": {"S": f"{version}#R#{rid}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
          "roll_id": {"S": rid}, "maker": {"S": "m"}, "size": {"N": str(size)}, "note": {"S": note}, "extra": {"S": "keep"}}})
def idx():
    return sorted((i["PK"]["S"], i["size"]["N"]) for i in raw_scan(Rolls, "ByMaker"))
put("v2", "a", 1, "n"); put("v2", "b", 2, "n"); put("v2", "c", 3, "n"); put("v2", "d", 4, "n")
objs = {o.roll_id: o for o in Roll.objects.filter(maker="m")}
objs["a"].update(size=9)
objs["b"].size = 8; objs["b"].save(update_fields=["size"])
objs["c"].update(size=F("size") + 10)
o = Roll.objects.filter(maker="m").only("note").get(size=4)
o.size = 7; o.save(update_fields=["size"])
asyncio.run(Roll.objects.filter(maker="m", size=9).first().adelete()) if hasattr(Roll, "adelete") else None
exp = [("v3#R#b", "8"), ("v3#R#c", "13"), ("v3#R#d", "7")]
got = idx()
out(got == exp, "updates of index attributes on instances read at v2 move them", f"expected {exp} got {got}")
extras = all("extra" in i for i in raw_scan(Rolls))
out(extras, "undeclared attribute kept through the moves")
Rolls.delete_table()
