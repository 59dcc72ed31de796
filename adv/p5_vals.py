from common import *
from decimal import Decimal
setup()
try:
    vals = ["a#b", "#", "$x%", "", "ü", "\U0010ffff", "\ud800", "a", "ab", "x" * 1200, "a\x00b", " "]
    nums = [Decimal("1e-130"), Decimal("9.9999999999999999999999999999999999999E+125"), Decimal("1.000000000000000000000000000000000000001"),
            Decimal("-0"), Decimal("NaN"), Decimal("Infinity"), 10**40, -5, 0.1]
    def outcome_sync(fn):
        try: r = fn(); return ("ok", r)
        except Exception as e: return ("err", type(e).__name__, str(e)[:150])
    async def outcome_async(coro_fn):
        try: r = await coro_fn(); return ("ok", r)
        except Exception as e: return ("err", type(e).__name__, str(e)[:150])
    async def main():
        with dynorm.capture() as cs: pass
        for i, v in enumerate(vals):
            s = outcome_sync(lambda: Item.objects.create(grp="s" + v, iid=v, val=v).val)
            a = await outcome_async(lambda: Item.objects.acreate(grp="a" + v, iid=v, val=v))
            if a[0] == "ok": a = ("ok", a[1].val)
            report(s[0] == a[0] and s[1:] == a[1:] if s[0] == "err" else s == a, f"create parity value {v[:10]!r}", f"sync {s} async {a}")
            if s[0] == "ok":
                s2 = outcome_sync(lambda: [o.val for o in Item.objects.filter(grp="s" + v)])
                a2 = await outcome_async(lambda: _alist(Item.objects.filter(grp="a" + v)))
                report(s2 == a2 and s2 == ("ok", [v]), f"read back parity {v[:10]!r}", f"{s2} {a2}")
                s3 = outcome_sync(lambda: Item.objects.get(grp="s" + v, iid=v).val)
                a3 = await outcome_async(lambda: Item.objects.aget(grp="a" + v, iid=v))
                a3 = ("ok", a3[1].val) if a3[0] == "ok" else a3
                report(s3 == a3, f"get parity {v[:10]!r}", f"{s3} {a3}")
        for i, n in enumerate(nums):
            s = outcome_sync(lambda: Item.objects.create(grp="n", iid=f"s{i}", num=n).num)
            a = await outcome_async(lambda: Item.objects.acreate(grp="n", iid=f"a{i}", num=n))
            if a[0] == "ok": a = ("ok", a[1].num)
            same = (s == a) or (s[0] == "err" and s[:2] == a[:2])
            report(same, f"number parity {n!r}", f"sync {s} async {a}")
            if s[0] == "ok" and a[0] == "ok":
                rs = Item.objects.get(grp="n", iid=f"s{i}").num; ra = (await Item.objects.aget(grp="n", iid=f"a{i}")).num
                report(rs == ra, f"number read parity {n!r}", f"{rs} {ra}")
        # errors parity
        s = outcome_sync(lambda: Item.objects.get(grp="zz", iid="none"))
        a = await outcome_async(lambda: Item.objects.aget(grp="zz", iid="none"))
        report(s == a, "DoesNotExist parity", f"{s} {a}")
        s = outcome_sync(lambda: Item.objects.get(grp="n"))
        a = await outcome_async(lambda: Item.objects.aget(grp="n"))
        report(s[:2] == a[:2], "MultipleObjectsReturned parity", f"{s} {a}")
        s = outcome_sync(lambda: Item.objects.filter(grp="n", nonfield=3).count())
        a = await outcome_async(lambda: Item.objects.filter(grp="n", nonfield=3).acount())
        report(s == a, "bad filter parity", f"{s} {a}")
        s = outcome_sync(lambda: Item.objects.in_bulk([{"grp": "n", "iid": "s0"}, {"grp": "n", "iid": "nope"}]))
        a = await outcome_async(lambda: Item.objects.ain_bulk([{"grp": "n", "iid": "s0"}, {"grp": "n", "iid": "nope"}]))
        report(str(s) == str(a), "in_bulk parity", f"{s} {a}")
        # capture counts parity
        qs = Item.objects.filter(grp="n", num__gt=0)
        with dynorm.capture() as c1: l1 = list(qs)
        with dynorm.capture() as c2: l2 = [o async for o in qs]
        report(c1.operations == c2.operations and [r.params for r in c1.requests] == [r.params for r in c2.requests], "capture parity filter", f"{c1.operations} {c2.operations}")
        # exists/first on empty
        s = outcome_sync(lambda: (Item.objects.filter(grp="empty").exists(), Item.objects.filter(grp="empty").first()))
        a = await outcome_async(lambda: _pair(Item.objects.filter(grp="empty")))
        report(s == a, "exists/first empty parity", f"{s} {a}")
        await dynorm.aclose()
    async def _alist(qs): return [o.val async for o in qs]
    async def _pair(qs): return (await qs.aexists(), await qs.afirst())
    asyncio.run(main())
finally:
    teardown()
