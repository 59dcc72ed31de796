"""Lost responses (request reaches DynamoDB, then the connection drops; botocore retries) during migrate."""
import os, sys, tempfile, urllib.request
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import botocore.exceptions
import dynorm
from dynorm import backend
dynorm.configure(endpoint=os.environ.get("DYNORM_ENDPOINT", "http://127.0.0.1:8437"), table_prefix="advlost-")
from tests.migproject import Project, V2, load_v1, widgets, body, scan_all
from dynorm.migrations.executor import MigrateOptions


class LoseNth:
    def __init__(self, nth): self.nth, self.seen = nth, 0
    def __call__(self, request, **kw):
        self.seen += 1
        if self.seen == self.nth:
            req = urllib.request.Request(request.url, data=request.body, headers=dict(request.headers.items()))
            urllib.request.urlopen(req, timeout=10).read()
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)


for k, (operation, nth, target) in enumerate([("TransactWriteItems", 1, None), ("TransactWriteItems", 3, None),
                                    ("PutItem", 1, None), ("PutItem", 4, None), ("DeleteItem", 1, None),
                                    ("TransactWriteItems", 2, "0001"), ("PutItem", 3, "0001"), ("DeleteItem", 2, "0001")]):
    proj = Project(Path(tempfile.mkdtemp()), f"advlost{k}")
    try:
        load_v1(proj, 120)
        before = {i["widget_id"]["S"]: body(i) for i in widgets(proj.table)}
        proj.write_models(**V2)
        proj.makemigrations()
        if target:
            proj.executor().migrate(MigrateOptions(segments=2))
        fault = LoseNth(nth)
        backend.register_hook(f"before-send.dynamodb.{operation}", fault)
        try:
            rep = proj.executor().migrate(MigrateOptions(segments=2, target=target))
            err = None
        except Exception as exc:  # noqa: BLE001
            rep, err = None, exc
        finally:
            backend.unregister_hook(f"before-send.dynamodb.{operation}", fault)
        items = widgets(proj.table)
        want = "v1#" if target else "v2#"
        ledger = [i["SK"]["S"] for i in scan_all(proj.table) if i["PK"]["S"] == "dynorm#migrations"]
        ok = (err is None and len(items) == 120 and all(i["PK"]["S"].startswith(want) for i in items)
              and {i["widget_id"]["S"]: body(i) for i in items} == before and not any(s.startswith("lock#") for s in ledger)
              and (("applied#0002_widget_v2" in ledger) != bool(target)))
        what = f"lost response of {operation} #{nth} during {'reverse' if target else 'forward'} migrate"
        print(("SAFE: " if ok else "BUG: ") + what + ("" if ok else f" (err={err!r}, items={len(items)}, counts={rep and rep.totals()}, ledger={ledger})"))
    finally:
        proj.cleanup()
