import sys, math, decimal, datetime as dt; sys.path.insert(0, "adv")
from common import *
D = decimal.Decimal
class V(Entity):
    vid = fields.String()
    num = fields.Number(null=True)
    dec = fields.Decimal(null=True)
    when = fields.DateTime(null=True)
    m = fields.Map(null=True)
    class Meta:
        table = T
        entity_type = "V"
        pk = "{version}#V#{vid}"
        sk = "M"
setup()
try:
    i = 0
    for val in [D("9.9999999999999999999999999999999999999E+125"), D("-9.9999999999999999999999999999999999999E+125"), D("1E-130"), D("-1E-130"),
                10**40, -10**40, D("1.000"), D("-0"), D("0E-200"), 2**100, 0.1, 1e125, 1e-130, D("123456789012345678901234567890.12345678"),
                D("1234567890.123456789012345"), -0.0, D("1.0000000000000000000000000000000000000000"), D("10E+124")]:
        i += 1
        try:
            with dynorm.capture() as c:
                V.objects.create(vid=f"n{i}", num=val)
            back = V.objects.get(vid=f"n{i}").num
            ok = back == val and (type(val) is not float or type(back) is float or D(back) == D(val))
            rep(ok, f"Number {val!r} round-trip", f"got {back!r}")
        except dynorm.ValidationError as e:
            ok = c.count == 0
            print(f"INFO refused Number {val!r}: {str(e)[:90]}")
        except Exception as e:
            rep(False, f"Number {val!r}", repr(e)[:200])
    for val in [D("1E+126"), D("1E-131"), 1e126, D("9.99999999999999999999999999999999999999E+125")]:
        i += 1
        with dynorm.capture() as c:
            try: V.objects.create(vid=f"n{i}", num=val); res = "accepted"
            except dynorm.ValidationError: res = "VE"
            except Exception as e: res = repr(e)[:150]
        rep(res == "VE" and c.count == 0, f"Number {val!r} refused before request", f"{res}, {c.count} req")
    tz = dt.timezone(dt.timedelta(hours=5)); tzm = dt.timezone(dt.timedelta(hours=-5))
    for val in [dt.datetime(1, 1, 1, 3, tzinfo=tz), dt.datetime(9999, 12, 31, 23, tzinfo=tzm), dt.datetime(204, 5, 1, tzinfo=dt.timezone.utc),
                dt.datetime(1, 1, 1, 10, tzinfo=tz), dt.datetime(2024, 1, 1, 12, 0, 0, 123456, tzinfo=tz), dt.datetime(2024, 1, 1, 12)]:
        i += 1
        with dynorm.capture() as c:
            try:
                V.objects.create(vid=f"d{i}", when=val); back = V.objects.get(vid=f"d{i}").when
                res = "ok"
            except dynorm.ValidationError as e: res = "VE"; back = None
            except Exception as e: res = repr(e)[:150]; back = None
        if res == "ok":
            rep(back == val or (val.tzinfo is None and back.replace(tzinfo=None) == val), f"DateTime {val!r} round trip", f"got {back!r}")
        else:
            print(f"INFO DateTime {val!r}: {res} {c.count} req")
    # map with nested decimals
    i += 1
    V.objects.create(vid="mp", m={"a": D("1234567890.123456789012345"), "b": [0.1, D("1E-130")], "c": {1.5}})
    back = V.objects.get(vid="mp").m
    rep(back["a"] == D("1234567890.123456789012345") and back["b"][0] == 0.1, "Map decimals round-trip", repr(back))
    print("INFO map back", back)
finally:
    teardown()
