import pytest, dynorm
from dynorm import Entity, fields
from tests.models import Retail

class LsiS(Entity):
    lid = fields.String()
    label = fields.String(null=True, attr_name="placed_at")
    class Meta:
        table = Retail
        entity_type = "A9_LSIS"
        pk = "{version}#A9L#{lid}"
        sk = "M"

@pytest.fixture(autouse=True)
def _t(dynorm_tables):
    return dynorm_tables

def _try(fn):
    with dynorm.capture() as c:
        try:
            fn(); return "accepted", c.count
        except dynorm.ValidationError:
            return "VE", c.count
        except Exception as e:
            return repr(e)[:150], c.count

def test_probe():
    out = []
    out.append(("create lsi 1100", _try(lambda: LsiS.objects.create(lid="a", label="x" * 1100))))
    LsiS.objects.create(lid="b", label="ok")
    o = LsiS.objects.get(lid="b")
    out.append(("update lsi 1100", _try(lambda: o.update(label="x" * 1100))))
    o = LsiS.objects.get(lid="b"); o.label = "y" * 1100
    out.append(("save update_fields lsi 1100", _try(lambda: o.save(update_fields=["label"]))))
    o = LsiS.objects.get(lid="b"); o.label = "y" * 1100
    out.append(("save lsi 1100", _try(lambda: o.save())))
    out.append(("qs update lsi", _try(lambda: LsiS.objects.filter(lid="b").update(label="z" * 1100))))
    out.append(("create pk 1500 (INV sort key)", _try(lambda: LsiS.objects.create(lid="p" * 1500))))
    out.append(("bulk_create lsi", _try(lambda: LsiS.objects.bulk_create([LsiS(lid="q", label="x" * 1100)]))))
    def tx():
        with dynorm.transaction() as t:
            t.update(LsiS.objects.get(lid="b"), label="w" * 1100)
    out.append(("tx update lsi", _try(tx)))
    for o in out:
        print(("SAFE: " if o[1] == ("VE", 0) else "BUG: ") + o[0] + ("" if o[1] == ("VE", 0) else f" (expected VE before request, got {o[1]})"))
