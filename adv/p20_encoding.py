"""An encoding rollout (percent v1 -> ordered v2) with read_versions, read through a multi-attribute GSI."""
from common import *
from dynorm import Entity, Index, Table, fields
import dynorm
class T20(Table):
    class Meta:
        table_name = "p20"
        key_encoding = "ordered"
        gsis = {"ByMaker": {"pk": {"maker": "S"}, "sk": {"size": "N"}}}
class Roll(Entity):
    roll_id = fields.String()
    maker = fields.String(null=True)
    size = fields.Integer(null=True)
    class Meta:
        table = T20
        entity_type = "ROLL"
        key_version = "v2"
        read_versions = ["v2", "v1"]
        pk = "{version}#R#{roll_id}"
        sk = "METADATA"
        indexes = {"by_maker": Index("ByMaker", pk=("maker",), sk=("size",))}
T20.create_table(wait=True)
# v1 items written by the percent-encoded app: "a#b" -> "a%23b"
for rid, key in [("plain", "plain"), ("a#b", "a%23b"), ("x y", "x y")]:
    backend.call("PutItem", {"TableName": T20.table_name(), "Item": {"PK": {"S": f"v1#R#{key}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
        "roll_id": {"S": rid}, "maker": {"S": "m"}, "size": {"N": "1"}}})
got = sorted(r.roll_id for r in Roll.objects.filter(maker="m"))
out(got == ["a#b", "plain", "x y"], "multi-GSI read during percent->ordered rollout", f"got {got}")
for rid in ["plain", "a#b", "x y"]:
    try:
        Roll.objects.get(roll_id=rid); print(f"INFO get({rid!r}) found")
    except Roll.DoesNotExist:
        print(f"INFO get({rid!r}) DoesNotExist")
T20.delete_table()
