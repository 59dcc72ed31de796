from common import *
setup()
try:
    for i in range(12): Item.objects.create(grp="st", iid=f"{i:03d}", val=f"v{i%2}")
    async def main():
        q1 = Item.objects.filter(grp="st", val="v1")[:4]; l1 = list(q1)
        q2 = Item.objects.filter(grp="st", val="v1")[:4]; l2 = [o async for o in q2]
        report(q1.stats == q2.stats, "qs.stats parity after async for", f"{q1.stats} vs {q2.stats}")
        q1 = Item.objects.filter(grp="st"); c1 = q1.count()
        q2 = Item.objects.filter(grp="st"); c2 = await q2.acount()
        report(q1.stats == q2.stats, "qs.stats parity after acount", f"{q1.stats} vs {q2.stats}")
        q1 = Item.objects.filter(grp="st"); p1 = q1.page(5)
        q2 = Item.objects.filter(grp="st"); p2 = await q2.apage(5)
        report(q1.stats == q2.stats, "qs.stats parity after apage", f"{q1.stats} vs {q2.stats}")
        await dynorm.aclose()
    asyncio.run(main())
finally:
    teardown()
