import sys; sys.path.insert(0, "adv")
from common import *
setup()
try:
    Item.objects.create(sku="o", name="n", warehouse="north")
    o = Item.objects.only("sku", "name").get(sku="o")
    with dynorm.capture() as c:
        w = o.warehouse
    print("INFO deferred access:", repr(w), c.operations)
    # bulk_update with only() objects
    Item.objects.bulk_create([Item(sku=f"b{i}", name="n", warehouse="north") for i in range(3)])
    objs = list(Item.objects.only("sku", "name").filter(sku__in=[f"b{i}" for i in range(3)])) if False else [Item.objects.only("sku", "name").get(sku=f"b{i}") for i in range(3)]
    for x in objs: x.name = "m"
    try: Item.objects.bulk_update(objs, ["name", "warehouse"]); res = "ok"
    except Exception as e: res = repr(e)[:150]
    r = raw(Item, sku="b0")
    rep(r.get("warehouse") == {"S": "north"}, "bulk_update of only() objects naming an unread field", f"{res}; stored warehouse {r.get('warehouse')}, GSI1PK {r.get('GSI1PK')}")
    # bulk_update BatchIncomplete .written
    Cnt.objects.bulk_create([Cnt(name=f"c{i}") for i in range(6)])
    cs = [Cnt.objects.get(name=f"c{i}") for i in range(6)]
    z = Cnt.objects.get(name="c4"); z.value = 7; z.save()
    for x in cs: x.value = 1
    try: Cnt.objects.bulk_update(cs, ["value"], chunk_size=2); res = None
    except dynorm.BatchIncomplete as e: res = e
    except Exception as e: res = e
    written = getattr(res, "written", None)
    print("INFO", repr(res)[:200])
    rep(isinstance(res, dynorm.BatchIncomplete) and len(written) == 4 and len(res.unprocessed) == 2, "bulk_update BatchIncomplete lists written",
        f"written={written!r} unprocessed={len(getattr(res, 'unprocessed', []))}")
    vers = [raw(Cnt, name=f"c{i}")["version"]["N"] for i in range(6)]
    print("INFO versions stored", vers, "instances", [x.version for x in cs])
    rep([x.version for x in cs[:4]] == [int(v) for v in vers[:4]], "bulk_update bumps versions of written chunks", f"{vers} vs {[x.version for x in cs]}")
finally:
    teardown()
