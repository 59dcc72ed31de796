from common import *
exec(open("p3_versions.py").read().split("Rolls.create_table(wait=True)")[0].split("from common import *")[1])
Rolls.create_table(wait=True)
def put(version, rid, size, note):
    backend.call("PutItem", {"TableName": Rolls.table_name(), "Item": {"PK": {"S": f"{version}#R#{rid}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
          "roll_id": {"S": rid}, "maker": {"S": "m"}, "size": {"N": str(size)}, "note": {"S": note}}})
put("v3", "r1", 1, "cur"); put("v2", "r1", 1, "stale"); put("v2", "r2", 2, "old")
qs = Roll.objects.filter(maker="m")
p = qs.explain(count=True)
with dynorm.capture() as cap:
    c = qs.count()
sent = cap.requests[0].params
print("INFO explain(count=True):", {k: v for k, v in p.params.items() if k not in ("TableName",)})
print("INFO sent:", cap.operations, {k: v for k, v in sent.items() if k not in ("TableName",)})
same = {k: v for k, v in p.params.items()} == sent
out(same and c == 2, "explain(count=True) shows the request count() sends", f"explain Select={p.params.get('Select')} vs sent Select={sent.get('Select')} Projection={sent.get('ProjectionExpression')}; count={c}")
Rolls.delete_table()
