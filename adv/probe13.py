import os, decimal
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
src = open("adv/probe12.py").read().split("cases = {")[0]
exec(src)
D = decimal.Decimal
allscores = [i % 5 for i in range(12)]
for lk, v in [("gt", 1.5), ("lt", 2.5), ("gte", 1.5), ("lte", 2.5), ("gt", D("1.5")), ("exact", 2.0), ("gt", -0.5), ("between", (0.5, 2.5)), ("gt", True)]:
    f = {"gt": lambda x: x > v, "lt": lambda x: x < v, "gte": lambda x: x >= v, "lte": lambda x: x <= v, "exact": lambda x: x == v, "between": lambda x: v[0] <= x <= v[1]}[lk]
    for label, mk, pool in [("LSI", lambda: E.objects.filter(g="g", **{f"score__{lk}": v}), allscores),
                            ("GSI 04d", lambda: E.objects.filter(tag="a", **{f"score__{lk}": v}), [s for i, s in enumerate(allscores) if i % 2 == 0])]:
        exp = sorted(x for x in pool if f(x))
        try:
            got = sorted(o.score for o in mk())
            print(("SAFE: " if got == exp else "BUG: ") + f"{label} Integer score__{lk}={v!r}" + ("" if got == exp else f" (expected {exp}, got {got})"))
        except Exception as e:
            print(f"INFO {label} score__{lk}={v!r} raised {type(e).__name__}: {str(e)[:120]}")
