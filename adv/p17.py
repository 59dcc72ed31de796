import sys; sys.path.insert(0, "adv")
from common import *
class Ref(Entity):
    rid = fields.String()
    item = fields.Reference(Item)
    class Meta:
        table = T
        entity_type = "REF"
        pk = "{version}#REF#{rid}"
        sk = "M"
setup()
try:
    Item.objects.bulk_create([Item(sku=f"r{i}", name="n", warehouse="w") for i in range(4)])
    backend.call("UpdateItem", {"TableName": T.table_name(), "Key": Item._meta.primary_key({"sku": "r2"}),
        "UpdateExpression": "SET stock = :v", "ExpressionAttributeValues": {":v": {"S": "many"}}})
    Ref.objects.bulk_create([Ref(rid=f"f{i}", item=f"r{i}") for i in range(4)])
    def chk(what, fn, skipfn=None):
        try:
            fn(); res = "no error"
        except dynorm.UnreadableItems as e:
            res = "UI" if e.errors and "stock" in str(e) and e.errors[0].attribute == "stock" else f"UI without details: {e}"
        except Exception as e:
            res = repr(e)[:150]
        rep(res == "UI", f"{what} raises UnreadableItems naming attribute", res)
    chk("get", lambda: Item.objects.get(sku="r2"))
    chk("filter list", lambda: list(Item.objects.filter(warehouse="w")))
    chk("in_bulk", lambda: Item.objects.in_bulk(["r1", "r2"]))
    chk("prefetch related", lambda: [r.related("item") for r in Ref.objects.filter(rid="f2").prefetch("item")])
    chk("related", lambda: Ref.objects.get(rid="f2").related("item"))
    chk("refresh_from_db", lambda: Item.objects.only("sku").get(sku="r2").refresh_from_db())
    chk("deferred load", lambda: Item.objects.only("sku", "name").get(sku="r2").stock)
    chk("get_or_create", lambda: Item.objects.get_or_create(sku="r2"))
    chk("update_or_create", lambda: Item.objects.update_or_create(sku="r2", defaults={"name": "x"}))
    try:
        got = list(Item.objects.filter(warehouse="w").skip_unreadable()); res = sorted(i.sku for i in got)
    except Exception as e: res = repr(e)[:150]
    rep(res == ["r0", "r1", "r3"], "skip_unreadable list", res)
    try:
        got = Item.objects.skip_unreadable().in_bulk(["r1", "r2"]); res = sorted(got)
    except Exception as e: res = repr(e)[:150]
    rep(res == ["r1"], "skip_unreadable in_bulk", res)
finally:
    teardown()
