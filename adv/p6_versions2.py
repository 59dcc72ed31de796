"""Versioned copies through a multi-attribute GSI: only()/values()/iterator()/page()/slices/last()/async."""
from common import *
from dynorm import Entity, Index, Table, fields
import dynorm, asyncio

class Rolls(Table):
    class Meta:
        table_name = "p6"
        gsis = {"ByMaker": {"pk": {"maker": "S"}, "sk": {"size": "N"}}}

class Roll(Entity):
    roll_id = fields.String()
    maker = fields.String(null=True)
    size = fields.Integer(null=True)
    note = fields.String(null=True)
    class Meta:
        table = Rolls
        entity_type = "ROLL"
        key_version = "v3"
        read_versions = ["v3", "v2"]
        pk = "{version}#R#{roll_id}"
        sk = "METADATA"
        indexes = {"by_maker": Index("ByMaker", pk=("maker",), sk=("size",))}
Rolls.create_table(wait=True)
def put(version, rid, size, note):
    backend.call("PutItem", {"TableName": Rolls.table_name(), "Item": {"PK": {"S": f"{version}#R#{rid}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
          "roll_id": {"S": rid}, "maker": {"S": "m"}, "size": {"N": str(size)}, "note": {"S": note}}})
random.seed(6)
expect = {}
for i in range(40):
    rid = f"r{i:02d}"
    kind = random.choice(["cur", "old", "both_same", "both_diff", "ancient", "cur+ancient"])
    s = random.randint(0, 9)
    if kind == "cur": put("v3", rid, s, "cur"); expect[rid] = (s, "cur")
    elif kind == "old": put("v2", rid, s, "old"); expect[rid] = (s, "old")
    elif kind == "both_same": put("v3", rid, s, "cur"); put("v2", rid, s, "old"); expect[rid] = (s, "cur")
    elif kind == "both_diff": s2 = random.randint(0, 9); put("v3", rid, s, "cur"); put("v2", rid, s2, "old"); expect[rid] = (s, "cur")
    elif kind == "ancient": put("v1", rid, s, "anc")
    else: put("v3", rid, s, "cur"); put("v1", rid, s, "anc"); expect[rid] = (s, "cur")
def exp_for(pred):
    return sorted([(v[0], k, v[1]) for k, v in expect.items() if pred(v[0])])
qs = Roll.objects.filter(maker="m")
def cmp(label, got, pred, rev=False):
    e = exp_for(pred)
    if rev: e = e[::-1]
    gs = [(g.size, g.roll_id, g.note) for g in got]
    # ties on size: compare multiset per size + size sequence
    ok = sorted(gs) == sorted(e) and [x[0] for x in gs] == [x[0] for x in e]
    out(ok, label, f"expected n={len(e)} {e[:5]}, got n={len(gs)} {gs[:5]}")
cmp("list", list(qs), lambda s: True)
cmp("reverse", list(qs.reverse()), lambda s: True, rev=True)
cmp("size__gte=5", list(qs.filter(size__gte=5)), lambda s: s >= 5)
cmp("iterator", list(qs.iterator()), lambda s: True)
cmp("only(note)", list(qs.only("note")), lambda s: True)
vals = qs.values("roll_id", "note")
out(sorted((v["roll_id"], v["note"]) for v in vals) == sorted((k, v[1]) for k, v in expect.items()), "values(roll_id, note)", f"{vals[:4]}")
out(qs.count() == len(expect), "count", f"{qs.count()} vs {len(expect)}")
out(qs.filter(size__lt=3).count() == len(exp_for(lambda s: s < 3)), "count size<3")
full = list(qs)
for a, b in [(0, 3), (2, 7), (5, 40), (10, 11)]:
    got = list(qs[a:b])
    out([(g.roll_id) for g in got] == [g.roll_id for g in full[a:b]] or [g.size for g in got] == [g.size for g in full[a:b]], f"slice [{a}:{b}]", f"{[g.roll_id for g in got]} vs {[g.roll_id for g in full[a:b]]}")
for size in (1, 3, 7):
    seen, cur, n = [], None, 0
    while n < 100:
        p = qs.page(size=size, cursor=cur); seen += p.items; cur = p.cursor; n += 1
        if not cur: break
    cmp(f"pages size={size}", seen, lambda s: True)
f, l = qs.first(), qs.last()
out(f.size == full[0].size and l.size == full[-1].size, "first/last")
out(qs.filter(size=99).exists() is False and qs.exists(), "exists")
async def am():
    return await qs.acount(), [x async for x in qs], await qs.afirst(), await qs.alast()
c, lst, af, al = asyncio.run(am())
out(c == len(expect), "acount"); cmp("async for", lst, lambda s: True)
out(af.size == full[0].size and al.size == full[-1].size, "afirst/alast")
# in_bulk / get by index
try:
    for rid, (s, note) in list(expect.items())[:10]:
        g = Roll.objects.get(roll_id=rid)
        assert (g.size, g.note) == (s, note), (rid, g.size, g.note, s, note)
    out(True, "get(roll_id) agrees")
except AssertionError as e:
    out(False, "get(roll_id)", str(e))
Rolls.delete_table()
