"""Probes: writes by key (not on an instance) while the item exists only at v1 and the models read_versions."""
from __future__ import annotations

from typing import Any

import dynorm
from dynorm import Q
from tests.migproject import V2, Project, load_v1, widgets


def report(ok: bool, what: str, detail: Any = "") -> None:
    print(("SAFE: " if ok else "BUG: ") + what + (f" ({detail})" if not ok else ""))


def _setup(project: Project) -> Any:
    load_v1(project, 10)
    project.write_models(**V2)
    project.makemigrations()
    return project.write_models(**{**V2, "read_versions": ["v2", "v1"]})


def _there(v2: Any, wid: str) -> Any:
    try:
        return v2.Widget.objects.get(widget_id=wid)
    except v2.Widget.DoesNotExist:
        return None


def test_probe_bykey(project: Project) -> None:
    v2 = _setup(project)
    # tx.delete by key
    err = None
    try:
        with dynorm.transaction() as tx:
            tx.delete(v2.Widget, {"widget_id": "w00001"})
    except Exception as exc:  # noqa: BLE001
        err = exc
    report(err is not None or _there(v2, "w00001") is None, "tx.delete(Model, key) of a v1-only item",
           f"acknowledged, get() still returns it: {err}")
    err = None
    try:
        with dynorm.transaction() as tx:
            tx.update(v2.Widget, {"widget_id": "w00002"}, counter=dynorm.F("counter") + 5)
    except Exception as exc:  # noqa: BLE001
        err = exc
    o = _there(v2, "w00002")
    report(o is not None and o.counter == 5, "tx.update(Model, key) of a v1-only item (get() finds it)",
           f"err={err!r} counter={o.counter if o else None}")
    err = None
    try:
        with dynorm.transaction() as tx:
            tx.check(v2.Widget, {"widget_id": "w00003"}, condition=Q(maker="m3"))
            tx.update(v2.Widget, {"widget_id": "w00009"}, maker="Y") if False else None
    except Exception as exc:  # noqa: BLE001
        err = exc
    report(err is None, "tx.check(Model, key) on v1-only item whose condition holds per get()", repr(err))
    err = None
    try:
        n = v2.Widget.objects.filter(widget_id="w00004").delete()
        print("note: qs delete returned", n)
    except Exception as exc:  # noqa: BLE001
        err = exc
    report(_there(v2, "w00004") is None, "queryset filter(key).delete() of a v1-only item", repr(err))
    for name in ("delete",):
        fn = getattr(v2.Widget.objects, name, None)
        print("note: manager has", name, fn is not None)
    raw = sorted(i["PK"]["S"] for i in widgets(project.table))
    print("note raw:", raw)
