import os
os.environ.setdefault("DYNORM_ENDPOINT", "http://127.0.0.1:8611")
exec(open("adv/probe11.py").read().split("tn = T11.table_name()")[0])
tn = T11.table_name()
def alien(sk, typ="ALIEN"):
    item = {"PK": {"S": "A#1"}, "SK": {"S": sk}, "payload": {"S": "x"}}
    if typ: item["entityType"] = {"S": typ}
    backend.call("PutItem", {"TableName": tn, "Item": item})
def pages(qs, size):
    out, c, n = [], None, 0
    for _ in range(20):
        p = qs.page(size=size, cursor=c); n += 1; out.append([o.m for o in p]); c = p.cursor
        if c is None: break
    return out
for m in "ab": Mb.objects.create(a="1", m=m)
alien("M#b~")            # after b
Mb.objects.create(a="1", m="c")
alien("M#c~", None)      # untyped after c
r = pages(Mb.objects.filter(a="1"), 2)
flat = [x for p in r for x in p]
print(("SAFE: " if flat == ["a", "b", "c"] else "BUG: ") + f"pages with foreign items between: {r}")
print(("SAFE: " if all(r) else "BUG: ") + f"no empty page in loop: {r}")
r = pages(Mb.objects.filter(a="1"), 3)
print(("SAFE: " if r == [["a", "b", "c"]] else "BUG: ") + f"page(size=3) with trailing foreign item ends with cursor None: {r}")
r = pages(Mb.objects.filter(a="1"), 1)
print(("SAFE: " if [x for p in r for x in p] == ["a","b","c"] and all(r) else "BUG: ") + f"page(size=1): {r}")
print("INFO first/last/exists:", Mb.objects.filter(a="1").first().m, Mb.objects.filter(a="1").last().m, Mb.objects.filter(a="1", m__gt="c").exists())
print("INFO [2:3]", [o.m for o in Mb.objects.filter(a="1")[2:3]], "[1:]", [o.m for o in Mb.objects.filter(a="1")[1:]])
