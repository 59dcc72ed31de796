"""attr_name vs multi-attribute GSI attribute names."""
from common import *
from dynorm import Entity, Index, Table, fields, ModelError
import dynorm

class T9(Table):
    class Meta:
        table_name = "p9"
        gsis = {"BySize": {"pk": {"maker": "S"}, "sk": {"size": "N"}},
                "BySz": {"pk": {"mk": "S"}, "sk": {"sz": "N"}}}
try:
    class W(Entity):
        wid = fields.String()
        maker = fields.String()
        size = fields.Integer(attr_name="sz", null=True)
        class Meta:
            table = T9
            pk = "W#{wid}"
            sk = "M"
            indexes = {"by_size": Index("BySize", pk=("maker",), sk=("size",))}
    problems = T9.check()
    print("INFO check():", problems)
    T9.create_table(wait=True)
    W.objects.create(wid="a", maker="m", size=3)
    got = [w.wid for w in W.objects.filter(maker="m")]
    print("INFO plan:", W.objects.filter(maker="m").explain().readable(W.objects.filter(maker="m").explain().key_condition))
    out(got == ["a"] or problems, "field stored as sz bound to GSI attribute size", f"no check problem and query returns {got}")
    T9.delete_table()
except ModelError as e:
    out(True, f"refused at class creation: {e}")
