import sys, datetime as dt; sys.path.insert(0, "adv")
from common import *
from dynorm import Manager
class MyVersion(fields.Version):
    pass
class MySet(fields.Set):
    pass
class MyList(fields.List):
    pass
class W(Entity):
    wid = fields.String()
    n = fields.Integer(default=0)
    s = MySet(str)
    l = MyList(null=True)
    ver = MyVersion()
    touched = fields.DateTime(auto_now=True, null=True)
    items = Manager()
    class Meta:
        table = T
        entity_type = "W"
        pk = "{version}#W#{wid}"
        sk = "M"
setup()
try:
    Cnt.objects.create(name="c")
    with lose("UpdateItem", between=lambda: Cnt.objects.filter(name="c").update(note="z")):
        try: o, cr = Cnt.objects.update_or_create(name="c", defaults={"value": F("value") + 1}); res = "ok"
        except Exception as e: res = repr(e)[:150]
    print("INFO update_or_create F:", res, raw(Cnt, name="c")["value"])
    a = W.items.create(wid="a")
    b = W.items.get(wid="a"); b.n = 1; b.save()
    a.n = 2
    try: a.save(); res = "saved"
    except dynorm.StaleWrite: res = "stale"
    except Exception as e: res = repr(e)[:100]
    rep(res == "stale", "subclass of Version keeps optimistic locking", res)
    try:
        W.items.update_with_retry({"wid": "a"}, lambda w: setattr(w, "n", w.n + 1)); res = "ok"
    except Exception as e: res = repr(e)[:120]
    rep(res == "ok", "update_with_retry with non-'objects' manager", res)
    try:
        x = W.items.get(wid="a"); x.update(s=F("s").add({"q"}), l=F("l").if_not_exists([]))
        x.update(l=F("l").append([1])); res = f"{x.s} {x.l}"
    except Exception as e: res = repr(e)[:120]
    rep(res == "{'q'} [1]", "Set/List subclasses with F add/append", res)
    # failed save leaves instance (auto_now)
    y = W.items.get(wid="a"); t0 = y.touched; v0 = y.ver
    z = W.items.get(wid="a"); z.n = 50; z.save()
    y.n = 99
    try: y.save()
    except dynorm.StaleWrite: pass
    rep(y.touched == t0 and y.ver == v0, "failed save leaves auto_now and version", f"{t0}->{y.touched} {v0}->{y.ver}")
    # new instance failed save then rekey
    w = W(wid="a")
    try: w.save()
    except dynorm.AlreadyExists: pass
    w.wid = "b"
    try: w.save(); res = "ok"
    except Exception as e: res = repr(e)[:120]
    rep(res == "ok" and raw(W, wid="b") is not None, "rekey after failed first save", res)
    # hooks survive configure
    hits = []
    h = lambda **kw: hits.append(1)
    backend.register_hook("before-send.dynamodb.GetItem", h)
    dynorm.configure(cursor_secret="s3cret-" + "x" * 30)
    W.items.get(wid="a")
    backend.unregister_hook("before-send.dynamodb.GetItem", h)
    rep(len(hits) == 1, "hook survives configure(cursor_secret)", f"hits {len(hits)}")
finally:
    teardown()
