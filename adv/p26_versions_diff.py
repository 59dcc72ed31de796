"""Random filters on a versioned entity with copies, read through primary and a multi-attribute GSI."""
from common import *
from dynorm import Entity, Index, Table, fields, InvalidQuery, ScanRequired
import dynorm, time
class Rolls(Table):
    class Meta:
        table_name = "p26"
        gsis = {"ByMaker": {"pk": {"maker": "S"}, "sk": {"size": "N", "note": "S"}}}
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
        indexes = {"by_maker": Index("ByMaker", pk=("maker",), sk=("size", "note"))}
Rolls.create_table(wait=True)
def put(version, rid, size, note):
    backend.call("PutItem", {"TableName": Rolls.table_name(), "Item": {"PK": {"S": f"{version}#R#{rid}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
          "roll_id": {"S": rid}, "maker": {"S": "m"}, "size": {"N": str(size)}, "note": {"S": note}}})
random.seed(26)
logical = {}
for i in range(30):
    rid = f"r{i:02d}"; kind = random.choice(["cur", "old", "both", "anc"])
    s, n = random.randint(0, 4), random.choice(["a", "b", "ab"])
    s2, n2 = random.randint(0, 4), random.choice(["a", "b", "ab"])
    if kind in ("cur", "both"): put("v3", rid, s, n); logical[rid] = (s, n)
    if kind == "both": put("v2", rid, s2, n2)
    if kind == "old": put("v2", rid, s, n); logical[rid] = (s, n)
    if kind == "anc": put("v1", rid, s, n)
bugs = {}
for t in range(250):
    conds = [("maker", "exact", "m")] if random.random() < 0.85 else []
    if random.random() < 0.4: conds.append(("roll_id", "exact", random.choice(list(logical) + ["r99"])))
    if random.random() < 0.6: conds.append(("size", random.choice(["exact", "gte", "lt"]), random.randint(0, 4)))
    if random.random() < 0.4: conds.append(("note", random.choice(["exact", "begins_with"]), random.choice(["a", "b", "ab"])))
    kw = {f if lk == "exact" else f"{f}__{lk}": v for f, lk, v in conds}
    if not kw: continue
    qs = Roll.objects.filter(**kw)
    try:
        plan = qs.explain()
    except (InvalidQuery, ScanRequired):
        continue
    got = sorted(r.roll_id for r in qs)
    def m(rid, vals):
        s, n = vals
        for f, lk, v in conds:
            x = {"maker": "m", "roll_id": rid, "size": s, "note": n}[f]
            if lk == "exact" and x != v: return False
            if lk == "gte" and not x >= v: return False
            if lk == "lt" and not x < v: return False
            if lk == "begins_with" and not x.startswith(v): return False
        return True
    exp = sorted(rid for rid, vals in logical.items() if m(rid, vals))
    if got != exp:
        key = (plan.operation, plan.index)
        bugs.setdefault(key, []).append((kw, exp, got))
    # get() agreement when exactly one expected
    if len(exp) == 1:
        try:
            g = Roll.objects.get(**kw).roll_id
        except Exception as e:
            g = type(e).__name__
        if g != exp[0]:
            bugs.setdefault(("get",) + (plan.operation,), []).append((kw, exp, g))
for k, v in bugs.items():
    print(f"BUG: {k}: {len(v)} mismatches, e.g. {v[:2]}")
if not bugs: print("SAFE: versioned differential")
Rolls.delete_table()
