import os
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
import sys; sys.argv=["x"]
exec(open("adv/probe3.py").read().split("def probe")[0])
print(T3.check())
Tr.objects.filter(g="g").delete()
Tr.objects.create(g="g", name="abcq", tag="q")
r = Tr.objects.in_bulk([{"g": "g", "name": "abcz"}])
print({k: (v.name, v.tag) for k, v in r.items()})
