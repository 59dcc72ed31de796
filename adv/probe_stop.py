"""Probes: Ctrl-C (options.stop) during the catch-up pass and during DeleteVersion, then re-run."""
from __future__ import annotations

import textwrap
import threading
from typing import Any

from dynorm.migrations.executor import MigrateOptions, MigrationInterrupted
from tests.faults import Hook
from tests.migproject import V1, V2, Project, load_v1, widgets

DROP_V1 = '''
from dynorm.migrations import operations as ops
dependencies = ["0002_widget_v2"]
operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="v1",
                                pk="{version}#W#{widget_id}")]
'''


def report(ok: bool, what: str, detail: Any = "") -> None:
    print(("SAFE: " if ok else "BUG: ") + what + (f" ({detail})" if not ok else ""))


def test_probe_stop_during_catch_up(project: Project) -> None:
    load_v1(project, 200)
    project.write_models(**V2)
    project.makemigrations()
    v1 = project.write_models(**V1)
    created: list[str] = []
    stop = threading.Event()

    lock = threading.Lock()

    def creates(**kw: Any) -> None:
        with lock:
            if len(created) >= 30:
                return
            wid = f"new{len(created):03d}"
            created.append(wid)
        if True:
            v1.Widget.objects.create(widget_id=wid, maker="m1")

    def stop_in_catch_up(request: Any, **kw: Any) -> None:
        if b'"Limit"' not in request.body and b"begins_with" in request.body:
            stop.set()

    err = None
    with Hook("after-call.dynamodb.TransactWriteItems", creates), Hook("before-send.dynamodb.Scan", stop_in_catch_up):
        try:
            project.executor().migrate(MigrateOptions(segments=2, stop=stop))
        except MigrationInterrupted as exc:
            err = exc
    applied_mid = "0002_widget_v2" in project.executor().applied()
    report(err is not None and not applied_mid, "stop during catch-up: interrupted, not applied", (err, applied_mid))
    rep = project.executor().migrate(MigrateOptions(segments=2))
    items = widgets(project.table)
    at1 = [i for i in items if i["PK"]["S"].startswith("v1#")]
    ids = sorted(i["widget_id"]["S"] for i in items)
    report(rep.applied == ["0002_widget_v2"] and not at1 and len(ids) == 200 + len(created) and len(set(ids)) == len(ids) and set(created) <= set(ids),
           "re-run after stop in catch-up moves everything exactly once", (rep.applied, len(at1), len(ids), len(created)))


def test_probe_stop_during_delete_version_then_v1_create(project: Project) -> None:
    load_v1(project, 120)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions(mode="copy"))
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1))
    stop = threading.Event()
    n = {"n": 0}

    def stop_first(**kw: Any) -> None:
        n["n"] += 1
        stop.set()

    err = None
    with Hook("after-call.dynamodb.BatchWriteItem", stop_first):
        try:
            project.executor().migrate(MigrateOptions(segments=2, stop=stop))
        except MigrationInterrupted as exc:
            err = exc
    lefts = [i["widget_id"]["S"] for i in widgets(project.table) if i["PK"]["S"].startswith("v1#")]
    left = len(lefts)
    report(err is not None and 0 < left < 120, "DeleteVersion interrupted midway", (err, left))
    v1 = project.write_models(**V1)
    v1.Widget.objects.create(widget_id="late", maker="m1")
    v1.Widget.objects.filter(widget_id=lefts[-1]).update(maker="late-update")
    project.write_models(**V2)
    err2 = None
    try:
        rep = project.executor().migrate(MigrateOptions(segments=2))
        print("note: rerun", rep.applied, rep.partial)
    except Exception as exc:  # noqa: BLE001
        err2 = exc
    items = widgets(project.table)
    report(any(i["widget_id"]["S"] == "late" for i in items), "resumed DeleteVersion keeps a v1 item created after the stop", err2)
    report(any(i.get("maker", {}).get("S") == "late-update" for i in items),
           "resumed DeleteVersion keeps a v1 update made after the stop", err2)
