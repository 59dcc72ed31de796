import os, decimal
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
import dynorm
from dynorm import Entity, Table, fields, backend
dynorm.configure(endpoint=os.environ["DYNORM_ENDPOINT"])
D = decimal.Decimal
class T15(Table):
    class Meta:
        table_name = "adv11-t15"
class Nk(Entity):
    g = fields.String()
    v = fields.Number()
    class Meta:
        table = T15; entity_type = "NK"
        pk = "N#{g}"; sk = "V#{v}"
class Ik(Entity):
    g = fields.String()
    v = fields.Integer()
    class Meta:
        table = T15; entity_type = "IK"
        pk = "I#{g}"; sk = "V#{v}"
try: T15.delete_table()
except Exception: pass
T15.create_table()
tn = T15.table_name()
for E, vals in [(Nk, [D("1.000000000000000000000000000000000000001"), D("12345678901234567890123456789012345678.9"), 1e-130, 1e-131, 9.99e125, 1e126, D("-1E-130"), 0.1, 1/3, 2**70 + 0.0, D("1E+125")]),
                (Ik, [10**38 + 1, 10**38, -(10**38) - 1, 2**64, 10**125, 10**126])]:
    for v in vals:
        try:
            o = E.objects.create(g="g", v=v)
        except Exception as e:
            print(f"SAFE: {E.__name__} v={v!r} refused: {type(e).__name__}: {str(e)[:90]}")
            continue
        try:
            back = E.objects.get(g="g", v=o.v)
            raw = backend.call("GetItem", {"TableName": tn, "Key": E._meta.primary_key(o.attribute_values)})["Item"]
            same = D(str(back.v)) == D(str(v)) if not isinstance(v, float) else D(raw["v"]["N"]) == D(repr(v))
            back.save()
            print(("SAFE: " if same else "BUG: ") + f"{E.__name__} v={v!r}: stored {raw['v']['N']}, key {raw['SK']['S']}, read back {back.v!r}, save ok")
        except Exception as e:
            print(f"BUG: {E.__name__} v={v!r} acknowledged but read-back/get/save failed: {type(e).__name__}: {str(e)[:150]}")
