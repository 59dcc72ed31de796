"""Probes: create()/get_or_create() with read_versions when the item exists at v1 only."""
from __future__ import annotations

from typing import Any

from dynorm.migrations.executor import MigrateOptions
from tests.migproject import V2, Project, load_v1, widgets


def report(ok: bool, what: str, detail: Any = "") -> None:
    print(("SAFE: " if ok else "BUG: ") + what + (f" ({detail})" if not ok else ""))


def test_probe_create(project: Project) -> None:
    load_v1(project, 10)
    project.write_models(**V2)
    project.makemigrations()
    v2 = project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    assert v2.Widget.objects.get(widget_id="w00001").maker == "m1"
    err = None
    try:
        v2.Widget.objects.create(widget_id="w00001", maker="dup")
    except Exception as exc:  # noqa: BLE001
        err = exc
    report(err is not None, "create() of an id get() finds at v1 raises AlreadyExists", "created a second item")
    obj, created = v2.Widget.objects.get_or_create(widget_id="w00002", defaults={"maker": "dup"})
    report(not created and obj.maker == "m2", "get_or_create() finds the v1 item", (created, obj.maker))
    items = [(i["PK"]["S"], i["maker"]["S"]) for i in widgets(project.table) if i["widget_id"]["S"] in ("w00001", "w00002")]
    print("note raw:", items)
    try:
        rep = project.executor().migrate(MigrateOptions())
        print("note move:", rep.applied, rep.partial, rep.failed_items[:1])
    except Exception as exc:  # noqa: BLE001
        print("note move raised", exc)
