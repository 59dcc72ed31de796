import sys; sys.path.insert(0, "adv")
from common import *
setup()
try:
    Cnt.objects.create(name="a")
    def other():
        Cnt.objects.filter(name="a").update(note="x")   # another dynorm process changing a different field
    calls = []
    with lose("UpdateItem", between=other) as f:
        try:
            o = Cnt.objects.update_with_retry({"name": "a"}, lambda c: (calls.append(1), setattr(c, "value", c.value + 1)))
            res = "ok"
        except Exception as e:
            res = repr(e)
    r = raw(Cnt, name="a")
    rep(r["value"]["N"] == "1" or res != "ok", "update_with_retry(+1) whose response was lost, another dynorm writer in between",
        f"expected value 1 (or an error saying it may have been applied), got {res}, fn called {len(calls)}x, stored value {r['value']['N']}")
    # plain save: message
    Cnt.objects.create(name="b")
    o = Cnt.objects.get(name="b"); o.value = 5
    with lose("UpdateItem", between=lambda: Cnt.objects.filter(name="b").update(note="y")):
        try: o.save(); res = "ok"
        except Exception as e: res = repr(e)
    rep("may have been applied" in res, "versioned save lost + interleaved writer says may have been applied", res)
    # update_or_create with F in defaults? update_or_create lost + interleaved
    Cnt.objects.create(name="c")
    with lose("UpdateItem", between=lambda: Cnt.objects.filter(name="c").update(note="z")):
        try: o, cr = Cnt.objects.update_or_create(name="c", defaults={"value": F("value") + 1}); res = "ok"
        except Exception as e: res = repr(e)
    r = raw(Cnt, name="c")
    rep(r["value"]["N"] == "1" or res != "ok", "update_or_create(F+1) lost + interleaved writer", f"{res} stored {r['value']}")
finally:
    teardown()
