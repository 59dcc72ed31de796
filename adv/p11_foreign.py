"""Items of a type no model declares holding a multi-attribute GSI's attributes: results and request counts."""
from common import *
from dynorm import Entity, Index, Table, fields
import dynorm, asyncio

class T11(Table):
    class Meta:
        table_name = "p11"
        gsis = {"ByK": {"pk": {"tenant_id": "S", "region": "S"}, "sk": {"score": "N", "title": "S"}}}
class Item(Entity):
    tenant_id = fields.String()
    item_id = fields.String()
    region = fields.String(null=True)
    score = fields.Number(null=True)
    title = fields.String(null=True)
    class Meta:
        table = T11
        entity_type = "item"
        pk = "T#{tenant_id}"
        sk = "I#{item_id}"
        indexes = {"by_k": Index("ByK", pk=("tenant_id", "region"), sk=("score", "title"))}
T11.create_table(wait=True)
for k in range(60):
    backend.call("PutItem", {"TableName": T11.table_name(), "Item": {"PK": {"S": "T#t"}, "SK": {"S": f"G#{k}"}, "entityType": {"S": "ghost"},
        "tenant_id": {"S": "t"}, "region": {"S": "eu"}, "score": {"N": "-1"}, "title": {"S": f"g{k:02d}"}}})
for i in range(5):
    Item.objects.create(tenant_id="t", item_id=f"i{i}", region="eu", score=i, title="x")
qs = Item.objects.filter(tenant_id="t", region="eu")
for label, fn in [("first()", lambda: qs.first()), ("exists()", lambda: qs.exists()), ("[:2]", lambda: list(qs[:2])),
                  ("page(2)", lambda: qs.page(size=2)), ("get(score=0)", lambda: Item.objects.get(tenant_id="t", region="eu", score=0)),
                  ("count()", lambda: qs.count()), ("list", lambda: list(qs))]:
    with dynorm.capture() as cap:
        r = fn()
    n = len(cap.requests)
    print(f"INFO {label}: {n} requests")
    out(n <= 4, f"{label} behind 60 foreign items costs few requests", f"{n} requests")
out([i.item_id for i in qs.first() and [qs.first()]] == ["i0"], "first() is i0")
T11.delete_table()
