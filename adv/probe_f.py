"""Probes: catch-up vs deletes, transactions with read_versions instances. Run with pytest -s (uses fixtures)."""
from __future__ import annotations

from typing import Any

import pytest

import dynorm
from dynorm import backend
from dynorm.migrations.executor import MigrateOptions
from tests.faults import Hook
from tests.migproject import UNVERSIONED, V1, V2, Project, load_v1, widgets


def report(ok: bool, what: str, detail: Any = "") -> None:
    print(("SAFE: " if ok else "BUG: ") + what + (f" ({detail})" if not ok else ""))


def test_probe_delete_races_catch_up(project: Project) -> None:
    load_v1(project, 40)
    project.write_models(**V2)
    project.makemigrations()
    name = project.table.table_name()
    state = {"n": 0, "recreated": False}

    def hook(request: Any, **kwargs: Any) -> None:
        state["n"] += 1
        if state["n"] == 1:  # after the first move: the old app re-creates w00000 at v1 (unconditional put)
            backend.call("PutItem", {"TableName": name, "Item": {"PK": {"S": "v1#W#zz"}, "SK": {"S": "METADATA"},
                                     "entityType": {"S": "WIDGET"}, "widget_id": {"S": "zz"}, "maker": {"S": "m"},
                                     "_dynorm_rev": {"S": "r1"}, "version": {"N": "1"}}})
        body = request.body if isinstance(request.body, bytes) else request.body.encode()
        if b"v1#W#zz" in body and not state["recreated"]:
            state["recreated"] = True  # the catch-up is about to move zz: the old app deletes it first
            backend.call("DeleteItem", {"TableName": name, "Key": {"PK": {"S": "v1#W#zz"}, "SK": {"S": "METADATA"}}})

    with Hook("before-send.dynamodb.TransactWriteItems", hook):
        rep = project.executor().migrate(MigrateOptions(segments=1))
    ids = [(i["PK"]["S"]) for i in widgets(project.table)]
    report(state["recreated"] and "v2#W#zz" not in ids and "v1#W#zz" not in ids and rep.applied == ["0002_widget_v2"],
           "a v1 delete racing the catch-up move is not resurrected at v2", (state, ids[:3], rep.applied))
    report(len(ids) == 40 and all(i.startswith("v2#") for i in ids), "catch-up leaves 40 at v2", len(ids))


@pytest.mark.parametrize("vf", ["versioned", "unversioned"])
def test_probe_tx_cancelled_with_fallback_instance(project: Project, vf: str) -> None:
    extra = {} if vf == "versioned" else {"version_field": UNVERSIONED}
    load_v1(project, 10, **extra)
    project.write_models(**{**V2, **extra})
    project.makemigrations()
    v2 = project.write_models(**{**V2, "read_versions": ["v2", "v1"], **extra})
    before = {i["widget_id"]["S"]: i for i in widgets(project.table)}
    a = v2.Widget.objects.get(widget_id="w00001")
    b = v2.Widget.objects.get(widget_id="w00002")
    err = None
    try:
        with dynorm.transaction() as tx:
            tx.update(a, maker="X")
            tx.delete(b)
            tx.create(v2.Widget(widget_id="w00001", maker="dup"))  # same item twice / or exists
    except Exception as exc:  # noqa: BLE001
        err = exc
    after = {i["widget_id"]["S"]: i for i in widgets(project.table)}
    strip = lambda d: {k: v for k, v in d.items() if k not in ("PK", "SK", "GSI1PK", "GSI1SK")}  # noqa: E731
    same = all(strip(after[k]) == strip(before[k]) for k in before) and set(after) == set(before)
    report(err is not None and same, f"[{vf}] cancelled tx with fallback instances changes no value", (err, same))
    report(len(v2.Widget.objects.filter(maker="m1")) == 1 and len(v2.Widget.objects.filter(maker="m2")) == 1,
           f"[{vf}] moved items listed in v2 GSI")
    # and with-block raising
    c = v2.Widget.objects.get(widget_id="w00004")
    try:
        with dynorm.transaction() as tx:
            tx.delete(c)
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    report(v2.Widget.objects.get(widget_id="w00004").maker == "m4", f"[{vf}] raised block keeps item")


def test_probe_v2_queryset_delete_during_copy(project: Project) -> None:
    load_v1(project, 10)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions(mode="copy"))
    v2 = project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    try:
        v2.Widget.objects.filter(widget_id="w00006").delete()
    except Exception as exc:  # noqa: BLE001
        print("note", exc)
    try:
        v2.Widget.objects.get(widget_id="w00006")
        report(False, "queryset delete during copy rollout: item comes back via read_versions")
    except v2.Widget.DoesNotExist:
        report(True, "queryset delete during copy rollout")
