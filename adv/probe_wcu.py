"""Probe: DeleteVersion --max-wcu per 1-second window with ~3 KB items (ConsumedCapacity as reported)."""
from __future__ import annotations

import textwrap
import time
from typing import Any

from dynorm import backend
from dynorm.migrations.executor import MigrateOptions
from tests.faults import Hook
from tests.migproject import V2, Project, load_v1, widgets

DROP_V1 = '''
from dynorm.migrations import operations as ops
dependencies = ["0002_widget_v2"]
operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="v1",
                                pk="{version}#W#{widget_id}")]
'''


def report(ok: bool, what: str, detail: Any = "") -> None:
    print(("SAFE: " if ok else "BUG: ") + what + (f" ({detail})" if not ok else ""))


def test_probe_wcu(project: Project) -> None:
    load_v1(project, 60)
    name = project.table.table_name()
    for i in range(60):
        backend.call("UpdateItem", {"TableName": name, "Key": {"PK": {"S": f"v1#W#w{i:05d}"}, "SK": {"S": "METADATA"}},
                                    "UpdateExpression": "SET padding = :b",
                                    "ExpressionAttributeValues": {":b": {"S": "x" * 3000}}})
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions(mode="copy"))
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1))
    sent: list[tuple[float, float]] = []

    def consumed(parsed: Any, **kw: Any) -> None:
        sent.append((time.monotonic(), sum(float(c.get("CapacityUnits", 0.0)) for c in parsed.get("ConsumedCapacity") or [])))

    budget = 20.0
    t0 = time.monotonic()
    with Hook("after-call.dynamodb.BatchWriteItem", consumed):
        rep = project.executor().migrate(MigrateOptions(segments=2, max_wcu=budget))
    total = sum(u for _, u in sent)
    worst = max(sum(u for t, u in sent if s <= t < s + 1.0) for s, _ in sent)
    print("note:", rep.applied, "total WCU", total, "max request", max(u for _, u in sent), "worst 1s", worst,
          "elapsed", round(time.monotonic() - t0, 1))
    report(worst <= 2 * budget and max(u for _, u in sent) <= budget, "DeleteVersion --max-wcu 20 with 3 KB items",
           (worst, max(u for _, u in sent)))
    report(not [i for i in widgets(project.table) if i["PK"]["S"].startswith("v1#")], "all v1 deleted")
