from common import *
import gc, resource
setup()
try:
    Item.objects.create(grp="h", iid="1")
    async def handler():
        return (await Item.objects.aget(grp="h", iid="1")).iid
    import warnings; warnings.simplefilter("ignore")
    asyncio.run(handler())
    gc.collect(); r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for i in range(30):
        asyncio.run(handler())
    gc.collect(); r1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    n = len(dynorm.backend._aclients)
    report(n <= 1, f"30 asyncio.run handlers (no aclose): {n} clients kept, maxrss +{(r1-r0)/1024:.1f} MB", f"{n} clients of closed loops kept")
finally:
    teardown()
