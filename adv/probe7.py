import os, datetime as dt, decimal, random, sys
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
import dynorm
from dynorm import Entity, Index, Q, Table, fields, backend
dynorm.configure(endpoint=os.environ["DYNORM_ENDPOINT"])
D = decimal.Decimal; utc = dt.timezone.utc
class T7(Table):
    class Meta:
        table_name = "adv11-t7"
        gsi_count = 1
class Acct(Entity):
    a = fields.String()
    name = fields.String(default="n")
    prio = fields.Integer(default=3)
    class Meta:
        table = T7; entity_type = "ACCT"
        pk = "A#{a}"; sk = "#META"
class Memb(Entity):
    a = fields.String()
    m = fields.String()
    prio = fields.Integer(default=3)
    owner = fields.Reference(Acct, null=True)
    class Meta:
        table = T7; entity_type = "MEMB"
        pk = "A#{a}"; sk = "M#{m}"
class Inv(Entity):
    a = fields.String()
    n = fields.Integer()
    prio = fields.Integer(default=3)
    class Meta:
        table = T7; entity_type = "INV"
        pk = "A#{a}"; sk = "I#{n:06d}"
class Free(Entity):  # sk starts with placeholder, shares partition
    a = fields.String()
    x = fields.String()
    prio = fields.Integer(default=3)
    class Meta:
        table = T7; entity_type = "FREE"
        pk = "A#{a}"; sk = "{x}"
def probe(label, ok, exp, got):
    print(("SAFE: " if ok else "BUG: ") + label + ("" if ok else f" (expected {exp!r}, got {got!r})"))
try: T7.delete_table()
except Exception: pass
T7.create_table()
R = random.Random(7)
acct = Acct.objects.create(a="1", name="A", prio=9)
ms = [Memb.objects.create(a="1", m=m, prio=R.randint(0, 5), owner=acct) for m in ["a", "a#", "a$", "b", "M", "\U0010ffff"]]
invs = [Inv.objects.create(a="1", n=n, prio=R.randint(0, 5)) for n in range(0, 40, 3)]
frees = [Free.objects.create(a="1", x=x, prio=R.randint(0, 5)) for x in ["#", "$", "I#000003", "M#a", "M#zz", "A", "\x01", "~", "I", "J"]]
backend.call("PutItem", {"TableName": T7.table_name(), "Item": {"PK": {"S": "A#1"}, "SK": {"S": "M#zzz"}, "entityType": {"S": "ALIEN"}, "m": {"S": "zzz"}, "a": {"S": "1"}}})
# raw table sort order
raw = backend.call("Query", {"TableName": T7.table_name(), "KeyConditionExpression": "PK = :p", "ExpressionAttributeValues": {":p": {"S": "A#1"}}})["Items"]
raw_types = [(i["entityType"]["S"], i["SK"]["S"]) for i in raw]
# per-entity filter
for E, objs, keyf in [(Memb, ms, lambda o: o.m), (Inv, invs, lambda o: o.n), (Free, frees, lambda o: o.x)]:
    exp = [keyf(o) for o in sorted(objs, key=lambda o: o.key_attributes()["SK"].encode())]
    got = [keyf(o) for o in E.objects.filter(a="1")]
    probe(f"{E.__name__} filter(a) only own type, order", got == exp, exp, got)
    probe(f"{E.__name__} count", E.objects.filter(a="1").count() == len(exp), len(exp), E.objects.filter(a="1").count())
    for sl in [(0, 3), (2, 5), (4, None)]:
        got = [keyf(o) for o in E.objects.filter(a="1")[sl[0]:sl[1]]]
        probe(f"{E.__name__} slice {sl}", got == exp[sl[0]:sl[1]], exp[sl[0]:sl[1]], got)
    got = [keyf(o) for o in E.objects.filter(a="1", prio__gte=3)]
    e2 = [keyf(o) for o in sorted(objs, key=lambda o: o.key_attributes()["SK"].encode()) if o.prio >= 3]
    probe(f"{E.__name__} prio>=3", got == e2, e2, got)
    got, c = [], None
    for _ in range(40):
        p = E.objects.filter(a="1", prio__gte=3).page(size=2, cursor=c); got += [keyf(o) for o in p]; c = p.cursor
        if c is None: break
    probe(f"{E.__name__} pages prio>=3", got == e2, e2, got)
    o = E.objects.filter(a="1").last()
    probe(f"{E.__name__} last()", (keyf(o) if o else None) == exp[-1], exp[-1], keyf(o) if o else None)
    probe(f"{E.__name__} latest()", keyf(E.objects.filter(a="1").latest()) == exp[-1], exp[-1], keyf(E.objects.filter(a="1").latest()))
    probe(f"{E.__name__} earliest()", keyf(E.objects.filter(a="1").earliest()) == exp[0], exp[0], keyf(E.objects.filter(a="1").earliest()))
