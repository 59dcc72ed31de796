import sys; sys.path.insert(0, "adv")
from common import *
import threading
setup()
try:
    # 1. update_with_retry: lost response + concurrent writer in between -> fn applied twice?
    Cnt.objects.create(name="a")
    def other():
        # another writer bumps note with version check via raw call
        backend.call("UpdateItem", {"TableName": T.table_name(), "Key": Cnt._meta.primary_key({"name": "a"}),
            "UpdateExpression": "SET note = :n, version = version + :one", "ExpressionAttributeValues": {":n": {"S": "x"}, ":one": {"N": "1"}}})
    calls = []
    with lose("UpdateItem", between=other):
        try:
            o = Cnt.objects.update_with_retry({"name": "a"}, lambda c: (calls.append(1), setattr(c, "value", c.value + 1)))
            res = "ok"
        except Exception as e:
            res = repr(e)
    v = Cnt.objects.get(name="a").value
    rep(v == 1 or res != "ok", "update_with_retry +1 with lost response and interleaved writer", f"expected value 1 or an error, got value={v} result={res} fn calls={len(calls)}")

    # 2. versioned save(update_fields) of a fresh instance resets version
    Cnt.objects.create(name="b")
    o = Cnt.objects.get(name="b"); o.value = 1; o.save(); o.value = 2; o.save()
    assert raw(Cnt, name="b")["version"] == {"N": "3"}
    fresh = Cnt(name="b", value=9)
    try:
        fresh.save(update_fields=["value"]); res = "ok"
    except Exception as e:
        res = repr(e)
    r = raw(Cnt, name="b")
    rep(r["version"]["N"] != "1", "save(update_fields) of an unread instance of a versioned entity", f"version reset 3 -> {r['version']['N']} unconditionally, result {res}")

    # 3. versioned entity, item stored without a version attribute (raw / older app version)
    backend.call("PutItem", {"TableName": T.table_name(), "Item": {**Cnt._meta.primary_key({"name": "c"}),
        "_type": {"S": "CNT"}, "name": {"S": "c"}, "value": {"N": "5"}, "extra": {"S": "keep"}}})
    try:
        o = Cnt.objects.get(name="c")
        o.value = 6
        o.save(); res = "ok"
    except Exception as e:
        res = repr(e)[:150]
    r = raw(Cnt, name="c")
    rep(res == "ok" and r["value"] == {"N": "6"} and "extra" in r, "save() of a read item lacking the version attribute", f"got {res}; stored {r}")
    try:
        Cnt.objects.update_with_retry({"name": "c"}, lambda c: setattr(c, "value", c.value + 1)); res = "ok"
    except Exception as e:
        res = repr(e)[:150]
    r = raw(Cnt, name="c")
    rep(res == "ok", "update_with_retry of an item lacking the version attribute", f"got {res}; stored value {r['value']}")

    # 4. delete unversioned, lost
    Item.objects.create(sku="d1", name="x")
    o = Item.objects.get(sku="d1")
    with lose("DeleteItem"):
        try: o.delete(); res = "ok"
        except Exception as e: res = repr(e)
    rep(res == "ok" and raw(Item, sku="d1") is None, "unversioned delete lost", res)
    # versioned delete lost
    Cnt.objects.create(name="d2")
    o = Cnt.objects.get(name="d2")
    with lose("DeleteItem"):
        try: o.delete(); res = "ok"
        except Exception as e: res = repr(e)
    rep(res == "ok" and raw(Cnt, name="d2") is None, "versioned delete lost", res)
    # delete with condition lost
    Item.objects.create(sku="d3", name="x", stock=3)
    o = Item.objects.get(sku="d3")
    with lose("DeleteItem"):
        try: o.delete(condition=Q(stock=3)); res = "ok"
        except Exception as e: res = repr(e)
    rep(res == "ok" and raw(Item, sku="d3") is None, "conditional delete lost", res)

    # 5. update with condition, lost
    Item.objects.create(sku="u1", name="x", stock=10)
    o = Item.objects.get(sku="u1")
    with lose("UpdateItem"):
        try: o.update(stock=F("stock") - 3, condition=Q(stock__gte=3)); res = "ok"
        except Exception as e: res = repr(e)
    s = raw(Item, sku="u1")["stock"]
    rep(res == "ok" and s == {"N": "7"} and o.stock == 7, "update with condition lost", f"{res} stored {s} obj {o.stock}")
    # append lost
    with lose("UpdateItem"):
        try: o.update(hist=F("hist").if_not_exists([]).append(["a"]) if hasattr(F("hist").if_not_exists([]), "append") else F("hist").if_not_exists(["a"])); res = "ok"
        except Exception as e: res = repr(e)
    with lose("UpdateItem"):
        try: o.update(hist=F("hist").append(["b"])); res = "ok"
        except Exception as e: res = repr(e)
    h = raw(Item, sku="u1").get("hist")
    rep(res == "ok" and h is not None and len(h["L"]) == 2, "append lost", f"{res} stored {h}")
    with lose("UpdateItem"):
        try: o.update(tags=F("tags").add({"z"})); res = "ok"
        except Exception as e: res = repr(e)
    rep(res == "ok" and o.tags == {"z"}, "set add lost", f"{res} {o.tags}")

    # 6. unversioned save new instance lost; save existing lost
    with lose("UpdateItem"):
        try: Item(sku="s1", name="n").save(); res = "ok"
        except Exception as e: res = repr(e)
    rep(res == "ok" and raw(Item, sku="s1") is not None, "unversioned save() of new instance lost", res)
    o = Item.objects.get(sku="s1"); o.name = "m"
    with lose("UpdateItem"):
        try: o.save(update_fields=["name"]); res = "ok"
        except Exception as e: res = repr(e)
    rep(res == "ok", "save(update_fields) lost", res)
    c = Cnt.objects.get(name="a")
    with lose("UpdateItem"):
        c.value += 100
        try: c.save(update_fields=["value"]); res = "ok"
        except Exception as e: res = repr(e)
    rep(res == "ok" and raw(Cnt, name="a")["version"]["N"] == str(c.version), "versioned save(update_fields) lost", res)

    # 7. update_or_create lost
    with lose("PutItem"):
        try: o, created = Cnt.objects.update_or_create(name="uc", defaults={"value": 4}); res = f"created={created}"
        except Exception as e: res = repr(e)
    rep(res == "created=True", "update_or_create create lost", res)
    with lose("UpdateItem"):
        try: o, created = Cnt.objects.update_or_create(name="uc", defaults={"value": 5}); res = f"created={created}"
        except Exception as e: res = repr(e)
    r = raw(Cnt, name="uc")
    rep(res == "created=False" and r["value"] == {"N": "5"} and r["version"] == {"N": "2"}, "update_or_create update lost", f"{res} {r}")

    # 8. transaction lost
    x = Cnt.objects.get(name="uc")
    with lose("TransactWriteItems"):
        try:
            with dynorm.transaction() as tx:
                tx.update(x, value=F("value") + 1)
                tx.create(Cnt(name="tx1"))
            res = "ok"
        except Exception as e: res = repr(e)
    r = raw(Cnt, name="uc")
    rep(res == "ok" and r["value"] == {"N": "6"}, "transaction lost", f"{res} {r.get('value')}")
    # bulk_create lost
    with lose("BatchWriteItem"):
        try: Item.objects.bulk_create([Item(sku=f"b{i}", name="b") for i in range(30)]); res = "ok"
        except Exception as e: res = repr(e)
    rep(res == "ok", "bulk_create lost", res)
finally:
    teardown()
