from common import *
setup()
try:
    async def main():
        async def uoc(i):
            return await VCtr.objects.aupdate_or_create(name="u", defaults={"n": i})
        r = await asyncio.gather(*(uoc(i) for i in range(30)), return_exceptions=True)
        errs = [x for x in r if isinstance(x, BaseException)]
        created = sum(1 for x in r if not isinstance(x, BaseException) and x[1])
        o = await VCtr.objects.aget(name="u")
        report(all(type(e).__name__ == "StaleWrite" for e in errs) and created == 1 and o.version == 30 - len(errs), "30 concurrent aupdate_or_create versioned: acked count == version, losers get StaleWrite", f"errs {[repr(e)[:100] for e in errs[:2]]} created {created} version {o.version}")
        def so(fn):
            try: return ("ok", len(fn()))
            except Exception as e: return ("err", type(e).__name__)
        s = so(lambda: Item.objects.bulk_create([Item(grp="dup", iid="1"), Item(grp="dup", iid="1")]))
        try: a = ("ok", len(await Item.objects.abulk_create([Item(grp="dup2", iid="1"), Item(grp="dup2", iid="1")])))
        except Exception as e: a = ("err", type(e).__name__)
        report(s == a, "bulk_create duplicate keys parity", f"{s} {a}")
        await dynorm.aclose()
    asyncio.run(main())
finally:
    teardown()
