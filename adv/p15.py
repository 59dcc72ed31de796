import sys; sys.path.insert(0, "adv")
from common import *
setup()
try:
    Item.objects.create(sku="s", name="orig")
    o = Item.objects.get(sku="s"); o.name = "mine"
    with lose("UpdateItem", between=lambda: Item.objects.filter(sku="s").update(name="theirs")):
        try: o.save(); res = "ok"
        except Exception as e: res = repr(e)[:150]
    n = raw(Item, sku="s")["name"]
    rep(n == {"S": "theirs"} or res != "ok", "unversioned save lost; a later acknowledged write is overwritten by the retry", f"{res}, stored {n}")
    o = Item.objects.get(sku="s"); o.name = "mine2"
    with lose("UpdateItem", between=lambda: Item.objects.filter(sku="s").update(name="theirs2")):
        try: o.save(update_fields=["name"]); res = "ok"
        except Exception as e: res = repr(e)[:150]
    n = raw(Item, sku="s")["name"]
    rep(n == {"S": "theirs2"} or res != "ok", "unversioned save(update_fields) lost + later write", f"{res}, stored {n}")
finally:
    teardown()
