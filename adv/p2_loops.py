from common import *
import threading, gc, warnings
setup()
try:
    Item.objects.create(grp="h", iid="1", val="a", big="B"*10)
    # Lambda pattern: new loop per request, no aclose
    lags = []
    async def handler(close):
        lp = LagProbe(0.002); t = asyncio.create_task(lp.run()); await asyncio.sleep(0.005)
        o = await Item.objects.aget(grp="h", iid="1")
        t.cancel(); await t
        lags.append(lp.max)
        if close: await dynorm.aclose()
        return o.val
    for i in range(4):
        asyncio.run(handler(True))
    report(max(lags) < 0.1, f"first-request loop lag with aclose per loop {[round(x,3) for x in lags]}", f"max lag {max(lags):.3f}s blocking the loop while building the client")
    lags.clear()
    for i in range(4):
        asyncio.run(handler(False))
    gc.collect()
    n = len(dynorm.backend._aclients)
    report(n <= 1, "clients of finished loops (no aclose) are not kept", f"{n} clients of closed loops kept in backend._aclients")
    # threads each running their own loop concurrently
    errs = []
    def th(k):
        try:
            async def m():
                for j in range(5):
                    await Item.objects.acreate(grp="th", iid=f"{k}-{j}")
                await dynorm.aclose()
            asyncio.run(m())
        except Exception as e:
            errs.append(repr(e))
    ts = [threading.Thread(target=th, args=(k,)) for k in range(6)]
    [t.start() for t in ts]; [t.join(60) for t in ts]
    raw = [i for i in raw_all() if i["PK"]["S"].endswith("GRP#th")]
    report(not errs and len(raw) == 30, "6 threads x own loop acreate", f"errs {errs[:2]} raw {len(raw)}")
    # sync and async mixing in one process: sync call inside running loop
    async def mix():
        o = Item.objects.get(grp="h", iid="1")
        a = await Item.objects.aget(grp="h", iid="1")
        return o.val == a.val
    report(asyncio.run(mix()), "mixing sync get inside loop and aget", "")
    # deferred field access in async context
    async def deferred():
        objs = [o async for o in Item.objects.filter(grp="h").only("val")]
        with dynorm.capture() as c:
            try:
                b = objs[0].big
            except Exception as e:
                return f"raised {e!r}", c.operations
        return b, c.operations
    r = asyncio.run(deferred())
    print("NOTE deferred access in async:", r)
finally:
    teardown()
