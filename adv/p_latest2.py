import os, uuid
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8612")
import dynorm
from dynorm import Entity, Table, fields
class T(Table):
    class Meta: table_name = f"advl-{uuid.uuid4().hex[:6]}"
class R(Entity):
    sensor = fields.String(); year = fields.Integer(); seq = fields.Integer()
    class Meta:
        table = T; pk = "S#{sensor}"; sk = "Y#{year:04d}#{seq:06d}"
T.create_table()
def p(ok, what, detail=""):
    print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" ({detail})"))
R.objects.bulk_create([R(sensor="s", year=2020 + i % 3, seq=i) for i in range(5)])
qs = R.objects.filter(sensor="s")
for f, exp in [("seq", 4), ("year", 2022)]:
    try:
        o = qs.latest(f); got = getattr(o, f)
        p(got == exp, f"latest('{f}') on sk Y#{{year}}#{{seq}}", f"expected max {f}={exp}, got {got} (item year={o.year} seq={o.seq})")
    except dynorm.InvalidQuery as e: p(True, f"latest('{f}') refused: {str(e)[:80]}")
try:
    o = qs.earliest("seq"); p(o.seq == 0, "earliest('seq')", o.seq)
except dynorm.InvalidQuery as e: p(True, "earliest('seq') refused")
T.delete_table()
