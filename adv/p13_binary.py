"""Binary attributes in partition and sort keys: equality, between, pages and cursors."""
from common import *
from dynorm import Entity, Index, Table, fields
import dynorm, asyncio

class T13(Table):
    class Meta:
        table_name = "p13"
        gsis = {"ByB": {"pk": {"owner": "B"}, "sk": {"digest": "B", "n": "N"}}}
class Blob(Entity):
    bid = fields.String()
    owner = fields.Binary(null=True)
    digest = fields.Binary(null=True)
    n = fields.Integer(null=True)
    class Meta:
        table = T13
        pk = "B#{bid}"
        sk = "M"
        indexes = {"by_b": Index("ByB", pk=("owner",), sk=("digest", "n"))}
T13.create_table(wait=True)
owners = [b"\x00", b"\x00\x00", b"\xff", b"o"]
digs = [b"\x00", b"\x00\x00", b"\x00\x01", b"\x7f", b"\x80", b"\xff", b"\xff\xff", b"a"]
rows = []
i = 0
for o in owners:
    for d in digs:
        for n in (-1, 0, 2):
            Blob.objects.create(bid=f"b{i}", owner=o, digest=d, n=n); rows.append((o, d, n, f"b{i}")); i += 1
def exp(o, pred):
    return [r[3] for r in sorted([r for r in rows if r[0] == o and pred(r)], key=lambda r: (r[1], r[2]))]
for o in owners:
    qs = Blob.objects.filter(owner=o).order_by("digest", "n")
    got = [b.bid for b in qs]
    out(got == exp(o, lambda r: True), f"owner={o!r} all ordered", f"{got[:5]} vs {exp(o, lambda r: True)[:5]}")
    for lo, hi in [(b"", b"\x00"), (b"\x00", b"\x00\x01"), (b"\x7f", b"\xff"), (b"", b"\xff\xff")]:
        try:
            got = [b.bid for b in Blob.objects.filter(owner=o, digest__between=(lo, hi)).order_by("digest", "n")]
            out(got == exp(o, lambda r: lo <= r[1] <= hi), f"owner={o!r} between {lo!r},{hi!r}", f"{got} vs {exp(o, lambda r: lo <= r[1] <= hi)}")
        except Exception as e:
            out(False, f"between {lo!r},{hi!r}", f"{type(e).__name__}: {e}")
    got = [b.bid for b in Blob.objects.filter(owner=o, digest=b"\x00", n__gte=0)]
    out(got == exp(o, lambda r: r[1] == b"\x00" and r[2] >= 0), f"owner={o!r} digest=00 n>=0")
    seen, cur, k = [], None, 0
    while k < 50:
        p = qs.page(size=4, cursor=cur); seen += [b.bid for b in p.items]; cur = p.cursor; k += 1
        if not cur: break
    out(seen == exp(o, lambda r: True), f"owner={o!r} pages", f"{seen}")
    rev = [b.bid for b in qs.reverse()]
    out(rev == exp(o, lambda r: True)[::-1], f"owner={o!r} reverse")
T13.delete_table()
