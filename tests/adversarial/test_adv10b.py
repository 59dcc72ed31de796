"""Adversarial tests for issue 10 (catch-up, DeleteVersion check, read_versions transactions): adv10b."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

import dynorm
from dynorm import backend
from dynorm.migrations.executor import MigrateOptions
from tests.faults import Hook
from tests.migproject import UNVERSIONED, V1, V2, Project, load_v1, widgets

DROP_V1 = '''
from dynorm.migrations import operations as ops
dependencies = ["0002_widget_v2"]
operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="v1",
                                pk="{{version}}#W#{{widget_id}}"{extra})]
'''


def _raw(project: Project, version: str, wid: str) -> dict[str, Any] | None:
    for i in widgets(project.table):
        if i["PK"]["S"] == f"{version}#W#{wid}":
            return i
    return None


def v1_write(project: Project, wid: str, versioned: bool) -> None:
    """What `Widget.objects.filter(widget_id=wid).update(maker=...)` of an app on v1 sends (its revision
    token, version + 1), without reloading the test's v2 models module."""
    import uuid

    expr, values = "SET maker = :m, #r = :r", {":m": {"S": "updated-by-v1-app"}, ":r": {"S": uuid.uuid4().hex}}
    if versioned:
        expr += " ADD version :one"
        values[":one"] = {"N": "1"}
    backend.call("UpdateItem", {"TableName": project.table.table_name(),
                                "Key": {"PK": {"S": f"v1#W#{wid}"}, "SK": {"S": "METADATA"}},
                                "UpdateExpression": expr, "ConditionExpression": "attribute_exists(PK)",
                                "ExpressionAttributeNames": {"#r": "_dynorm_rev"},
                                "ExpressionAttributeValues": values})


def _copy_rollout(project: Project, n: int) -> None:
    load_v1(project, n)
    project.write_models(**V2)
    project.makemigrations()
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == ["0002_widget_v2"]


def test_delete_version_drops_a_v1_update_made_after_the_copy(project: Project) -> None:
    """Copy-mode rollout; an app still on v1 updates an item (acknowledged) after its v2 copy exists.
    DeleteVersion checks only that a copy EXISTS (key projection), not that it is this revision:
    it deletes the newer v1 item and the acknowledged update is gone for good."""
    _copy_rollout(project, 10)
    v1 = project.write_models(**V1)
    v1.Widget.objects.filter(widget_id="w00003").update(maker="updated-by-v1-app")  # acknowledged
    assert _raw(project, "v1", "w00003")["maker"]["S"] == "updated-by-v1-app"
    project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1.format(extra="")))
    try:
        project.executor().migrate(MigrateOptions())
    except Exception:
        pass  # refusing would be fine
    makers = [i["maker"]["S"] for i in widgets(project.table) if i["widget_id"]["S"] == "w00003"]
    assert "updated-by-v1-app" in makers, makers  # refused (v1 kept) or the copy brought up to date


def test_delete_on_a_v2_instance_during_copy_rollout_is_not_resurrected(project: Project) -> None:
    """v2 app with read_versions=[v2, v1] after a copy: get() finds the v2 copy, delete() acknowledges;
    the v1 item is still there, so get() falls back and returns the deleted item."""
    _copy_rollout(project, 10)
    v2 = project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    w = v2.Widget.objects.get(widget_id="w00005")
    w.delete()  # acknowledged
    with pytest.raises(v2.Widget.DoesNotExist):
        v2.Widget.objects.get(widget_id="w00005")


def test_a_hung_lock_heartbeat_lets_two_runs_write_at_once(project: Project) -> None:
    """--lock-ttl: the heartbeat only gives up when a renewal FAILS. A renewal request that hangs (a slow
    network, botocore's read timeout is 60 s) is never timed out against the lease: the lease expires, a
    second `migrate` takes the lock and runs, while the first one keeps writing."""
    import threading
    import time

    from dynorm.migrations.ledger import MigrationLocked

    load_v1(project, 120)
    project.write_models(**V2)
    project.makemigrations()
    sends: list[tuple[float, str]] = []
    hung = {"n": 0}

    def hang_heartbeat(request: Any, **kwargs: Any) -> None:
        if b"lock#" in request.body and b"SET #exp" in request.body and hung["n"] == 0:
            hung["n"] = 1
            time.sleep(4.0)  # the renewal request hangs (network), then goes through

    def record(request: Any, **kwargs: Any) -> None:
        sends.append((time.monotonic(), threading.current_thread().name))

    a_done: dict[str, Any] = {}

    def run_a() -> None:
        try:
            a_done["report"] = project.executor().migrate(MigrateOptions(segments=1, lock_ttl=1, max_wcu=30))
        except Exception as exc:  # noqa: BLE001
            a_done["error"] = exc

    with Hook("before-send.dynamodb.UpdateItem", hang_heartbeat), \
            Hook("before-send.dynamodb.TransactWriteItems", record):
        a = threading.Thread(target=run_a, name="runA")
        a.start()
        time.sleep(2.0)  # A's lease (1 s) has expired; A is still running
        b_start = time.monotonic()
        b_ok = True
        try:
            project.executor().migrate(MigrateOptions(segments=1, lock_ttl=60))
        except MigrationLocked:
            b_ok = False
        b_end = time.monotonic()
        a.join(timeout=120)
    a_threads = {name for t, name in sends if t < b_start}
    a_during_b = [t for t, name in sends if name in a_threads and b_start <= t <= b_end]
    assert not (b_ok and len(a_during_b) > 1), (b_ok, len(a_during_b), sorted(a_threads), a_done)


