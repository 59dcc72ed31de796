"""Move mode and the ``read_versions`` fallback under concurrent writes, on DynamoDB Local.

Every writer thread owns its own items, so the expected end state of each item follows from
the writes that were acknowledged (returned without error), in order: the oracle.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest

import dynorm
from dynorm import F, Q, backend
from dynorm.migrations.executor import MigrateOptions
from tests.faults import Hook
from tests.migproject import UNVERSIONED, V1, V2, VERSIONED, Project, load_v1, widgets

N = 3000
THREADS = 4


def _expected_from_table(project: Project, prefix: str) -> dict[str, dict[str, Any]]:
    return {i["widget_id"]["S"]: i for i in widgets(project.table) if i["PK"]["S"].startswith(prefix)}


def _run_during_migration(project: Project, writer: Callable[[int, threading.Event], None],
                          **options: Any) -> Any:
    stop = threading.Event()
    threads = [threading.Thread(target=writer, args=(t, stop)) for t in range(THREADS)]
    for th in threads:
        th.start()
    try:
        report = project.executor().migrate(MigrateOptions(**options))
    finally:
        stop.set()
        for th in threads:
            th.join()
    return report


def _concurrent_writes_between_scan_and_move(project: Project, W: Any, every: int = 3) -> tuple[dict[str, Any], int]:
    """Before every ``every``-th move transaction, an application write (v1 keys) on an item of
    that transaction: after the scan read it, before it is moved. Returns (expected, acked)."""
    expected: dict[str, dict[str, Any]] = {}
    for wid, i in _expected_from_table(project, "v1#").items():
        expected[wid] = {"counter": int(i["counter"]["N"]), "note": None, "gone": False}
    calls = [0]
    acked = [0]
    busy = threading.local()
    lock = threading.Lock()

    def between(params: dict[str, Any], **_: Any) -> None:
        deletes = [a["Delete"] for a in params.get("TransactItems", ()) if "Delete" in a]
        if getattr(busy, "on", False) or not deletes:
            return
        with lock:
            calls[0] += 1
            n = calls[0]
        if n % every:
            return
        wid = deletes[-1]["Key"]["PK"]["S"].split("#")[-1]
        exp = expected[wid]
        if exp["gone"]:
            return
        kind = n // every % 6
        busy.on = True
        try:
            if kind == 0:  # adds an attribute that was unset: what the full comparison missed
                W.objects.filter(widget_id=wid).update(note=f"n{n}")
                exp["note"] = f"n{n}"
            elif kind == 1:
                W.objects.filter(widget_id=wid).update(counter=F("counter") + 1)
                exp["counter"] += 1
            elif kind == 2:  # read, change, save (conditional on existence)
                obj = W.objects.consistent().get(widget_id=wid)
                obj.note = f"s{n}"
                obj.save(update_fields=["note"])
                exp["note"] = f"s{n}"
            elif kind == 3:
                with dynorm.transaction() as tx:
                    tx.update(W, {"widget_id": wid}, counter=F("counter") + 10, note=f"t{n}")
                exp["counter"] += 10
                exp["note"] = f"t{n}"
            elif kind == 4:  # a delete (conditional on existence; unconditional ones: see docs)
                W.objects.consistent().get(widget_id=wid).delete(condition=Q(widget_id=wid))
                exp["gone"] = True
            else:  # a write that changes nothing a comparison can see: same value, new token
                obj = W.objects.consistent().get(widget_id=wid)
                obj.save(update_fields=["counter"])
            with lock:
                acked[0] += 1
        finally:
            busy.on = False

    with Hook("before-parameter-build.dynamodb.TransactWriteItems", between):
        report = project.executor().migrate(MigrateOptions(segments=2))
    assert report.totals()["failed"] == 0
    return expected, acked[0]


def _lost(project: Project, expected: dict[str, dict[str, Any]]) -> list[Any]:
    assert not _expected_from_table(project, "v1#")  # nothing left behind
    after = _expected_from_table(project, "v2#")
    lost = []
    for wid, exp in expected.items():
        item = after.get(wid)
        if exp["gone"]:
            if item is not None:
                lost.append((wid, "deleted but present"))
            continue
        got = None if item is None else (int(item["counter"]["N"]), item.get("note", {}).get("S"))
        if got != (exp["counter"], exp["note"]):
            lost.append((wid, got, exp))
    return lost


@pytest.mark.slow(reason="a race soak: application writers against a whole move (30-40 s)")
def test_move_loses_no_acknowledged_write_of_an_unversioned_entity(project: Project) -> None:
    """The issue's case: an old-version app adds an attribute (update(note=...)) while the move runs."""
    load_v1(project, N, version_field=UNVERSIONED)
    project.write_models(**{**V2, "version_field": UNVERSIONED})
    project.makemigrations()
    W = project.write_models(**{**V1, "version_field": UNVERSIONED}).Widget  # the app still runs v1
    for i in range(0, N, 2):  # half the items predate the revision token (or come from another writer)
        backend.call("UpdateItem", {"TableName": project.table.table_name(), "UpdateExpression": "REMOVE #r",
                                    "Key": {"PK": {"S": f"v1#W#w{i:05d}"}, "SK": {"S": "METADATA"}},
                                    "ExpressionAttributeNames": {"#r": "_dynorm_rev"}})
    expected, acked = _concurrent_writes_between_scan_and_move(project, W)
    assert acked >= 15, acked
    assert _lost(project, expected) == []
    after = _expected_from_table(project, "v2#")
    legacy = [i for i in after.values() if "legacy" in i]  # undeclared attributes moved too
    assert len(legacy) == sum(1 for i in range(0, N, N // 50) if not expected[f"w{i:05d}"]["gone"])


@pytest.mark.slow(reason="a race soak: application writers against a whole move (45-70 s)")
def test_move_loses_no_acknowledged_write_of_a_versioned_entity(project: Project) -> None:
    both = VERSIONED + "\n" + UNVERSIONED
    load_v1(project, 600, version_field=both)
    project.write_models(**{**V2, "version_field": both})
    project.makemigrations()
    W = project.write_models(**{**V1, "version_field": both}).Widget
    expected, acked = _concurrent_writes_between_scan_and_move(project, W, every=1)
    assert acked >= 15, acked
    assert _lost(project, expected) == []


def test_move_condition_is_the_revision_token_for_dynorm_items_and_a_full_comparison_otherwise(
        project: Project) -> None:
    load_v1(project, 3, version_field=UNVERSIONED)
    name = project.table.table_name()
    # an item written by another writer (raw boto3, no token)
    backend.call("PutItem", {"TableName": name, "Item": {
        "PK": {"S": "v1#W#raw"}, "SK": {"S": "METADATA"}, "entityType": {"S": "WIDGET"},
        "widget_id": {"S": "raw"}, "maker": {"S": "m"}, "size": {"N": "1"}, "counter": {"N": "0"}}})
    project.write_models(**{**V2, "version_field": UNVERSIONED})
    project.makemigrations()
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions())
    assert report.totals()["rewritten"] == 4
    sent = [r.params for r in c.requests if r.operation == "TransactWriteItems"]
    deletes = [a["Delete"] for p in sent for a in p["TransactItems"] if "Delete" in a]
    assert len(deletes) == 4
    by_key = {d["Key"]["PK"]["S"]: d for d in deletes}
    assert by_key["v1#W#w00000"]["ConditionExpression"] == "#r = :r"
    assert by_key["v1#W#w00000"]["ExpressionAttributeNames"] == {"#r": "_dynorm_rev"}
    raw_cond = by_key["v1#W#raw"]["ConditionExpression"]
    assert raw_cond.startswith("attribute_not_exists(#r) AND ") and raw_cond.count(" = ") == 7
    assert {i["widget_id"]["S"] for i in widgets(project.table)} == {"w00000", "w00001", "w00002", "raw"}


def _get_raw(project: Project, pk: str) -> dict[str, Any] | None:
    return backend.call("GetItem", {"TableName": project.table.table_name(), "ConsistentRead": True,
                                    "Key": {"PK": {"S": pk}, "SK": {"S": "METADATA"}}}).get("Item")


def test_move_keeps_a_concurrent_update_to_an_item_first_written_outside_dynorm(project: Project) -> None:
    """(Section 2, reported lightly.) A legacy item put with boto3 (no version, no revision token);
    the app's `update(counter=5)` lands between the migration's Scan and its transaction. The
    update *adds* attributes, so the all-attributes condition on the old item still holds and the
    new item is written without them: an acknowledged write is lost."""
    load_v1(project, 5)
    name = project.table.table_name()
    backend.call("PutItem", {"TableName": name, "Item": {
        "PK": {"S": "v1#W#legacy"}, "SK": {"S": "METADATA"}, "entityType": {"S": "WIDGET"},
        "widget_id": {"S": "legacy"}, "maker": {"S": "m1"}, "size": {"N": "3"},
        "GSI1PK": {"S": "v1#M#m1"}, "GSI1SK": {"S": "W#legacy"}}})
    models = project.write_models(**V2)
    v1_models = None
    project.makemigrations()
    v1_models = project.write_models(**V1)
    done = {"n": 0}

    def app_write_first(request: Any, **kwargs: Any) -> None:
        if done["n"] == 0 and b"v1#W#legacy" in request.body:
            done["n"] = 1
            w = v1_models.Widget.objects.filter(widget_id="legacy").update(counter=5)
            assert w.counter == 5  # acknowledged

    with Hook("before-send.dynamodb.TransactWriteItems", app_write_first):
        report = project.executor().migrate(MigrateOptions(segments=1))
    assert done["n"] == 1 and report.applied == ["0002_widget_v2"]
    got = _get_raw(project, "v2#W#legacy")
    assert _get_raw(project, "v1#W#legacy") is None
    assert got is not None and got.get("counter") == {"N": "5"}, got  # actual: no counter
    del models
