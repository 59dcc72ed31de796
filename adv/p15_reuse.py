from common import *
setup()
try:
    for i in range(80):
        Item.objects.create(grp="r", iid=f"{i:03d}", big="x" * 30000)  # ~30 KB each: several 1 MB pages? no: use Limit via page size
    async def main():
        # break early then iterate again
        qs = Item.objects.filter(grp="r")
        async for o in qs:
            break
        again = [o async for o in qs]
        report(len(again) == 80, "async for break then async for again on same qs", f"got {len(again)}")
        qs = Item.objects.filter(grp="r")
        async for o in qs:
            break
        again = list(qs)
        report(len(again) == 80, "async for break then list() on same qs", f"got {len(again)}")
        # cancel mid async for, then reuse
        qs = Item.objects.filter(grp="r")
        gate = asyncio.Event()
        async def consume():
            async for o in qs:
                gate.set(); await asyncio.sleep(10)
        t = asyncio.create_task(consume()); await gate.wait(); t.cancel()
        try: await t
        except asyncio.CancelledError: pass
        again = [o async for o in qs]
        report(len(again) == 80, "cancelled async for then async for again on same qs", f"got {len(again)}")
        c1 = await qs.acount(); e1 = await qs.aexists(); f = await qs.afirst(); l = await qs.alast()
        report(c1 == 80 and e1 and f.iid == "000" and l.iid == "079", "acount/aexists/afirst/alast after reuse", f"{c1} {e1} {f} {l}")
        # sliced qs break + len
        qs = Item.objects.filter(grp="r")[5:25]
        async for o in qs: break
        again = [o.iid async for o in qs]
        report(again == [f"{i:03d}" for i in range(5, 25)], "sliced qs break then again", f"{again[:3]} len {len(again)}")
        # concurrent iteration of the same qs object by two tasks
        qs = Item.objects.filter(grp="r")
        async def it(): return [o.iid async for o in qs]
        a, b = await asyncio.gather(it(), it())
        report(len(a) == len(b) == 80 and a == b, "two tasks iterate the same qs concurrently", f"{len(a)} {len(b)}")
        await dynorm.aclose()
    asyncio.run(main())
    # sync for comparison
    qs = Item.objects.filter(grp="r")
    for o in qs: break
    report(len(list(qs)) == 80, "sync for break then list()", "")
finally:
    teardown()
