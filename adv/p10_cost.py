from common import *
import gc, resource, time
setup()
try:
    Item.objects.create(grp="h", iid="1")
    async def handler():
        r = (await Item.objects.aget(grp="h", iid="1")).iid
        await dynorm.aclose()
        return r
    asyncio.run(handler())
    gc.collect(); r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.process_time(); t0 = time.perf_counter()
    for i in range(20):
        asyncio.run(handler())
    cpu = (time.process_time() - t) / 20
    gc.collect(); r1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # sync for comparison
    t = time.process_time()
    for i in range(20): Item.objects.get(grp="h", iid="1")
    scpu = (time.process_time() - t) / 20
    report(cpu < 5 * scpu + 0.01, f"per-loop handler with aclose: CPU {cpu*1000:.0f} ms/request vs sync {scpu*1000:.1f} ms; maxrss +{(r1-r0)/1024:.1f} MB",
           f"each new loop rebuilds an aiobotocore session: {cpu*1000:.0f} ms CPU per request vs {scpu*1000:.1f} ms sync")
finally:
    teardown()
