from common import *
setup()
try:
    for i in range(40):
        Item.objects.create(grp="m", iid=f"{i:03d}", val=f"v{i%3}", big="x" * 3000)
    async def main():
        mk = lambda: Item.objects.filter(grp="m", val="v1")[:9]
        with dynorm.capture() as c1: l1 = [o.iid for o in mk()]
        with dynorm.capture() as c2: l2 = [o.iid async for o in mk()]
        report(l1 == l2 and [r.params for r in c1.requests] == [r.params for r in c2.requests],
               f"capture parity fresh qs ({len(c1)} reqs)", f"{c1.operations} vs {c2.operations}")
        report(mk().explain() == (c2.requests[0].params if c2.requests else None) or str(mk().explain()) != "", "explain", "")
        # missing twins
        for n in ["adelete", "abulk_delete", "abulk_update", "aearliest", "alatest", "avalues", "avalues_list"]:
            report(hasattr(Item.objects.filter(grp="m"), n), f"queryset has {n}", "AttributeError")
        # values in loop: sync blocking call?
        sync_sent = []
        h = lambda **kw: sync_sent.append(1)
        dynorm.backend.client().meta.events.register("before-send.dynamodb.Query", h)
        try:
            vals = Item.objects.filter(grp="m").values("iid")
        finally:
            dynorm.backend.client().meta.events.unregister("before-send.dynamodb.Query", h)
        print("NOTE values() in a running loop went through the sync client:", len(sync_sent), "requests")
        await dynorm.aclose()
    asyncio.run(main())
finally:
    teardown()
