"""Differential: multi-attribute GSI queries vs brute force over adversarial values."""
from common import *
from decimal import Decimal as D
from dynorm import Entity, Index, Table, fields, InvalidQuery
import dynorm

class T1(Table):
    class Meta:
        table_name = "p1"
        gsis = {"GIX": {"pk": {"tenant": "S"}, "sk": {"score": "N", "name": "S"}},
                "GBX": {"pk": {"tenant": "S"}, "sk": {"blob": "B"}}}

class Row(Entity):
    tenant = fields.String()
    rid = fields.String()
    score = fields.Number(null=True)
    name = fields.String(null=True)
    blob = fields.Binary(null=True)
    class Meta:
        table = T1
        pk = "R#{tenant}"
        sk = "I#{rid}"
        indexes = {"g": Index("GIX", pk=("tenant",), sk=("score", "name")),
                   "gb": Index("GBX", pk=("tenant",), sk=("blob",))}

T1.create_table(wait=True)
nums = [0, -0.0, D("-0"), 1, -1, D("1.5"), D("1.50"), D("-1.5"), 10**37, -10**37, D("9.9999999999999999999999999999999999999E+125"),
        D("-9.9999999999999999999999999999999999999E+125"), D("1E-130"), D("-1E-130"), D("12345678901234567890123456789012345678"),
        D("0.12345678901234567890123456789012345678"), 2**63, -(2**63), 0.1, 1e20]
names = ["", "a", "a#", "a$", "a%", "\U0010FFFF", "\uffff", "\u00e9", "A", "a\x00", "ab", "a b", "z"*5, "\U0001F600"]
blobs = [b"\x00", b"\x00\x00", b"\xff", b"\xff\x00", b"\x7f", b"\x80", b"a", b"ab"]
random.seed(1)
stored = {}
i = 0
for s in nums:
    for n in random.sample(names, 4):
        rid = f"r{i}"; i += 1
        try:
            Row.objects.create(tenant="t", rid=rid, score=s, name=(n or None), blob=random.choice(blobs + [None]))
        except Exception as e:
            out(False, f"create score={s!r} name={n!r}", f"{type(e).__name__}: {e}")
raw = [it for it in raw_scan(T1)]
def num(it): return D(it["score"]["N"]) if "score" in it else None
def nm(it): return it["name"]["S"] if "name" in it else None
def key_u8(s): return s.encode("utf-8")
inidx = [it for it in raw if "score" in it and "name" in it]
def bf(pred, rev=False):
    sel = [it for it in inidx if pred(it)]
    sel.sort(key=lambda it: (num(it), key_u8(nm(it)), it["PK"]["S"].encode(), it["SK"]["S"].encode()))
    # ties in the index: order among same (score,name) undefined -> compare as multiset for ties
    return sel[::-1] if rev else sel
def ids(items): return [it["rid"]["S"] for it in items]
def cmp(what, qs, pred, rev=False):
    try:
        got = [r.rid for r in qs]
    except Exception as e:
        out(False, what, f"{type(e).__name__}: {e}"); return
    exp = ids(bf(pred, rev))
    # ties: compare sort keys sequence & set
    keyof = {it["rid"]["S"]: (num(it), key_u8(nm(it))) for it in inidx}
    ok = sorted(got) == sorted(exp) and [keyof.get(g) for g in got] == [keyof[e] for e in exp]
    out(ok, what, f"expected {exp[:6]}.. n={len(exp)}, got {got[:6]}.. n={len(got)}")
    try:
        c = qs.count()
        out(c == len(exp), what + " count()", f"expected {len(exp)} got {c}")
    except Exception as e:
        out(False, what + " count()", f"{type(e).__name__}: {e}")

base = Row.objects.filter(tenant="t")
cmp("all by score,name", base.order_by("score", "name"), lambda it: True)
cmp("reverse", base.order_by("-score", "-name"), lambda it: True, rev=True)
for v in [0, D("-0"), -1, D("1.5"), 10**37, D("1E-130"), D("-1E-130"), 0.1, D("0.1")]:
    for lk, f in [("gt", lambda a, b: a > b), ("gte", lambda a, b: a >= b), ("lt", lambda a, b: a < b), ("lte", lambda a, b: a <= b)]:
        cmp(f"score__{lk}={v!r}", base.filter(**{f"score__{lk}": v}).order_by("score", "name"), lambda it, v=v, f=f: f(num(it), D(str(v))))
    cmp(f"score={v!r}", base.filter(score=v).order_by("score", "name"), lambda it, v=v: num(it) == D(str(v)))
    for n in names:
        if n:
            cmp(f"score={v!r} name={n!r}", base.filter(score=v, name=n), lambda it, v=v, n=n: num(it) == D(str(v)) and nm(it) == n)
    for n in ["a", "\U0010FFFF", "a#", "\uffff"]:
        cmp(f"score={v!r} name__begins_with={n!r}", base.filter(score=v, name__begins_with=n), lambda it, v=v, n=n: num(it) == D(str(v)) and nm(it).startswith(n))
        cmp(f"score={v!r} name__gt={n!r}", base.filter(score=v, name__gt=n), lambda it, v=v, n=n: num(it) == D(str(v)) and key_u8(nm(it)) > key_u8(n))
cmp("between(-1,1.5)", base.filter(score__between=(-1, D("1.5"))).order_by("score"), lambda it: D(-1) <= num(it) <= D("1.5"))
# blobs
rawb = [it for it in raw if "blob" in it]
for v in [b"\x00", b"\x7f", b"\xff", b"\xff\x00", b"a"]:
    for lk, f in [("gt", lambda a, b: a > b), ("gte", lambda a, b: a >= b), ("lt", lambda a, b: a < b), ("lte", lambda a, b: a <= b)]:
        qs = Row.objects.filter(tenant="t", **{f"blob__{lk}": v}).order_by("blob")
        try:
            got = [r.blob for r in qs]
        except Exception as e:
            out(False, f"blob__{lk}={v!r}", f"{type(e).__name__}: {e}"); continue
        exp = sorted(bytes(it["blob"]["B"]) for it in rawb if f(bytes(it["blob"]["B"]), v))
        out(got == exp, f"blob__{lk}={v!r}", f"expected {exp} got {got}")
T1.delete_table()
