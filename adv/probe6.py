import os, sys
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
src = open("adv/probe5.py").read().split("R = random.Random(5)")[0]
exec(src)
Sc.objects.create(g="g", sid="a", score=D(5), label="x")
Sc.objects.create(g="g", sid="b", score=D(1), label="y")
def t(label, fn, exp):
    try: got = fn()
    except Exception as e: got = f"{type(e).__name__}: {str(e)[:140]}"
    ok = got in exp if isinstance(exp, tuple) else got == exp
    print(("SAFE: " if ok else "BUG: ") + label + ("" if ok else f" (expected {exp!r}, got {got!r})"))
t("filter(score__gte=0).exclude(score=5) no order_by", lambda: [o.sid for o in Sc.objects.filter(g="g", score__gte=0).exclude(score=5)], ["b"])
t("filter(score__gte=0, score__ne=5)", lambda: [o.sid for o in Sc.objects.filter(g="g", score__gte=0, score__ne=5)], ["b"])
t("filter(score__gte=0, score__in=[1])", lambda: [o.sid for o in Sc.objects.filter(g="g", score__gte=0, score__in=[D(1)])], ["b"])
t("filter(score__lt=9).filter(Q(score=1)|Q(score=5))", lambda: sorted(o.sid for o in Sc.objects.filter(g="g", score__lt=9).filter(Q(score=1) | Q(score=5))), ["a", "b"])
t("filter(score__gte=0, label='y')", lambda: [o.sid for o in Sc.objects.filter(g="g", score__gte=0, label="y")], ["b"])
t("filter(score__gte=0, label__gte='')", lambda: sorted(o.sid for o in Sc.objects.filter(g="g", label__gte="")), ["a", "b"])
t("prio between reversed non-key (score__between (5,1) w/o LSI?)", lambda: [o.sid for o in Sc.objects.filter(g="g", sid__between=("b", "a"))], ([], ) )
t("label__between reversed", lambda: [o.sid for o in Sc.objects.filter(g="g", label__between=("y", "x"))], ([],))
t("score__between reversed", lambda: [o.sid for o in Sc.objects.filter(g="g", score__between=(D(5), D(1)))], ([],))
t("score=5 via LSI get", lambda: Sc.objects.get(g="g", score=D(5)).sid, "a")
t("score=5 and score__gte=1 LSI", lambda: [o.sid for o in Sc.objects.filter(g="g", score=D(5), score__gte=D(1))], ["a"])
