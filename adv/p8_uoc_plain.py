from common import *
from dynorm import Entity, Index, Table, fields
import dynorm
class T8(Table):
    class Meta:
        table_name = "p8"
class P(Entity):
    pid = fields.String()
    size = fields.Integer(null=True)
    note = fields.String(null=True)
    class Meta:
        table = T8
        pk = "P#{pid}"
        sk = "M"
T8.create_table(wait=True)
P.objects.create(pid="a", size=5, note="cur")
for fn in ("get_or_create", "update_or_create"):
    with dynorm.capture() as cap:
        try:
            r = getattr(P.objects, fn)(pid="a", size=2, defaults={"note": "x"})
            print(f"INFO {fn}: returned {r}")
        except Exception as e:
            print(f"INFO {fn}: {type(e).__name__}: {e} requests={cap.operations}")
T8.delete_table()
