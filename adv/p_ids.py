import os, uuid
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8612")
import dynorm
from dynorm import Entity, Table, fields, capture
sfx = uuid.uuid4().hex[:6]
class T(Table):
    class Meta: table_name = f"advi-{sfx}"
class One(Entity):
    num = fields.Integer(); name = fields.String(null=True)
    class Meta:
        table = T; pk = "O#{num}"; sk = "O"
class Two(Entity):
    a = fields.String(); b = fields.String()
    class Meta:
        table = T; pk = "A#{a}"; sk = "B#{b}"
T.create_table()
def p(ok, what, detail=""):
    print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" ({detail})"))
for i in range(5): One(num=i, name=f"n{i}").save()
for a in ("x", "x#y"): 
    for b in ("", "1", "y#1"):
        try: Two(a=a, b=b).save()
        except dynorm.DynormError as e: print("   save Two", repr(a), repr(b), type(e).__name__)
def probe(what, fn, check):
    try:
        with capture() as c: r = fn()
        ok, exp = check(r)
        p(ok, what, f"expected {exp}, got {r!r}"[:200])
    except dynorm.DynormError as e:
        print(f"   {what}: {type(e).__name__}: {str(e)[:120]} (requests {c.count if 'c' in dir() else '?'})")
    except Exception as e:
        p(False, what, f"non-dynorm {type(e).__name__}: {str(e)[:150]}")
probe("in_bulk(['1']) str for int key", lambda: One.objects.in_bulk(["1"]), lambda r: (list(r) in ([1], ["1"]) or r == {}, "{1: obj} or a ValidationError"))
probe("in_bulk([None])", lambda: One.objects.in_bulk([None]), lambda r: (r == {}, "{} or error"))
probe("in_bulk([1.5])", lambda: One.objects.in_bulk([1.5]), lambda r: (r == {}, "{} or error"))
probe("in_bulk([True])", lambda: One.objects.in_bulk([True]), lambda r: (1 not in r, "no item 1 for True"))
probe("in_bulk range(5)", lambda: One.objects.in_bulk(range(5)), lambda r: (sorted(r) == list(range(5)), "0..4"))
probe("in_bulk 150 ids", lambda: One.objects.in_bulk(range(150)), lambda r: (sorted(r) == list(range(5)), "0..4"))
probe("in_bulk(('x',)) wrong tuple len", lambda: Two.objects.in_bulk([("x",)]), lambda r: (False, "an error"))
probe("in_bulk(('x','y','z'))", lambda: Two.objects.in_bulk([("x","y","z")]), lambda r: (False, "an error"))
probe("Two in_bulk tuples with # and empty", lambda: Two.objects.in_bulk([("x#y", "y#1"), ("x", "1"), ("x#y", "")]), lambda r: (sorted(r) == sorted([("x#y","y#1"), ("x","1"), ("x#y","")]) , "3 hits"))
probe("in_bulk dict with extra field", lambda: Two.objects.in_bulk([{"a": "x", "b": "1", "zz": 1}]), lambda r: (False, "an error"))
probe("filter(pk__in=[1,2])", lambda: sorted(o.num for o in One.objects.filter(pk__in=[1, 2])), lambda r: (r == [1, 2], [1, 2]))
probe("exclude(pk=('x','1'))", lambda: sorted(o.b for o in Two.objects.filter(a="x").exclude(pk=("x", "1"))), lambda r: (r == ["", "y#1"], ["", "y#1"]))
probe("values_list('pk', flat=True) single key", lambda: sorted(One.objects.filter(pk__in=[3, 4]).values_list("pk", flat=True)), lambda r: (r == [3, 4], [3, 4]))
probe("values('pk')", lambda: One.objects.filter(pk=3).values("pk"), lambda r: (r == [{"pk": 3}], [{"pk": 3}]))
probe("only('pk')", lambda: [o.num for o in One.objects.filter(pk=3).only("pk")], lambda r: (r == [3], [3]))
probe("Two.filter(a='x').order_by('-pk')", lambda: [o.b for o in Two.objects.filter(a="x").order_by("-pk")], lambda r: (r == ["y#1", "1", ""], "desc"))
probe("get(pk=3)", lambda: One.objects.get(pk=3).num, lambda r: (r == 3, 3))
probe("values_list() no fields", lambda: One.objects.filter(pk=3).values_list(), lambda r: (r == [(3, "n3")], [(3, "n3")]))
T.delete_table()
