import sys; sys.path.insert(0, "adv")
from common import *
setup()
try:
    Cnt.objects.create(name="a")
    def other():
        backend.call("UpdateItem", {"TableName": T.table_name(), "Key": Cnt._meta.primary_key({"name": "a"}),
            "UpdateExpression": "SET note = :n, version = version + :one", "ExpressionAttributeValues": {":n": {"S": "x"}, ":one": {"N": "1"}}})
    calls = []
    with lose("UpdateItem", between=other) as f:
        try:
            o = Cnt.objects.update_with_retry({"name": "a"}, lambda c: (calls.append(1), setattr(c, "value", c.value + 1)))
            res = "ok"
        except Exception as e:
            res = repr(e)
    print(f.delivered, res, calls, raw(Cnt, name="a"))
    ta = T._meta.type_attribute
    backend.call("PutItem", {"TableName": T.table_name(), "Item": {**Cnt._meta.primary_key({"name": "c"}),
        ta: {"S": "CNT"}, "name": {"S": "c"}, "value": {"N": "5"}, "extra": {"S": "keep"}}})
    try:
        o = Cnt.objects.get(name="c"); print("read version", o.version, o._state)
        o.value = 6
        o.save(); res = "ok"
    except Exception as e:
        res = repr(e)[:250]
    r = raw(Cnt, name="c")
    rep(res == "ok" and r["value"] == {"N": "6"} and "extra" in r, "save() of a read item lacking the version attribute", f"got {res}; stored {r}")
    try:
        Cnt.objects.update_with_retry({"name": "c"}, lambda c: setattr(c, "value", c.value + 1)); res = "ok"
    except Exception as e:
        res = repr(e)[:250]
    r = raw(Cnt, name="c")
    rep(res == "ok", "update_with_retry of an item lacking the version attribute", f"got {res}; stored value {r['value']}")
finally:
    teardown()
