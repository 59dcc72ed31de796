from common import *
import urllib.request, urllib.error, botocore.exceptions
setup()
class Lose:
    def __init__(self, n=1): self.left = n
    def __call__(self, request, **kw):
        if self.left > 0:
            self.left -= 1
            req = urllib.request.Request(request.url, data=request.body, headers=dict(request.headers.items()))
            try: urllib.request.urlopen(req, timeout=10).read()
            except urllib.error.HTTPError: pass
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)
def lose(op, n=1):
    h = Lose(n); dynorm.backend.register_hook(f"before-send.dynamodb.{op}", h); return h
def unlose(op, h): dynorm.backend.unregister_hook(f"before-send.dynamodb.{op}", h)

async def probe(name, op, fn, check):
    h = lose(op)
    try:
        try:
            r = await fn(); err = None
        except Exception as e:
            r = None; err = e
    finally:
        unlose(op, h)
    ok, detail = await check(r, err)
    report(ok and h.left == 0, f"lost {op} response: {name}", f"{detail}; hook fired={h.left==0}; err={err!r}")

try:
    async def main():
        # atransaction with F increment
        await Ctr.objects.acreate(name="t1")
        async def f():
            async with dynorm.atransaction() as tx:
                tx.update(Ctr(name="t1"), n=F("n") + 1)
                tx.create(Item(grp="t1", iid="x"))
        async def c(r, e):
            n = (await Ctr.objects.aget(name="t1")).n
            return e is None and n == 1, f"n={n}"
        await probe("atransaction update+create", "TransactWriteItems", f, c)
        # abulk_create
        async def f():
            return await Item.objects.abulk_create([Item(grp="bk", iid=f"{i}") for i in range(30)])
        async def c(r, e):
            raw = [i for i in raw_all() if i["PK"]["S"].endswith("GRP#bk")]
            return e is None and len(raw) == 30, f"raw={len(raw)}"
        await probe("abulk_create 30", "BatchWriteItem", f, c)
        # keyed aupdate of versioned entity
        await VCtr.objects.acreate(name="k1")
        async def f():
            return await VCtr.objects.filter(name="k1").aupdate(n=F("n") + 5)
        async def c(r, e):
            o = await VCtr.objects.aget(name="k1")
            return e is None and o.n == 5, f"n={o.n} v={o.version}"
        await probe("keyed aupdate versioned F+5", "UpdateItem", f, c)
        await probe("keyed aupdate versioned F+5 (tx path)", "TransactWriteItems", f, lambda r, e: _c5(r, e))
        # aupdate_with_retry with non-idempotent fn
        await Ctr.objects.acreate(name="uwr")
        async def f():
            def fn(o): o.n += 1
            return await Ctr.objects.aupdate_with_retry(fn, name="uwr")
        async def c(r, e):
            o = await Ctr.objects.aget(name="uwr"); return e is None and o.n == 1, f"n={o.n}"
        for op in ("UpdateItem", "PutItem", "TransactWriteItems"):
            await probe(f"aupdate_with_retry +1 unversioned via {op}", op, f, c)
            await Ctr.objects.filter(name="uwr").aupdate(n=0)
        # adelete unversioned
        o = await Ctr.objects.acreate(name="del")
        async def f(): return await o.adelete()
        async def c(r, e):
            return e is None and not await Ctr.objects.filter(name="del").aexists(), "still there / error"
        await probe("adelete unversioned", "DeleteItem", f, c)
        # aupdate_or_create
        async def f(): return await Ctr.objects.aupdate_or_create(name="uoc", defaults={"n": 7})
        async def c(r, e):
            return e is None and r[1] is True and (await Ctr.objects.aget(name="uoc")).n == 7, f"r={r}"
        for op in ("PutItem", "TransactWriteItems", "UpdateItem"):
            await Ctr.objects.filter(name="uoc").adelete() if hasattr(Ctr.objects.filter(name="uoc"), "adelete") else None
            await probe(f"aupdate_or_create creating via {op}", op, f, c)
            try: await (await Ctr.objects.aget(name="uoc")).adelete()
            except Exception: pass
        # asave versioned with update_fields
        v = await VCtr.objects.acreate(name="sv")
        async def f():
            v.n = 3; return await v.asave(update_fields=["n"])
        async def c(r, e):
            o = await VCtr.objects.aget(name="sv"); return e is None and o.n == 3 and o.version == 2 and v.version == 2, f"n={o.n} v={o.version} local v={v.version}"
        await probe("asave(update_fields) versioned", "UpdateItem", f, c)
        await dynorm.aclose()
    async def _c5(r, e):
        o = await VCtr.objects.aget(name="k1")
        return e is None and o.n == 10, f"n={o.n} v={o.version}"
    globals()["_c5"] = _c5
    asyncio.run(main())
finally:
    teardown()
