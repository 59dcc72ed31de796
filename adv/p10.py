import sys; sys.path.insert(0, "adv")
from common import *
setup()
try:
    LIMIT = 400 * 1024
    # declared part: sku(3+2) name(4+L) stock(5+2)
    L = LIMIT - (3 + 2) - 4 - 7 - 10
    Item.objects.create(sku="zz", name="a")
    o = Item.objects.get(sku="zz"); o.name = "x" * L
    with dynorm.capture() as c:
        try: o.save(); res = "ok"
        except dynorm.ValidationError as e: res = "VE"
        except Exception as e: res = repr(e)[:200]
    r = raw(Item, sku="zz")
    from dynorm import _codec
    print("INFO full size", _codec.item_size(r))
    rep(res in ("ok", "VE") and (res == "VE") == (c.count == 0), "save() of an item at ~400 KB (declared part under, whole item over)", f"got {res} after {c.count} request(s)")
    o2 = Item(sku="zy", name="x" * L)
    with dynorm.capture() as c:
        try: o2.save(); res = "ok"
        except dynorm.ValidationError as e: res = "VE"
        except Exception as e: res = repr(e)[:200]
    rep(res in ("ok", "VE") and (res == "VE") == (c.count == 0), "save() of a new unversioned item at ~400 KB", f"got {res} after {c.count} request(s)")
    with dynorm.capture() as c:
        try: Item.objects.create(sku="zx", name="x" * L); res = "ok"
        except dynorm.ValidationError as e: res = "VE"
        except Exception as e: res = repr(e)[:200]
    print("INFO create same size:", res, c.count)
    with dynorm.capture() as c:
        try: Item.objects.filter(sku="zz").update(name="y" * L); res = "ok"
        except dynorm.ValidationError as e: res = "VE"
        except Exception as e: res = repr(e)[:200]
    rep(res in ("ok", "VE") and (res == "VE") == (c.count == 0), "update() to ~400 KB", f"got {res} after {c.count} request(s)")
finally:
    teardown()
