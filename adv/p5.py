import sys, math, decimal; sys.path.insert(0, "adv")
from common import *
setup()
try:
    o = Item.objects.create(sku="g", warehouse="%" * 700)
    r = raw(Item, sku="g")
    print({k: (len(v["S"].encode()) if "S" in v else v) for k, v in r.items()})
    print(r["GSI1PK"]["S"][:40])
    o = Item.objects.create(sku="g2", warehouse="#" * 700)
    r = raw(Item, sku="g2"); print(r["GSI1PK"]["S"][:40], len(r["GSI1PK"]["S"]))
    print([i.sku for i in Item.objects.filter(warehouse="%" * 700)])
    print([i.sku for i in Item.objects.filter(warehouse="#" * 700)])
finally:
    teardown()
