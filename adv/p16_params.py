from common import *
setup()
def strip(params):
    import json
    s = json.dumps(params, sort_keys=True, default=str)
    return s
try:
    for i in range(30):
        Item.objects.create(grp="p", iid=f"{i:03d}", val=f"v{i%4}")
    cases = {
        "get": (lambda: Item.objects.get(grp="p", iid="003"), lambda: Item.objects.aget(grp="p", iid="003")),
        "get_filter": (lambda: Item.objects.filter(grp="p", val="v1").get(iid="005"), lambda: Item.objects.filter(grp="p", val="v1").aget(iid="005")),
        "count": (lambda: Item.objects.filter(grp="p", val="v2").count(), lambda: Item.objects.filter(grp="p", val="v2").acount()),
        "exists": (lambda: Item.objects.filter(grp="p", val="v9").exists(), lambda: Item.objects.filter(grp="p", val="v9").aexists()),
        "first": (lambda: Item.objects.filter(grp="p", val="v3").first(), lambda: Item.objects.filter(grp="p", val="v3").afirst()),
        "last": (lambda: Item.objects.filter(grp="p", val="v3").last(), lambda: Item.objects.filter(grp="p", val="v3").alast()),
        "in_bulk": (lambda: Item.objects.in_bulk([{"grp": "p", "iid": "001"}, {"grp": "p", "iid": "002"}]), lambda: Item.objects.ain_bulk([{"grp": "p", "iid": "001"}, {"grp": "p", "iid": "002"}])),
        "page": (lambda: Item.objects.filter(grp="p", val="v1").page(3), lambda: Item.objects.filter(grp="p", val="v1").apage(3)),
        "scan_slice": (lambda: list(Item.objects.scan().filter(val="v2")[2:5]), None),
        "get_or_create_existing": (lambda: Item.objects.get_or_create(grp="p", iid="007"), lambda: Item.objects.aget_or_create(grp="p", iid="007")),
    }
    async def main():
        for name, (s, a) in cases.items():
            with dynorm.capture() as c1:
                rs = s()
            if a is None:
                qs = Item.objects.scan().filter(val="v2")[2:5]
                with dynorm.capture() as c2:
                    ra = [o async for o in qs]
            else:
                with dynorm.capture() as c2:
                    ra = await a()
            p1 = [(r.operation, strip(r.params)) for r in c1.requests]
            p2 = [(r.operation, strip(r.params)) for r in c2.requests]
            report(p1 == p2 and repr(rs) == repr(ra), f"request parity {name} ({c1.operations})", f"sync {c1.operations} {repr(rs)[:80]} async {c2.operations} {repr(ra)[:80]}")
        await dynorm.aclose()
    asyncio.run(main())
finally:
    teardown()
