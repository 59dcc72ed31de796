import sys, threading; sys.path.insert(0, "adv")
from common import *
for attr in ["_dynorm_rev", "entityType", "PK", "GSI1PK"]:
    try:
        type("X" + attr.strip("_"), (Entity,), {"__module__": __name__, "xid": fields.String(), "f": fields.String(null=True, attr_name=attr),
              "Meta": type("Meta", (), {"table": T, "entity_type": "X" + attr, "pk": "{version}#X#{xid}", "sk": "M"})})
        res = "accepted"
    except Exception as e:
        res = type(e).__name__
    rep(res != "accepted", f"field stored under reserved attribute {attr}", res)
class Odd(Entity):
    oid = fields.String()
    dotted = fields.String(null=True, attr_name="a.b")
    hashed = fields.Integer(null=True, attr_name="#x :y")
    class Meta:
        table = T
        entity_type = "ODD"
        pk = "{version}#ODD#{oid}"
        sk = "M"
setup()
try:
    try:
        o = Odd.objects.create(oid="1", dotted="d", hashed=1)
        o.dotted = "e"; o.save()
        o.update(hashed=F("hashed") + 1)
        p = Odd.objects.only("oid", "dotted").get(oid="1")
        q = list(Odd.objects.filter(oid="1", hashed=2))
        res = f"{p.dotted} {len(q)} {raw(Odd, oid='1').get('a.b')}"
    except Exception as e:
        res = repr(e)[:200]
    rep(res == "e 1 {'S': 'e'}", "attr_name with '.', '#', ':' and space", res)
    # bulk_update lost
    Cnt.objects.bulk_create([Cnt(name=f"c{i}") for i in range(3)])
    cs = [Cnt.objects.get(name=f"c{i}") for i in range(3)]
    for x in cs: x.value = 5
    with lose("TransactWriteItems") as f:
        try: Cnt.objects.bulk_update(cs, ["value"]); res = "ok"
        except Exception as e: res = repr(e)[:200]
    rep(res == "ok" and [x.version for x in cs] == [2, 2, 2], "bulk_update lost response", f"{res} {[x.version for x in cs]}")
    # concurrent get_or_create
    results = []
    def g():
        try: results.append(Cnt.objects.get_or_create(name="race", defaults={"value": 1})[1])
        except Exception as e: results.append(repr(e)[:80])
    ts = [threading.Thread(target=g) for _ in range(8)]
    [t.start() for t in ts]; [t.join(60) for t in ts]
    rep(results.count(True) == 1 and results.count(False) == 7, "8 concurrent get_or_create", str(results))
    # qs.delete lost
    Item.objects.bulk_create([Item(sku=f"d{i}") for i in range(3)])
    with lose("BatchWriteItem"):
        try: n = Item.objects.filter(sku__in=["d0", "d1", "d2"]).delete(); res = f"ok {n}"
        except Exception as e: res = repr(e)[:200]
    rep(res == "ok 3" and raw(Item, sku="d0") is None, "qs.delete lost", res)
finally:
    teardown()
