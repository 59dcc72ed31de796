from common import *
from dynorm import Entity, Index, Table, fields
import dynorm
class T22(Table):
    class Meta:
        table_name = "p22"
        gsis = {"ByRegion": {"pk": {"tenant_id": "S"}, "sk": {"year": "N"}}}
class Film(Entity):
    tenant_id = fields.String()
    film_id = fields.String()
    year = fields.Integer(null=True)
    class Meta:
        table = T22
        pk = "T#{tenant_id}"
        sk = "F#{film_id}"
        indexes = {"by": Index("ByRegion", pk=("tenant_id",), sk=("year",))}
class Note(Entity):
    tenant_id = fields.String()
    note_id = fields.String()
    year = fields.String(null=True)
    class Meta:
        table = T22
        pk = "T#{tenant_id}"
        sk = "N#{note_id}"
print("INFO check:", T22.check())
T22.create_table(wait=True)
try:
    Note.objects.create(tenant_id="t", note_id="n", year="1999")
    r = raw_scan(T22)
    print("INFO note created:", r)
    out(False, "Note with year as S on a table whose GSI types year N", "write accepted by DynamoDB Local (real DynamoDB refuses)")
except Exception as e:
    out(True, f"Note.create refused: {type(e).__name__}: {str(e)[:150]}")
T22.delete_table()
