import sys, math, decimal, datetime as dt; sys.path.insert(0, "adv")
from common import *
setup()
def zero_req(what, fn):
    with dynorm.capture() as c:
        try:
            fn(); res = "accepted"
        except dynorm.ValidationError as e:
            res = "VE"
        except Exception as e:
            res = repr(e)[:160]
    rep(res == "VE" and c.count == 0, what, f"expected ValidationError before any request, got {res}, {c.count} requests")
try:
    # only() + save(update_fields=[field not read])
    Item.objects.create(sku="o1", name="n", warehouse="north", stock=5)
    o = Item.objects.only("sku", "name").get(sku="o1")
    o.name = "n2"
    try: o.save(update_fields=["name", "warehouse"]); res = "ok"
    except Exception as e: res = repr(e)[:150]
    r = raw(Item, sku="o1")
    rep(r.get("warehouse") == {"S": "north"} and "GSI1PK" in r, "only() then save(update_fields) naming a field not read", f"{res}; stored warehouse {r.get('warehouse')} GSI1PK {r.get('GSI1PK')}")
    o = Item.objects.only("sku", "name").get(sku="o1")
    try: w = o.warehouse; res = repr(w)
    except Exception as e: res = repr(e)
    print("deferred access:", res)
    o = Item.objects.only("sku").get(sku="o1")
    try: o.save(update_fields=["stock"]); res = "ok"
    except Exception as e: res = repr(e)[:150]
    r = raw(Item, sku="o1")
    rep(r.get("stock") == {"N": "5"}, "only() then save(update_fields=[unread int w/ default])", f"{res}; stored stock {r.get('stock')}")

    Item.objects.create(sku="v1", name="n", stock=1)
    v = Item.objects.get(sku="v1")
    nan = float("nan")
    zero_req("F + nan", lambda: v.update(stock=F("stock") + nan))
    zero_req("F + 1e200", lambda: v.update(stock=F("stock") + decimal.Decimal("1E+200")))
    zero_req("F + 42 digits", lambda: v.update(stock=F("stock") + decimal.Decimal("1." + "1"*41)))
    zero_req("if_not_exists(nan)", lambda: v.update(stock=F("stock").if_not_exists(nan)))
    zero_req("if_not_exists(nan)+1", lambda: v.update(stock=F("stock").if_not_exists(nan) + 1))
    zero_req("append [inf]", lambda: v.update(hist=F("hist").append([float("inf")])))
    zero_req("append [lone surrogate]", lambda: v.update(hist=F("hist").append(["\ud800"])))
    zero_req("if_not_exists list nan", lambda: v.update(hist=F("hist").if_not_exists([nan])))
    zero_req("add set lone surrogate", lambda: v.update(tags=F("tags").add({"\udc00"})))
    zero_req("add set empty", lambda: v.update(tags=F("tags").add(set())))
    zero_req("discard set surrogate", lambda: v.update(tags=F("tags").discard({"\udc00"})))
    zero_req("F of other field + nan", lambda: v.update(stock=F("stock") + F("stock") + nan) )
    zero_req("hist map colliding keys", lambda: v.update(hist=[{1: "a", "1": "b"}]))
    zero_req("hist deep nesting 40", lambda: v.update(hist=eval("["*40 + "]"*40)))
    zero_req("hist nesting 3000", lambda: v.update(hist=eval("["*90 + "]"*90)))
    deep = []; cur = deep
    for _ in range(3000): n = []; cur.append(n); cur = n
    zero_req("hist nesting 3000 built", lambda: v.update(hist=deep))
    zero_req("queryset update nan", lambda: Item.objects.filter(sku="v1").update(stock=nan))
    zero_req("condition Q nan", lambda: v.update(stock=2, condition=Q(stock__gte=nan)))
    zero_req("condition Q lone surrogate", lambda: v.update(stock=2, condition=Q(name="\ud800")))
    zero_req("filter in nan", lambda: list(Item.objects.filter(sku="v1", stock__in=[1, nan])))
    zero_req("filter between inf", lambda: list(Item.objects.filter(sku="v1", stock__range=(1, float("inf")))))
    def txn():
        with dynorm.transaction() as tx:
            tx.update(v, stock=F("stock") + nan)
    zero_req("transaction update F nan", txn)
    def txc():
        with dynorm.transaction() as tx:
            tx.check(v, Q(stock=nan)); tx.update(v, stock=3)
    zero_req("transaction check nan", txc)
    zero_req("bulk_create nan in list", lambda: Item.objects.bulk_create([Item(sku="bb", hist=[{"a": [nan]}])]))
    zero_req("Integer 1.5", lambda: Item.objects.create(sku="i1", stock=1.5))
    zero_req("Integer True", lambda: Item.objects.create(sku="i2", stock=True))
    zero_req("Integer 10**38+1", lambda: Item.objects.create(sku="i3", stock=10**38 + 1))
    zero_req("set nan via hist set", lambda: Item.objects.create(sku="i4", hist=[{nan}]))
    zero_req("map key surrogate", lambda: Item.objects.create(sku="i5", hist=[{"\ud800": 1}]))
    zero_req("map empty key", lambda: Item.objects.create(sku="i6", hist=[{"": 1}]))
    zero_req("set of 0.1 and Decimal 0.1 in list", lambda: Item.objects.create(sku="i7", hist=[{0.1, decimal.Decimal("0.1")}]))
    zero_req("set 1 and 1.0 and True", lambda: Item.objects.create(sku="i8", hist=[{1, decimal.Decimal("1.0")}]))
    zero_req("nested dict key colliding True/1", lambda: Item.objects.create(sku="i9", hist=[{True: 1, "True": 2}]))
    zero_req("key with surrogate", lambda: Item.objects.create(sku="\ud800"))
    zero_req("empty key", lambda: Item.objects.create(sku=""))
    zero_req("gsi key long", lambda: Item.objects.create(sku="g", warehouse="%" * 700))
    zero_req("gsi key long via update", lambda: v.update(warehouse="#" * 700))
    zero_req("gsi key long via qs update", lambda: Item.objects.filter(sku="v1").update(warehouse="#" * 700))
    zero_req("gsi sk long via sku", lambda: Item.objects.create(sku="\u00e9" * 520, warehouse="x"))
finally:
    teardown()
