"""--plan WCU '<=' bound vs capacity actually consumed, with mixed item sizes (half ~100 B, half ~1.5 KB)."""
import os, sys, tempfile, json
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import dynorm
from dynorm import backend
dynorm.configure(endpoint=os.environ.get("DYNORM_ENDPOINT", "http://127.0.0.1:8437"), table_prefix="advplan-")
from tests.migproject import Project, V1, V2, load_v1, widgets
from dynorm.migrations.executor import MigrateOptions

proj = Project(Path(tempfile.mkdtemp()), "advplanproj")
try:
    models = load_v1(proj, 100)
    name = proj.table.table_name()
    for i in range(0, 100, 2):  # half the items ~1.5 KB
        backend.call("UpdateItem", {"TableName": name, "Key": {"PK": {"S": f"v1#W#w{i:05d}"}, "SK": {"S": "METADATA"}},
                                    "UpdateExpression": "SET padding = :b", "ExpressionAttributeValues": {":b": {"S": "x" * 1500}}})
    proj.write_models(**V2)
    proj.makemigrations()
    ex = proj.executor()
    opts = MigrateOptions(segments=1)
    op = ex.migrations[-1].operations[0]
    est = ex.estimate(op, opts)
    actual = {"wcu": 0.0, "n": 0}
    def add_rcc(params, **kw):
        params["ReturnConsumedCapacity"] = "TOTAL"
    def after(http_response, parsed, **kw):
        for c in parsed.get("ConsumedCapacity", []) or []:
            actual["wcu"] += c.get("CapacityUnits", 0); actual["n"] += 1
    backend.register_hook("provide-client-params.dynamodb.TransactWriteItems", add_rcc)
    backend.register_hook("after-call.dynamodb.TransactWriteItems", after)
    rep = ex.migrate(MigrateOptions(segments=1, max_wcu=100000))
    print(f"plan: items={est.items} avg={est.avg_size:.0f} wcu<={est.wcu}; paced estimate={rep.write_units}; actual consumed={actual}")
    if actual["n"] == 0:
        print("SAFE?: DynamoDB Local reports no ConsumedCapacity for TransactWriteItems; cannot compare")
    elif actual["wcu"] > est.wcu:
        print(f"BUG: migrate --plan '<= WCU' bound is exceeded with mixed item sizes (expected <= {est.wcu}, got {actual['wcu']})")
    else:
        print(f"SAFE: plan bound holds ({actual['wcu']} <= {est.wcu})")
finally:
    proj.cleanup()
