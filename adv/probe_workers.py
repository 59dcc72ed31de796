"""Probe: two --worker i/2 runs at once while a v1 app creates items; catch-up over all segments."""
from __future__ import annotations

import threading
from typing import Any

from dynorm.migrations.executor import MigrateOptions
from tests.faults import Hook
from tests.migproject import V1, V2, Project, load_v1, widgets


def report(ok: bool, what: str, detail: Any = "") -> None:
    print(("SAFE: " if ok else "BUG: ") + what + (f" ({detail})" if not ok else ""))


def test_probe_workers(project: Project) -> None:
    load_v1(project, 200)
    project.write_models(**V2)
    project.makemigrations()
    v1 = project.write_models(**V1)
    created: list[str] = []
    lock = threading.Lock()

    def creates(**kw: Any) -> None:
        with lock:
            if len(created) >= 20:
                return
            wid = f"new{len(created):03d}"
            created.append(wid)
        v1.Widget.objects.create(widget_id=wid, maker="m1")

    reports: dict[int, Any] = {}

    def run(i: int) -> None:
        try:
            reports[i] = project.executor().migrate(MigrateOptions(segments=4, worker=(i, 2)))
        except Exception as exc:  # noqa: BLE001
            reports[i] = exc

    with Hook("after-call.dynamodb.TransactWriteItems", creates):
        ts = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=120)
    print("note:", {i: (getattr(r, "applied", r), getattr(r, "partial", None)) for i, r in reports.items()})
    items = widgets(project.table)
    at1 = [i["widget_id"]["S"] for i in items if i["PK"]["S"].startswith("v1#")]
    applied = "0002_widget_v2" in project.executor().applied()
    report(not (applied and at1), "workers: applied => nothing left at v1", (applied, at1[:5]))
    if not applied:
        rep = project.executor().migrate(MigrateOptions(segments=4))
        at1 = [i["widget_id"]["S"] for i in widgets(project.table) if i["PK"]["S"].startswith("v1#")]
        report(rep.applied == ["0002_widget_v2"] and not at1, "plain re-run finishes", (rep.applied, at1[:5]))
    n = len(widgets(project.table))
    report(n == 200 + len(created), "count", (n, len(created)))
