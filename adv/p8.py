import urllib.error, sys, threading, itertools, urllib.request, time; sys.path.insert(0, "adv")
from common import *
setup()
try:
    Cnt.objects.create(name="k")
    n = itertools.count()
    seen = threading.local()
    def hook(request, **kw):
        # lose every third UpdateItem response (first attempt only)
        if getattr(seen, "retrying", False):
            seen.retrying = False; return
        if next(n) % 3 == 0:
            req = urllib.request.Request(request.url, data=request.body, headers=dict(request.headers.items()))
            try: urllib.request.urlopen(req, timeout=10).read()
            except urllib.error.HTTPError: pass
            seen.retrying = True
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)
    backend.register_hook("before-send.dynamodb.UpdateItem", hook)
    errors = []; oks = [0]
    lock = threading.Lock()
    def work():
        for _ in range(10):
            try:
                Cnt.objects.update_with_retry({"name": "k"}, lambda c: setattr(c, "value", c.value + 1), attempts=50)
                with lock: oks[0] += 1
            except Exception as e:
                errors.append(repr(e)[:100])
    ts = [threading.Thread(target=work) for _ in range(4)]
    t0 = time.time()
    [t.start() for t in ts]; [t.join(120) for t in ts]
    backend.unregister_hook("before-send.dynamodb.UpdateItem", hook)
    v = int(raw(Cnt, name="k")["value"]["N"])
    rep(v == oks[0], "4 threads x 10 update_with_retry(+1), a third of responses lost", f"expected stored == {oks[0]} acknowledged, got {v}; errors {len(errors)} {errors[:1]}")
    print("time", time.time() - t0)
finally:
    teardown()