def test_the_catch_up_pass_reads_consistently(project: Project) -> None:
    """The catch-up pass decides "nothing is left at v1, record the migration applied" from a Scan. Unlike the
    move's conditional writes, that conclusion is only as good as the read: an eventually consistent Scan (the
    default) may not return an item an old-version app created an instant before, and the item is then stranded
    at v1 for good. (DynamoDB Local is always consistent, so this pins the request parameter.)"""
    load_v1(project, 50)
    project.write_models(**V2)
    project.makemigrations()
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions(segments=2))
    assert report.applied == ["0002_widget_v2"]
    catch_up = [r for r in c.requests if r.operation == "Scan" and "Limit" not in r.params
                and "begins_with" in r.params.get("FilterExpression", "")]
    assert catch_up and all(r.params["ConsistentRead"] is True for r in catch_up), \
        [r.params["ConsistentRead"] for r in catch_up]


@pytest.mark.parametrize("vf", ["versioned", "unversioned"])
def test_a_fallback_write_deletes_a_newer_v1_item_as_a_leftover(project: Project, vf: str) -> None:
    """v2 app (read_versions=[v2, v1]) reads X at v1; the copy-mode backfill then copies X to v2; an app still
    on v1 updates X at v1 (acknowledged). The v2 app's write on X then finds a v2 item with another revision
    token, treats it as "the current one", deletes the v1 item as a leftover and writes to v2: the v1 app's
    acknowledged update is gone, although the v1 item was the newer one."""
    extra = {} if vf == "versioned" else {"version_field": UNVERSIONED}
    load_v1(project, 10, **extra)
    project.write_models(**{**V2, **extra})
    project.makemigrations()
    v2 = project.write_models(**{**V2, "read_versions": ["v2", "v1"], **extra})
    obj = v2.Widget.objects.get(widget_id="w00003")  # found at v1
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == ["0002_widget_v2"]
    # an app still on v1 updates X at v1 as dynorm does (new value, new revision token, version + 1)
    v1_write(project, "w00003", versioned=vf == "versioned")
    err = None
    try:
        obj.update(size=7)
    except Exception as exc:  # noqa: BLE001 - refusing (StaleWrite) would be fine: nothing lost
        err = exc
    items = [(i["PK"]["S"], i["maker"]["S"], i.get("size")) for i in widgets(project.table)
             if i["widget_id"]["S"] == "w00003"]
    assert "updated-by-v1-app" in [m for _, m, _ in items], (items, err)


VERSION_LATE_MODELS = '''
from dynorm import Entity, fields
from {pkg}.tables import MigShop

class Widget(Entity):
    widget_id = fields.String()
    maker = fields.String()
    version = fields.Version()

    class Meta:
        table = MigShop
        entity_type = "WIDGET"
        key_version = "{version}"
        pk = {pk!r}
        sk = {sk!r}
'''


@pytest.mark.parametrize("pk,sk", [("W#{widget_id}#{version}", "METADATA"), ("W#{widget_id}", "{version}#META")])
def test_delete_version_never_deletes_items_of_the_current_version(project: Project, pk: str, sk: str) -> None:
    """Templates where {version} does not lead the partition key are accepted (check, makemigrations, copy
    rekey). DeleteVersion's Scan filters on the partition-key prefix before {version} ("W#"), so it reads the
    CURRENT items too; their "current copy" is themselves, so the check passes and they are deleted:
    every item of the entity is gone, with no error."""
    import importlib
    import sys

    def deploy(version: str) -> Any:
        (project.dir / "models.py").write_text(VERSION_LATE_MODELS.format(pkg=project.pkg, version=version,
                                                                          pk=pk, sk=sk))
        name = f"{project.pkg}.models"
        return importlib.reload(sys.modules[name]) if name in sys.modules else importlib.import_module(name)

    m = deploy("v1")
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    for i in range(10):
        m.Widget.objects.create(widget_id=f"w{i}", maker="a")
    m = deploy("v2")
    assert project.makemigrations(name="v2").name == "0002_v2"
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == ["0002_v2"]
    m.Widget.objects.create(widget_id="fresh", maker="created by the v2 app")
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(f'''
        from dynorm.migrations import operations as ops
        dependencies = ["0002_v2"]
        operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="v1", pk={pk!r})]
    '''))
    try:
        project.executor().migrate(MigrateOptions())
    except Exception:  # noqa: BLE001 - refusing would be fine
        pass
    assert m.Widget.objects.scan().count() == 11
    assert m.Widget.objects.get(widget_id="fresh").maker == "created by the v2 app"


