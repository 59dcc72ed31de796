"""Planner differential: random filter combos over a model with primary, template GSI and multi GSI."""
from common import *
from decimal import Decimal as D
from dynorm import Entity, Index, Table, fields, InvalidQuery, ScanRequired, Q
import dynorm, time

class T2(Table):
    class Meta:
        table_name = "p2"
        gsis = {"GSI1": ("GSI1PK", "GSI1SK"),
                "ByRegion": {"pk": {"tenant_id": "S", "region": "S"}, "sk": {"year": "N", "title": "S"}}}

class Film(Entity):
    tenant_id = fields.String()
    film_id = fields.String()
    region = fields.String(null=True)
    year = fields.Integer(null=True)
    title = fields.String(null=True)
    rating = fields.Number(null=True)
    class Meta:
        table = T2
        entity_type = "film"
        pk = "T#{tenant_id}"
        sk = "F#{film_id}"
        indexes = {"by_region": Index("ByRegion", pk=("tenant_id", "region"), sk=("year", "title")),
                   "by_text": Index("GSI1", pk="T#{tenant_id}#R#{region}", sk="Y#{year}#{title}")}

class Note(Entity):
    tenant_id = fields.String()
    film_id = fields.String()
    region = fields.String(null=True)
    year = fields.Integer(null=True)
    title = fields.String(null=True)
    class Meta:
        table = T2
        entity_type = "note"
        pk = "T#{tenant_id}"
        sk = "N#{film_id}"
        indexes = {"by_region": Index("ByRegion", pk=("tenant_id", "region"), sk=("year", "title"))}

T2.create_table(wait=True)
random.seed(2)
regions = ["eu", "us", "e", "eu#"]
years = [-5, 0, 10, 1999, 2001, 2024, 10**20]
titles = ["A", "Alpha", "B", "Beta", "a", "\U0010FFFF", "A#B", "A$"]
rows = []
for i in range(120):
    d = dict(tenant_id=random.choice(["t1", "t2"]), film_id=f"f{i:03d}", region=random.choice(regions + [None]),
             year=random.choice(years + [None]), title=random.choice(titles + [None]), rating=random.choice([1, 2.5, None]))
    Film.objects.create(**d)
    rows.append(d)
for i in range(20):
    Note.objects.create(tenant_id="t1", film_id=f"n{i}", region="eu", year=random.choice(years), title=random.choice(titles))
# a foreign item (undeclared type) holding the key attributes
backend.call("PutItem", {"TableName": T2.table_name(), "Item": {"PK": {"S": "T#t1"}, "SK": {"S": "Z#1"}, "entityType": {"S": "ghost"},
    "tenant_id": {"S": "t1"}, "region": {"S": "eu"}, "year": {"N": "2001"}, "title": {"S": "Alpha"}, "film_id": {"S": "ghost"}}})

def u8(s): return s.encode()
OPS = {"exact": lambda a, b: a == b, "gt": lambda a, b: a > b, "gte": lambda a, b: a >= b, "lt": lambda a, b: a < b,
       "lte": lambda a, b: a <= b, "begins_with": lambda a, b: a.startswith(b), "ne": lambda a, b: a != b}
def vals(f):
    return {"tenant_id": ["t1", "t2"], "film_id": ["f001", "f050", "f100"], "region": regions, "year": years,
            "title": titles, "rating": [1, 2.5]}[f]
def match(r, f, lk, v):
    x = r[f]
    if lk == "ne":
        return x != v  # dynamo: attribute missing -> <> true
    if x is None: return False
    if lk == "begins_with" and not isinstance(x, str): return False
    if isinstance(x, str): return OPS[lk](u8(x), u8(v)) if lk not in ("begins_with", "exact") else OPS[lk](x, v)
    return OPS[lk](D(str(x)), D(str(v)))

