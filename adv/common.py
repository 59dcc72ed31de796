import os, sys, itertools, random
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dynorm
from dynorm import backend
PORT = os.environ.get("ADV_PORT", "8613")
dynorm.configure(endpoint=f"http://127.0.0.1:{PORT}", table_prefix=f"adv{os.getpid()}-")

def out(ok, what, detail=""):
    print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" ({detail})"), flush=True)

def raw_scan(table, index=None):
    items, kw = [], {"TableName": table.table_name()}
    if index: kw["IndexName"] = index
    while True:
        r = backend.call("Scan", kw)
        items += r["Items"]
        if "LastEvaluatedKey" not in r: return items
        kw["ExclusiveStartKey"] = r["LastEvaluatedKey"]
