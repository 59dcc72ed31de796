import sys; sys.path.insert(0, "adv")
from common import *
setup()
try:
    Item.objects.create(sku="t", name="x", stock=0)
    with lose("UpdateItem", between=lambda: Item.objects.filter(sku="t").update(name="other")) as f:
        try: r = Item.objects.filter(sku="t").update(stock=F("stock") + 1); res = f"ok stock={r.stock}"
        except Exception as e: res = repr(e)[:200]
    s = raw(Item, sku="t")["stock"]["N"]
    rep(s == "1" or not res.startswith("ok"), "unversioned update(F+1) lost, another dynorm writer in between", f"expected stored 1 (or an error), got {res}, stored {s}")
    o = Item.objects.get(sku="t")
    with lose("UpdateItem", between=lambda: Item.objects.filter(sku="t").update(name="other2")) as f:
        try: o.update(hist=F("hist").if_not_exists([]).append(["x"]) if False else F("hist").if_not_exists(["x"])); res = "ok"
        except Exception as e: res = repr(e)[:200]
    o = Item.objects.get(sku="t")
    with lose("UpdateItem", between=lambda: Item.objects.filter(sku="t").update(name="other3")) as f:
        try: o.update(hist=F("hist").append(["y"])); res = "ok"
        except Exception as e: res = repr(e)[:200]
    h = raw(Item, sku="t")["hist"]
    rep(len(h["L"]) == 2 or res != "ok", "unversioned append lost + interleaved writer", f"got {res}, stored {h}")
    # interleaved writer being a raw boto3 writer that does not touch the token -> safe
    Item.objects.create(sku="t2", stock=0)
    def rawother():
        backend.call("UpdateItem", {"TableName": T.table_name(), "Key": Item._meta.primary_key({"sku": "t2"}),
            "UpdateExpression": "SET #n = :n", "ExpressionAttributeNames": {"#n": "name"}, "ExpressionAttributeValues": {":n": {"S": "o"}}})
    with lose("UpdateItem", between=rawother):
        Item.objects.filter(sku="t2").update(stock=F("stock") + 1)
    rep(raw(Item, sku="t2")["stock"]["N"] == "1", "unversioned F+1 lost + raw writer in between", raw(Item, sku="t2")["stock"])
finally:
    teardown()