def test_queryset_delete_during_copy_rollout_is_not_resurrected(project: Project) -> None:
    """As the instance delete(): `filter(<full key>).delete()` with read_versions=[v2, v1] after the copy
    removes only v2; get() falls back to the v1 item and the deleted item is back."""
    _copy_rollout(project, 10)
    v2 = project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    v2.Widget.objects.filter(widget_id="w00006").delete()
    with pytest.raises(v2.Widget.DoesNotExist):
        v2.Widget.objects.get(widget_id="w00006")


def _v1_only(project: Project) -> Any:
    """Items at v1 only (the rekey not run yet); the v2 models read through read_versions=[v2, v1]."""
    load_v1(project, 10)
    project.write_models(**V2)
    project.makemigrations()
    return project.write_models(**{**V2, "read_versions": ["v2", "v1"]})


def test_tx_delete_by_key_of_an_item_read_through_read_versions(project: Project) -> None:
    """`tx.delete(Model, key)` (no instance) does not follow read_versions: the transaction commits (the
    unconditional Delete at the v2 key deletes nothing) and `get()` still returns the item."""
    v2 = _v1_only(project)
    assert v2.Widget.objects.get(widget_id="w00001").maker == "m1"
    with dynorm.transaction() as tx:
        tx.delete(v2.Widget, {"widget_id": "w00001"})  # acknowledged
    with pytest.raises(v2.Widget.DoesNotExist):
        v2.Widget.objects.get(widget_id="w00001")
    assert _raw(project, "v1", "w00001") is None


def test_tx_update_by_key_follows_read_versions_like_get(project: Project) -> None:
    """Issue 3 made `objects.filter(<full key>).update()` follow the fallback of get(); `tx.update(Model, key)`
    still raises DoesNotExist for an item get() finds."""
    v2 = _v1_only(project)
    assert v2.Widget.objects.get(widget_id="w00002").counter == 0
    with dynorm.transaction() as tx:
        tx.update(v2.Widget, {"widget_id": "w00002"}, counter=dynorm.F("counter") + 5)
    assert v2.Widget.objects.get(widget_id="w00002").counter == 5


def test_queryset_delete_by_key_follows_read_versions_like_get(project: Project) -> None:
    """`objects.filter(<full key>).delete()` returns 0 and the item get() finds stays."""
    v2 = _v1_only(project)
    v2.Widget.objects.get(widget_id="w00004")
    v2.Widget.objects.filter(widget_id="w00004").delete()
    with pytest.raises(v2.Widget.DoesNotExist):
        v2.Widget.objects.get(widget_id="w00004")


def test_create_refuses_an_id_that_get_finds_through_read_versions(project: Project) -> None:
    """During the rollout (v2 models, read_versions=[v2, v1], the item still at v1), `create()` of an existing
    id succeeds: it checks only the v2 key. get() now returns the new item, the v1 one is shadowed, and the
    move is stuck partial ("the new key already holds a different item")."""
    from dynorm.exceptions import AlreadyExists

    v2 = _v1_only(project)
    assert v2.Widget.objects.get(widget_id="w00001").maker == "m1"
    with pytest.raises(AlreadyExists):
        v2.Widget.objects.create(widget_id="w00001", maker="dup")
    assert [i["PK"]["S"] for i in widgets(project.table) if i["widget_id"]["S"] == "w00001"] == ["v1#W#w00001"]


def test_plan_wcu_bound_counts_the_copies_of_delete_version_copy_missing(project: Project) -> None:
    """`--plan` promises upper bounds. DeleteVersion(copy_missing=True) may copy every old item (transactional
    Put: 2 WCU per started KB, docs/migrations.md) before deleting it, but its WCU figure counts the deletes
    only: 100 copies (>= 200 WCU by the documented rule) + 200 WCU of deletes (reported) vs a bound of ~234.
    (DynamoDB Local's ConsumedCapacity for TransactWriteItems is not usable, so copies use the rule.)"""
    load_v1(project, 100)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions(fake=True))  # recorded applied, nothing copied
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(
        textwrap.dedent(DROP_V1.format(extra=", copy_missing=True")))
    ex = project.executor()
    bound = ex.estimate(ex.migrations[-1].operations[0], MigrateOptions(segments=1))
    deletes = {"w": 0.0}

    def consumed(parsed: Any, **kw: Any) -> None:
        deletes["w"] += sum(float(c.get("CapacityUnits", 0.0)) for c in parsed.get("ConsumedCapacity") or [])

    with Hook("after-call.dynamodb.BatchWriteItem", consumed):
        report = ex.migrate(MigrateOptions(segments=1))
    copied = report.operations[-1].counts["copied"]
    assert report.applied == ["0003_drop_v1"] and copied == 100
    assert 2 * copied + deletes["w"] <= bound.wcu, (bound.wcu, copied, deletes["w"])
