from common import *
import time
setup()
try:
    Item.objects.create(grp="h", iid="1")
    import aiobotocore.session as s
    orig = s.AioSession.create_client
    built = []
    def counting(self, *a, **k):
        built.append(1); return orig(self, *a, **k)
    s.AioSession.create_client = counting
    async def main():
        t = time.perf_counter(); c = time.process_time()
        await asyncio.gather(*(Item.objects.aget(grp="h", iid="1") for _ in range(50)))
        dt = time.perf_counter() - t; dc = time.process_time() - c
        await dynorm.aclose()
        return dt, dc
    dt, dc = asyncio.run(main())
    report(len(built) <= 1, f"first burst of 50 agets on a new loop builds one client ({len(built)} built, {dt:.2f}s wall, {dc:.2f}s CPU)",
           f"{len(built)} aiobotocore clients built for one loop, {dc:.2f}s CPU")
finally:
    teardown()
