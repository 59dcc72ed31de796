import os
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
import dynorm
from dynorm import Entity, Table, fields, Q
dynorm.configure(endpoint=os.environ["DYNORM_ENDPOINT"])
class T16(Table):
    class Meta:
        table_name = "adv11-t16"
class It(Entity):
    g = fields.String()
    k = fields.String()
    tag = fields.String(null=True)
    tags = fields.Set(str)
    n = fields.Number(null=True)
    class Meta:
        table = T16; entity_type = "IT"
        pk = "G#{g}"; sk = "K#{k}"
try: T16.delete_table()
except Exception: pass
T16.create_table()
rows = [("a", "x#", {"p", "q#"}, 1), ("b", None, set(), None), ("c", "", {"%"}, -0.0), ("d", "x", {"x#"}, 2.5), ("e", "#x", {"\U0010ffff"}, -3)]
for k, tag, tags, n in rows:
    It.objects.create(g="g", k=k, tag=tag, tags=tags, n=n)
def t(label, qsf, pred):
    exp = [r[0] for r in rows if pred(dict(k=r[0], tag=r[1], tags=r[2], n=r[3]))]
    try:
        got = [o.k for o in qsf()]
        print(("SAFE: " if got == exp else "BUG: ") + label + ("" if got == exp else f" (expected {exp}, got {got})"))
    except dynorm.InvalidQuery as e:
        print(("SAFE: " if not exp else "INFO(refused non-empty): ") + f"{label} refused: {str(e)[:100]}")
    except Exception as e:
        print(f"BUG: {label} raised {type(e).__name__}: {str(e)[:150]}")
B = lambda: It.objects.filter(g="g")
t("exclude(tag__in=[])", lambda: B().exclude(tag__in=[]), lambda r: True)
t("filter(Q())", lambda: B().filter(Q()), lambda r: True)
t("exclude(Q(tag='x')|Q(tag='x#'))", lambda: B().exclude(Q(tag="x") | Q(tag="x#")), lambda r: r["tag"] not in ("x", "x#"))
t("filter(~Q(tag__exists=True))", lambda: B().filter(~Q(tag__exists=True)), lambda r: r["tag"] is None)
t("tag__contains='#'", lambda: B().filter(tag__contains="#"), lambda r: r["tag"] is not None and "#" in r["tag"])
t("tags__contains='q#'", lambda: B().filter(tags__contains="q#"), lambda r: "q#" in r["tags"])
t("tag=''", lambda: B().filter(tag=""), lambda r: r["tag"] == "")
t("tag__ne='x'", lambda: B().filter(tag__ne="x"), lambda r: r["tag"] != "x")
t("exclude(tag='x')", lambda: B().exclude(tag="x"), lambda r: r["tag"] != "x")
t("tag__begins_with=''", lambda: B().filter(tag__begins_with=""), lambda r: r["tag"] is not None)
t("tag__gte=''", lambda: B().filter(tag__gte=""), lambda r: r["tag"] is not None)
t("n=0 (stored -0.0)", lambda: B().filter(n=0), lambda r: r["n"] is not None and r["n"] == 0)
t("n__lt=0", lambda: B().filter(n__lt=0), lambda r: r["n"] is not None and r["n"] < 0)
t("n__in=[2.5,-3]", lambda: B().filter(n__in=[2.5, -3]), lambda r: r["n"] in (2.5, -3))
t("exclude(n__gt=0)", lambda: B().exclude(n__gt=0), lambda r: not (r["n"] is not None and r["n"] > 0))
t("tag__exists=False", lambda: B().filter(tag__exists=False), lambda r: r["tag"] is None)
t("tag__not_exists=True", lambda: B().filter(tag__not_exists=True), lambda r: r["tag"] is None)
t("tag=None refused/empty", lambda: B().filter(tag=None), lambda r: False)
t("Q(k='a')|Q(k='e') on sk", lambda: B().filter(Q(k="a") | Q(k="e")), lambda r: r["k"] in ("a", "e"))
t("~Q(k__gt='b') & Q(k__gte='a')", lambda: B().filter(~Q(k__gt="b") & Q(k__gte="a")), lambda r: r["k"] <= "b")
t("k__in", lambda: B().filter(k__in=["e", "a", "zz"]), lambda r: r["k"] in ("a", "e"))
t("exclude(k='a')", lambda: B().exclude(k="a"), lambda r: r["k"] != "a")
