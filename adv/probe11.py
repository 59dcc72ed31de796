import os
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
import dynorm
from dynorm import Entity, Table, fields, backend
dynorm.configure(endpoint=os.environ["DYNORM_ENDPOINT"])
class T11(Table):
    class Meta:
        table_name = "adv11-t11"
class Mb(Entity):
    a = fields.String()
    m = fields.String()
    class Meta:
        table = T11; entity_type = "MB"
        pk = "A#{a}"; sk = "M#{m}"
try: T11.delete_table()
except Exception: pass
T11.create_table()
tn = T11.table_name()
for m in "ab": Mb.objects.create(a="1", m=m)
backend.call("PutItem", {"TableName": tn, "Item": {"PK": {"S": "A#1"}, "SK": {"S": "M#zzz"}, "entityType": {"S": "ALIEN"}, "payload": {"S": "keep me"}}})
backend.call("PutItem", {"TableName": tn, "Item": {"PK": {"S": "A#1"}, "SK": {"S": "M#c"}, "payload": {"S": "no type"}}})
print("INFO list:", [o.m for o in Mb.objects.filter(a="1")])
print("INFO count:", Mb.objects.filter(a="1").count())
print("INFO values_list:", Mb.objects.filter(a="1").values_list("m", flat=True))
n = Mb.objects.filter(a="1").delete()
left = [(i["SK"]["S"], i.get("entityType", {}).get("S")) for i in backend.call("Query", {"TableName": tn, "KeyConditionExpression": "PK = :p", "ExpressionAttributeValues": {":p": {"S": "A#1"}}})["Items"]]
ok = ("M#zzz", "ALIEN") in left
print(("SAFE: " if ok else "BUG: ") + f"qs.delete() must not delete another type's item under the prefix (deleted {n}, left {left})")