# collection
col = list(Acct.objects.collection(a="1"))
probe("collection returns every raw item", len(col) == len(raw), len(raw), len(col))
probe("collection count", Acct.objects.collection(a="1").count() == len(raw), len(raw), Acct.objects.collection(a="1").count())
for E, objs in [(Memb, ms), (Inv, invs), (Free, frees), (Acct, [acct])]:
    try:
        got = sorted(o.key_attributes()["SK"] for o in Acct.objects.collection(a="1").of(E))
        exp = sorted(o.key_attributes()["SK"] for o in objs)
        probe(f"collection.of({E.__name__})", got == exp and all(type(o) is E for o in Acct.objects.collection(a="1").of(E)), exp, got)
    except Exception as e:
        print(f"INFO collection.of({E.__name__}) raised {type(e).__name__}: {str(e)[:120]}")
    try:
        n = Acct.objects.collection(a="1").of(E).count(); probe(f"collection.of({E.__name__}).count", n == len(objs), len(objs), n)
    except Exception as e: print(f"INFO of().count raised {type(e).__name__}")
got, c = [], None
for _ in range(60):
    p = Acct.objects.collection(a="1").page(size=3, cursor=c); got += [o.key_attributes()["SK"] if hasattr(o, "key_attributes") else "?" for o in p]; c = p.cursor
    if c is None: break
probe("collection page loop count", len(got) == len(raw), len(raw), len(got))
try:
    r = Acct.objects.collection(a="1").of(Memb).page(size=3, cursor=Acct.objects.collection(a="1").page(size=3).cursor)
    print("BUG: collection cursor accepted on .of(Memb)")
except dynorm.InvalidCursor: print("SAFE: collection cursor refused on of()")
# only()
o = Memb.objects.filter(a="1").only("m").first()
with dynorm.capture() as c:
    p = o.prio
probe("only(): deferred prio loaded with GetItem", p == ms[0].prio if True else None, None, p)
exp0 = sorted(ms, key=lambda o: o.key_attributes()["SK"].encode())[0]
probe("only(): deferred loaded value", p == exp0.prio and c.operations == ["GetItem"], (exp0.prio, ["GetItem"]), (p, c.operations))
o2 = Memb.objects.filter(a="1").only("m").first()
Memb.objects.filter(a="1", m=o2.m).update(prio=77)
Memb.objects.get(a="1", m=o2.m).delete()
try:
    v = o2.prio; print(f"BUG?: deferred field of deleted item returned {v!r} (expected an error)")
except Exception as e: print("SAFE: deferred load of deleted item raised", type(e).__name__)
try:
    o3 = Memb.objects.filter(a="1").only("m")[0]; o3.save(); print("BUG: save() on only() instance accepted")
except Exception as e: print("SAFE: save on only() refused", type(e).__name__)
vals = Memb.objects.filter(a="1").only("prio").values()
print("INFO only().values() keys:", sorted(vals[0]))
# prefetch on page/get/iterator
for path in ["page", "get", "iterator", "first"]:
    with dynorm.capture() as c:
        qs = Memb.objects.filter(a="1").prefetch("owner")
        if path == "page": objs = qs.page(size=3).items
        elif path == "get": objs = [qs.get(m="b")]
        elif path == "iterator": objs = list(qs.iterator())
        else: objs = [qs.first()]
    n0 = c.count
    with dynorm.capture() as c2:
        names = [ob.owner.name if hasattr(ob.owner, "name") else ob.owner for ob in objs]
    probe(f"prefetch on {path}: no request on touch", c2.count == 0 and all(n == "A" for n in names), (0, "A"), (c2.count, names[:2]))
