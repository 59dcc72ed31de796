from common import *
setup()
try:
    Item.objects.create(grp="d", iid="1", val="v", big="B")
    Item.objects.create(grp="d", iid="2", val="v", big="B")
    def so(fn):
        try: return ("ok", fn())
        except Exception as e: return ("err", type(e).__name__, str(e)[:160])
    async def ao(fn):
        try: return ("ok", await fn())
        except Exception as e: return ("err", type(e).__name__, str(e)[:160])
    async def main():
        o1 = Item.objects.filter(grp="d", iid="1").only("val").first()
        o2 = [o async for o in Item.objects.filter(grp="d", iid="2").only("val")][0]
        o1.val = "w"; o2.val = "w"
        s = so(lambda: o1.save() and None)
        a = await ao(lambda: _none(o2.asave()))
        raw = {i["SK"]["S"]: i for i in raw_all() if i["PK"]["S"].endswith("GRP#d")}
        report(s[:2] == a[:2] and raw["ITEM#1"].get("big") == raw["ITEM#2"].get("big") == {"S": "B"}, "save/asave of only() instance parity, deferred field kept",
               f"sync {s} async {a} raw big {raw['ITEM#1'].get('big')} {raw['ITEM#2'].get('big')}")
        import inspect
        report(inspect.signature(Item.refresh_from_db).parameters.keys() == inspect.signature(Item.arefresh_from_db).parameters.keys(), "refresh_from_db signature parity", f"{inspect.signature(Item.refresh_from_db)} vs {inspect.signature(Item.arefresh_from_db)}")
        await dynorm.aclose()
    async def _none(c): await c; return None
    asyncio.run(main())
finally:
    teardown()
