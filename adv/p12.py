import sys; sys.path.insert(0, "adv")
from common import *
setup()
try:
    Item.objects.create(sku="u", name="x", stock=0)
    def poison(sku, attr="name", av={"N": "5"}):
        backend.call("UpdateItem", {"TableName": T.table_name(), "Key": Item._meta.primary_key({"sku": sku}),
            "UpdateExpression": "SET #a = :v", "ExpressionAttributeNames": {"#a": attr}, "ExpressionAttributeValues": {":v": av}})
    poison("u")
    try: Item.objects.filter(sku="u").update(stock=F("stock") + 1); res = "ok"
    except Exception as e: res = repr(e)[:200]
    s = raw(Item, sku="u")["stock"]["N"]
    rep(res == "ok" or s == "0", "update() on an item with another attribute stored with the wrong type", f"write applied (stock {s}) but reported {res}")
    try: Item.objects.filter(sku="u").update(name="fixed"); res = "ok"
    except Exception as e: res = repr(e)[:200]
    rep(res == "ok", "update() that repairs the bad attribute", res)
    poison("u")
    try: Item.objects.filter(sku="u").update(stock=F("stock") + 1, condition=Q(stock__gte=100)); res = "ok"
    except dynorm.ConditionFailed as e: res = "ConditionFailed"
    except Exception as e: res = repr(e)[:200]
    rep(res == "ConditionFailed", "failed condition on an unreadable item reports ConditionFailed", res)
    try: n = Item.objects.filter(sku="u").delete() if hasattr(Item.objects.filter(sku="u"), "delete") else None; res = "ok"
    except Exception as e: res = repr(e)[:200]
    print("INFO qs delete:", res)
finally:
    teardown()
