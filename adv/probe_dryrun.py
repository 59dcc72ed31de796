"""--dry-run must write nothing in any state: fresh (no table), partial, backwards, CLI."""
import os, sys, tempfile, json
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import dynorm
from dynorm import backend
dynorm.configure(endpoint=os.environ.get("DYNORM_ENDPOINT", "http://127.0.0.1:8437"), table_prefix="advdry-")
from tests.migproject import Project, V1, V2, load_v1, widgets, scan_all
from tests.faults import Hook, fake_response
from dynorm.migrations.executor import MigrateOptions
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem", "CreateTable", "UpdateTable", "UpdateTimeToLive", "DeleteTable")

def conflicting(hot):
    def hook(request, **kw):
        acts = json.loads(request.body)["TransactItems"]
        pks = [a["Delete"]["Key"]["PK"]["S"] if "Delete" in a else "" for a in acts]
        if not hot & set(pks): return None
        return fake_response(400, {"__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException", "Message": "x",
                                   "CancellationReasons": [{"Code": "TransactionConflict" if p in hot else "None"} for p in pks]})
    return hook

proj = Project(Path(tempfile.mkdtemp()), "advdryproj")
try:
    proj.write_models(**V1); proj.makemigrations()
    with dynorm.capture() as c:
        proj.executor().migrate(MigrateOptions(dry_run=True))
    w = [o for o in c.operations if o in WRITES]
    print(("SAFE" if not w and not proj.table.exists() else "BUG") + f": dry-run on a fresh project writes nothing ({w})")
    proj.executor().migrate(MigrateOptions())
    proj.write_models(**V1)
    import importlib; models = importlib.import_module("advdryproj.models")
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i}", maker="m") for i in range(50)])
    proj.write_models(**V2); proj.makemigrations()
    backend.register_hook("before-send.dynamodb.TransactWriteItems", h := conflicting({"v1#W#w3"}))
    proj.executor().migrate(MigrateOptions())
    backend.unregister_hook("before-send.dynamodb.TransactWriteItems", h)
    snap = sorted(map(repr, scan_all(proj.table)))
    with dynorm.capture() as c:
        rep = proj.executor().migrate(MigrateOptions(dry_run=True))
    w = [o for o in c.operations if o in WRITES]
    print(("SAFE" if not w and sorted(map(repr, scan_all(proj.table))) == snap else "BUG") + f": dry-run on a partial migration writes nothing ({w}); counts {rep.totals()}")
    proj.executor().migrate(MigrateOptions())
    snap = sorted(map(repr, scan_all(proj.table)))
    with dynorm.capture() as c:
        rep = proj.executor().migrate(MigrateOptions(dry_run=True, target="0001"))
    w = [o for o in c.operations if o in WRITES]
    print(("SAFE" if not w and sorted(map(repr, scan_all(proj.table))) == snap else "BUG") + f": backwards dry-run writes nothing ({w}); counts {rep.totals()}")
    ok = rep.totals().get("rewritten") == 50
    print(("SAFE" if ok else "BUG") + f": backwards dry-run counts every item it would rewrite (expected 50, got {rep.totals().get('rewritten')})")
finally:
    proj.cleanup()