bugs = 0; n_ok = 0; refused = 0
t0 = time.time()
for trial in range(int(os.environ.get('N', 400))):
    if time.time() - t0 > 240: break
    fs = random.sample(["film_id", "year", "title", "rating"], random.randint(0, 3))
    conds = [("tenant_id", "exact", random.choice(["t1", "t2"]))]
    if random.random() < 0.8: conds.append(("region", "exact", random.choice(regions)))
    for f in fs:
        lks = ["exact"] * 4 + ["gt", "gte", "lt", "lte", "ne"] + (["begins_with"] if f in ("title", "region", "film_id") else [])
        conds.append((f, random.choice(lks), random.choice(vals(f))))
    kw = {f"{f}__{lk}" if lk != "exact" else f: v for f, lk, v in conds}
    qs = Film.objects.filter(**kw)
    exq = None
    if random.random() < 0.5:
        ef = random.choice(["year", "title", "rating", "film_id", "region"])
        ev = random.choice(vals(ef))
        if random.random() < 0.5:
            qs = qs.exclude(**{ef: ev}); exq = ("ex", ef, ev)
        else:
            ev2 = random.choice(vals(ef)); qs = qs.filter(Q(**{ef: ev}) | Q(**{ef: ev2})); exq = ("or", ef, ev, ev2)
    ob = random.choice([None, None, "year", "-year", "title", ("year", "title"), ("-year", "-title"), "rev"])
    if ob == "rev": qs = qs.reverse()
    elif isinstance(ob, tuple): qs = qs.order_by(*ob)
    elif ob: qs = qs.order_by(ob)
    try:
        plan = qs.explain()
    except (InvalidQuery, ScanRequired) as e:
        refused += 1
        continue
    with dynorm.capture() as cap:
        try:
            got = [f.film_id for f in qs]
        except Exception as e:
            print(f"BUG: {kw} {exq} {ob} raised {type(e).__name__}: {e}"); bugs += 1; continue
    exp = [r for r in rows if all(match(r, f, lk, v) for f, lk, v in conds)]
    if exq and exq[0] == "ex": exp = [r for r in exp if not (r[exq[1]] is not None and match(r, exq[1], "exact", exq[2]))]
    if exq and exq[0] == "or": exp = [r for r in exp if r[exq[1]] is not None and (match(r, exq[1], "exact", exq[2]) or match(r, exq[1], "exact", exq[3]))]
    if plan.index in ("GSI1", "ByRegion"):
        exp = [r for r in exp if all(r[k] is not None for k in ("region", "year", "title"))]
    if sorted(got) != sorted(r["film_id"] for r in exp):
        print(f"BUG: {kw} {exq} {ob} plan={plan.operation} {plan.index} (expected {sorted(r['film_id'] for r in exp)}, got {sorted(got)})"); bugs += 1; continue
    # order check
    if ob and ob != "rev":
        names = ob if isinstance(ob, tuple) else (ob,)
        desc = names[0].startswith("-")
        keyf = lambda fid: tuple((lambda x: u8(x) if isinstance(x, str) else D(str(x)))(next(r for r in rows if r["film_id"] == fid)[n.lstrip("-")]) for n in names)
        ks = [keyf(g) for g in got]
        if ks != sorted(ks, reverse=desc):
            print(f"BUG: order {kw} {exq} {ob} not ordered: {got}"); bugs += 1; continue
    # explain vs sent
    if cap.requests and cap.requests[0].operation != plan.operation:
        print(f"BUG: explain {plan.operation} but sent {cap.requests[0].operation} for {kw}"); bugs += 1; continue
    if cap.requests and plan.operation != "GetItem" and cap.requests[0].params.get("IndexName") != plan.index:
        print(f"BUG: explain index {plan.index} but sent {cap.requests[0].params.get('IndexName')}"); bugs += 1; continue
    # count / exists / first / last
    try:
        c = qs.count(); e = qs.exists(); fi = qs.first()
        la = qs.last() if ob else None
    except Exception as ex:
        print(f"BUG: {kw} {exq} {ob} count/exists/first raised {type(ex).__name__}: {ex}"); bugs += 1; continue
    if c != len(got) or e != bool(got) or (fi.film_id if fi else None) != (got[0] if got else None):
        print(f"BUG: {kw} {exq} {ob} count={c} exists={e} first={fi and fi.film_id} vs list {got}"); bugs += 1; continue
    if ob and (la.film_id if la else None) != (got[-1] if got else None):
        # ties may differ only if same sort key
        print(f"NOTE: last {kw} {exq} {ob} {la and la.film_id} vs {got[-1:]}")
    n_ok += 1
print(f"SAFE: planner differential ok={n_ok} refused={refused} bugs={bugs}")
T2.delete_table()
