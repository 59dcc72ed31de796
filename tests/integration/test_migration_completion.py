"""Finishing a migration without stranding items: the move's catch-up pass, DeleteVersion's check for
current-version copies, DeleteVersion's pacing, ``--lock-ttl`` and the ``--plan`` read bound (issue 10)."""

from __future__ import annotations

import itertools
import json
import textwrap
import time
from typing import Any

import pytest
from click.testing import CliRunner

import dynorm
from dynorm import backend
from dynorm.migrations import MigrationError
from dynorm.migrations.executor import CATCH_UP_PASSES, MigrateOptions, check_lock_ttl
from tests.faults import Hook
from tests.migproject import V1, V2, VERSION_LATE_MODELS, Project, load_v1, widgets

DROP_V1 = '''
from dynorm.migrations import operations as ops
dependencies = ["0002_widget_v2"]
operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="v1",
                                pk="{{version}}#W#{{widget_id}}"{extra})]
'''


def _at(project: Project, version: str) -> list[str]:
    return sorted(i["widget_id"]["S"] for i in widgets(project.table) if i["PK"]["S"].startswith(version + "#"))


# -- the catch-up pass of a move ---------------------------------------------------------------------------------

def test_items_created_by_the_old_app_during_a_move_are_not_left_at_v1(project: Project) -> None:
    """While `migrate` moves v1 -> v2, old application instances still `create()` items at v1; those whose
    position the scan had passed used to stay at v1 once the migration was recorded applied, where the v2 app
    (no read_versions after a move) cannot see them, and a later DeleteVersion would delete them."""
    load_v1(project, 400)
    project.write_models(**V2)
    project.makemigrations()
    v1_models = project.write_models(**V1)
    created: list[str] = []

    def old_app_creates(**kwargs: Any) -> None:
        if len(created) < 40:
            for _k in range(10):
                wid = f"new{len(created):03d}"
                v1_models.Widget.objects.create(widget_id=wid, maker="m1")  # acknowledged
                created.append(wid)

    with Hook("after-call.dynamodb.TransactWriteItems", old_app_creates):
        report = project.executor().migrate(MigrateOptions(segments=1))
    assert report.applied == ["0002_widget_v2"] and len(created) == 40
    assert _at(project, "v1") == []
    assert set(created) <= set(_at(project, "v2")) and len(_at(project, "v2")) == 440
    op = report.operations[-1]
    assert op.caught_up >= 1 and op.catch_up_passes >= 2, (op.caught_up, op.catch_up_passes)  # the last found none
    assert report.totals()["rewritten"] == 440


def test_a_move_whose_old_writers_never_stop_stays_partial_and_says_what_to_do(project: Project) -> None:
    from dynorm.cli import cli

    load_v1(project, 60)
    project.write_models(**V2)
    project.makemigrations()
    v1_models = project.write_models(**V1)
    created: list[str] = []
    numbers = itertools.count()  # the hook runs in every segment's thread: one id each

    def old_app_keeps_creating(**kwargs: Any) -> None:
        wid = f"new{next(numbers):03d}"
        v1_models.Widget.objects.create(widget_id=wid, maker="m1")
        created.append(wid)

    with Hook("after-call.dynamodb.TransactWriteItems", old_app_keeps_creating):
        report = project.executor().migrate(MigrateOptions(segments=2))
        result = CliRunner().invoke(cli, ["--config", str(project.config()), "migrate"])
    assert report.applied == [] and report.partial == {"0002_widget_v2": 0}
    assert report.operations[-1].catch_up_passes == CATCH_UP_PASSES
    text = " ".join(report.failed_items)
    assert "keep appearing at key version v1" in text and "read_versions" in text and "stop the v1 writers" in text
    assert "0002_widget_v2" not in project.executor().applied()
    assert result.exit_code == 1 and "NOT applied (partial)" in result.output and "keep appearing" in result.output
    # the old writers stop: the next run finds what they left and records the migration
    again = project.executor().migrate(MigrateOptions(segments=2))
    assert again.applied == ["0002_widget_v2"] and _at(project, "v1") == []
    assert len(_at(project, "v2")) == 60 + len(created)


def test_the_catch_up_costs_one_filtered_scan_when_nothing_appeared(project: Project) -> None:
    load_v1(project, 300)
    project.write_models(**V2)
    project.makemigrations()
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions(segments=2))
    assert report.applied == ["0002_widget_v2"]
    catch_up = [r for r in c.requests if r.operation == "Scan" and "Limit" not in r.params]
    # strongly consistent even though the move's scan is not: "nothing left" is concluded from it
    assert len(catch_up) == 2 and all(r.items == 0 and r.params["ConsistentRead"] is True for r in catch_up)
    assert "begins_with" in catch_up[0].params["FilterExpression"]
    assert report.operations[-1].catch_up_passes == 1 and report.operations[-1].caught_up == 0


def test_copy_mode_has_no_catch_up_pass(project: Project) -> None:
    load_v1(project, 50)
    project.write_models(**V2)
    project.makemigrations()
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions(mode="copy", segments=1))
    assert report.applied == ["0002_widget_v2"] and report.operations[-1].catch_up_passes == 0
    assert all("Limit" in r.params for r in c.requests if r.operation == "Scan")


# -- DeleteVersion refuses to delete items without a current-version copy ---------------------------------------

def test_delete_version_refuses_items_without_a_current_copy_and_deletes_nothing(project: Project) -> None:
    from dynorm.cli import cli

    load_v1(project, 40)
    project.write_models(**V2)
    project.makemigrations()
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == ["0002_widget_v2"]
    v1 = project.write_models(**V1)  # an application still on v1 goes on creating after the copy
    for k in range(3):
        v1.Widget.objects.create(widget_id=f"late{k}", maker="m2")
    project.write_models(**V2)
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1.format(extra="")))
    before = sorted(map(repr, widgets(project.table)))
    with dynorm.capture() as c, pytest.raises(MigrationError) as err:
        project.executor().migrate(MigrateOptions())
    message = str(err.value)
    assert "refused; nothing was deleted: 3 item(s) at key version v1 have no copy" in message
    assert "v1#W#late0" in message and "copy_missing=True" in message and "stop every application" in message
    assert "BatchWriteItem" not in c.operations and "DeleteItem" not in [
        r.operation for r in c.requests if "lock#" not in json.dumps(r.params)]
    assert sorted(map(repr, widgets(project.table))) == before  # nothing deleted
    result = CliRunner().invoke(cli, ["--config", str(project.config()), "migrate"])
    assert result.exit_code == 1 and "nothing was deleted" in result.output and "late" in result.output
    assert sorted(map(repr, widgets(project.table))) == before
    assert "0003_drop_v1" not in project.executor().applied()
    assert project.executor().started() == set()  # pending, not partial: nothing of it was recorded
    shown = CliRunner().invoke(cli, ["--config", str(project.config()), "showmigrations"])
    assert "[ ] 0003_drop_v1" in shown.output, shown.output
    # the fix the message gives: copy_missing=True copies them to v2, then the v1 items go
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(
        textwrap.dedent(DROP_V1.format(extra=", copy_missing=True")))
    report = project.executor().migrate(MigrateOptions())
    assert report.applied == ["0003_drop_v1"] and report.operations[-1].counts["copied"] == 3
    assert _at(project, "v1") == [] and len(_at(project, "v2")) == 43
    assert set(_at(project, "v2")) >= {"late0", "late1", "late2"}


def test_delete_version_never_deletes_an_item_that_loses_its_copy_after_the_check(project: Project) -> None:
    """The check passes, then (before its page is deleted) an item's current copy disappears and is written
    at v1 again: the delete pass checks each page again, keeps that item and leaves the migration partial."""
    load_v1(project, 30)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions(mode="copy"))
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1.format(extra="")))
    name = project.table.table_name()
    done = {"n": 0}

    def drop_a_copy(request: Any, **kwargs: Any) -> None:
        if done["n"] == 0 and b"BatchGetItem" not in request.body and b"Limit" in request.body:
            done["n"] = 1  # the first page of the delete pass (the check reads 1 MB pages, no Limit)
            backend.call("DeleteItem", {"TableName": name, "Key": {"PK": {"S": "v2#W#w00004"},
                                                                   "SK": {"S": "METADATA"}}})

    with Hook("before-send.dynamodb.Scan", drop_a_copy):
        report = project.executor().migrate(MigrateOptions(segments=1))
    assert done["n"] == 1 and report.partial == {"0003_drop_v1": 1}
    assert "no copy at key version v2" in report.failed_items[0]
    assert _at(project, "v1") == ["w00004"]  # kept: it is the only one left


# -- DeleteVersion's batches respect --max-wcu ------------------------------------------------------------------

@pytest.mark.slow(reason="paced by --max-wcu in real seconds (12 s)")
def test_delete_version_batches_stay_within_the_write_budget(project: Project) -> None:
    load_v1(project, 100)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions(mode="copy"))
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1.format(extra="")))
    sent: list[tuple[float, int]] = []

    def deletes(request: Any, **kwargs: Any) -> None:
        actions = json.loads(request.body)["TransactItems"]
        if any("Delete" in a for a in actions):  # the delete pass: Deletes and the ledger's tally Update
            sent.append((time.monotonic(), sum("Delete" in a for a in actions)))

    budget = 30.0
    per_item = 2 + 1  # a transactional Delete of an item under 1 KB: 2 WCU, plus its one GSI entry
    with Hook("before-send.dynamodb.TransactWriteItems", deletes):
        with dynorm.capture() as c:
            report = project.executor().migrate(MigrateOptions(segments=2, max_wcu=budget))
    assert report.applied == ["0003_drop_v1"] and _at(project, "v1") == []
    assert "BatchWriteItem" not in c.operations  # every delete is conditional (TransactWriteItems)
    assert sum(n for _, n in sent) == 100
    # no request costs more than one second of the budget (100 deletes would be 300 WCU; the tally 2) ...
    assert max(n for _, n in sent) * per_item + 2 <= budget, sent
    # ... and no second sees more than the rate plus one second of burst
    worst = max(sum(n * per_item + 2 for t, n in sent if s <= t < s + 1.0) for s, _ in sent)
    assert worst <= 2 * budget, (worst, sent)


def test_delete_version_keeps_an_old_version_write_made_after_the_copy_was_checked(project: Project) -> None:
    """An application still on v1 updates an item after DeleteVersion checked its v2 copy and before the
    delete request: the delete was an unconditional BatchWriteItem, so the acknowledged write was lost for
    good (its copy is the older revision). Now the Delete is conditional on the item as checked: the item is
    kept, reported as failed, and the migration stays partial."""
    from dynorm.writes import new_token

    _after_copy_rollout(project, 30)
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1.format(extra="")))
    done = {"n": 0}

    def old_app_writes(request: Any, **kwargs: Any) -> None:
        body = json.loads(request.body)
        if done["n"] == 0 and any("Delete" in a for a in body["TransactItems"]):  # Deletes (and the tally)
            done["n"] = 1  # between the check of the copies and the delete request
            # what a v1 application's update(maker=...) sends (a fresh revision token with the change)
            backend.call("UpdateItem", {
                "TableName": project.table.table_name(), "Key": {"PK": {"S": "v1#W#w00007"}, "SK": {"S": "METADATA"}},
                "UpdateExpression": "SET maker = :m, #r = :r", "ExpressionAttributeNames": {"#r": "_dynorm_rev"},
                "ExpressionAttributeValues": {":m": {"S": "written-after-the-check"}, ":r": {"S": new_token()}}})

    with Hook("before-send.dynamodb.TransactWriteItems", old_app_writes):
        report = project.executor().migrate(MigrateOptions(segments=1))
    assert done["n"] == 1 and report.partial == {"0003_drop_v1": 1}, report
    # the cancelled transaction's items are settled one by one: this one is read again, its copy is
    # another revision now, so it is kept
    assert "another revision" in report.failed_items[0], report.failed_items
    kept = _raw_item(project, "v1", "w00007")
    assert kept is not None and kept["maker"] == {"S": "written-after-the-check"}  # the write is not lost
    assert _at(project, "v1") == ["w00007"]  # every other v1 item is deleted
    # the next run checks the kept item's copy anew: another revision, so it is still kept and reported
    report = project.executor().migrate(MigrateOptions(segments=1))
    assert report.partial == {"0003_drop_v1": 1} and "another revision" in report.failed_items[0], report
    assert _raw_item(project, "v1", "w00007") is not None


# -- --lock-ttl --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "-5", "0.5", "3601", "1e9", "nan", "abc"])
def test_lock_ttl_out_of_range_is_refused_before_any_request(project: Project, value: str) -> None:
    from dynorm.cli import cli

    load_v1(project, 1)
    project.write_models(**V2)
    project.makemigrations()
    with dynorm.capture() as c:
        result = CliRunner().invoke(cli, ["--config", str(project.config()), "migrate", "--lock-ttl", value])
    assert result.exit_code == 2 and "--lock-ttl" in result.output, result.output
    assert not any(op in ("PutItem", "TransactWriteItems") for op in c.operations)
    assert "0002_widget_v2" not in project.executor().applied()


def test_lock_ttl_sets_the_lease_of_the_lock(project: Project) -> None:
    from dynorm.cli import cli

    load_v1(project, 5)
    project.write_models(**V2)
    project.makemigrations()
    leases: list[float] = []

    def lease(request: Any, **kwargs: Any) -> None:
        body = json.loads(request.body)
        if body.get("Item", {}).get("SK", {}).get("S", "").startswith("lock#"):
            leases.append(float(body["Item"]["expires_at"]["N"]) - time.time())

    with Hook("before-send.dynamodb.PutItem", lease):
        result = CliRunner().invoke(cli, ["--config", str(project.config()), "migrate", "--lock-ttl", "300"])
    assert result.exit_code == 0, result.output
    # expires_at is stored to the millisecond (rounded): up to 0.5 ms beyond now + 300 when read at once
    assert len(leases) == 1 and 295 < leases[0] <= 300.0005
    assert check_lock_ttl(1) == 1.0 and check_lock_ttl(3600) == 3600.0
    for bad in (0, -1, 0.99, 3600.5, float("inf"), True, "60"):
        with pytest.raises(MigrationError, match="--lock-ttl"):
            check_lock_ttl(bad)  # type: ignore[arg-type]
    with pytest.raises(MigrationError, match="--lock-ttl"):
        project.executor().migrate(MigrateOptions(lock_ttl=0))


# -- the --plan read figure is an upper bound ----------------------------------------------------------------------

def test_plan_read_figures_bound_what_the_move_and_the_delete_read(project: Project) -> None:
    load_v1(project, 120)
    name = project.table.table_name()
    for i in range(0, 120, 3):  # mixed sizes: a third of the items ~6 KB, the others ~150 B
        backend.call("UpdateItem", {"TableName": name, "Key": {"PK": {"S": f"v1#W#w{i:05d}"}, "SK": {"S": "METADATA"}},
                                    "UpdateExpression": "SET padding = :b",
                                    "ExpressionAttributeValues": {":b": {"S": "x" * 6000}}})
    project.write_models(**V2)
    project.makemigrations()
    executor = project.executor()
    for consistent in (False, True):
        options = MigrateOptions(segments=3, mode="copy", consistent_read=consistent, dry_run=True)
        bound = executor.estimate(executor.migrations[-1].operations[0], options)
        with dynorm.capture() as c:
            executor.migrate(options)
        assert sum(r.read_capacity for r in c.requests if r.operation == "Scan") <= bound.rcu
    options = MigrateOptions(segments=3, mode="copy")
    bound = executor.estimate(executor.migrations[-1].operations[0], options)
    report = executor.migrate(options)
    assert report.read_units <= bound.rcu, (report.read_units, bound.rcu)
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1.format(extra="")))
    executor = project.executor()
    delete = executor.migrations[-1].operations[0]
    bound = executor.estimate(delete, MigrateOptions(segments=3))
    with dynorm.capture() as c:
        report = executor.migrate(MigrateOptions(segments=3))
    assert report.applied == ["0003_drop_v1"]
    reads = [r for r in c.requests if r.operation in ("Scan", "BatchGetItem")]
    assert {r.operation for r in reads} == {"Scan", "BatchGetItem"}
    assert len(reads) <= bound.read_requests and sum(r.read_capacity for r in reads) <= bound.rcu


# -- DeleteVersion deletes nothing current and no newer write; catch-up, lease, --plan ------------
def _raw_item(project: Project, version: str, wid: str) -> dict[str, Any] | None:
    for i in widgets(project.table):
        if i["PK"]["S"] == f"{version}#W#{wid}":
            return i
    return None


def _after_copy_rollout(project: Project, n: int) -> None:
    load_v1(project, n)
    project.write_models(**V2)
    project.makemigrations()
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == ["0002_widget_v2"]


@pytest.mark.parametrize("pk,sk", [("W#{widget_id}#{version}", "METADATA"), ("W#{widget_id}", "{version}#META")])
def test_delete_version_never_deletes_items_of_the_current_version(project: Project, pk: str, sk: str) -> None:
    """Templates where {version} does not lead the partition key are accepted (check, makemigrations, copy
    rekey). DeleteVersion's Scan filters on the partition-key prefix before {version} ("W#"), so it reads the
    CURRENT items too; their "current copy" is themselves, so the check passes and they are deleted:
    every item of the entity is gone, with no error."""
    def deploy(version: str) -> Any:
        return project.write_models_source(VERSION_LATE_MODELS.format(pkg=project.pkg, version=version, pk=pk, sk=sk))

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
    report = project.executor().migrate(MigrateOptions())
    assert report.applied == ["0003_drop_v1"]
    assert m.Widget.objects.scan().count() == 11
    stored = sorted((i["PK"]["S"], i["SK"]["S"])
                    for i in widgets(project.table))
    assert len(stored) == 11 and not [k for k in stored if "v1" in "".join(k)], stored  # only v1 items deleted
    assert m.Widget.objects.get(widget_id="fresh").maker == "created by the v2 app"


def test_delete_version_drops_a_v1_update_made_after_the_copy(project: Project) -> None:
    """Copy-mode rollout; an app still on v1 updates an item (acknowledged) after its v2 copy exists.
    DeleteVersion checks only that a copy EXISTS (key projection), not that it is this revision:
    it deletes the newer v1 item and the acknowledged update is gone for good."""
    _after_copy_rollout(project, 10)
    v1 = project.write_models(**V1)
    v1.Widget.objects.filter(widget_id="w00003").update(maker="updated-by-v1-app")  # acknowledged
    assert _raw_item(project, "v1", "w00003")["maker"]["S"] == "updated-by-v1-app"
    project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1.format(extra="")))
    with pytest.raises(MigrationError, match="another revision") as err:  # refused: nothing deleted
        project.executor().migrate(MigrateOptions())
    assert "w00003" in str(err.value)
    assert sum(1 for i in widgets(project.table) if i["PK"]["S"].startswith("v1#")) == 10
    makers = [i["maker"]["S"] for i in widgets(project.table) if i["widget_id"]["S"] == "w00003"]
    assert "updated-by-v1-app" in makers, makers  # refused (v1 kept) or the copy brought up to date


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


def test_delete_version_catch_up_deletes_late_old_items_with_a_copy_and_counts_them(project: Project) -> None:
    """fix10c: DeleteVersion's catch-up pass. Items appearing at v1 during the delete pass (after the scan
    passed them) together with their v2 copy (same revision) are deleted by the catch-up pass (parallel
    segments, each counting in its own tally item), and counted: the applied record says 30 + 3."""
    _after_copy_rollout(project, 30)
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1.format(extra="")))
    name = project.table.table_name()
    v1, v2 = _raw_item(project, "v1", "w00001"), _raw_item(project, "v2", "w00001")
    assert v1 is not None and v2 is not None
    done = {"n": 0}

    def late_items(request: Any, **kwargs: Any) -> None:
        # just before the first catch-up Scan (consistent, no Limit): the delete pass has passed every
        # position, so each late item is one only the catch-up pass can find (inserting them at the
        # first Delete raced the other segment's scan, which deleted some of them in the main pass)
        body = json.loads(request.body)
        if done["n"] == 0 and body.get("ConsistentRead") is True and "Limit" not in body:
            done["n"] = 1
            # a v1 item and its v2 copy, as a copy made during the run leaves them (in one transaction,
            # so the copy first: the other segment's catch-up Scan, running meanwhile, must never find a
            # late v1 item without its copy, which it rightly refuses to delete; seen once in CI at -n 2)
            for k in range(3):
                for item in (v2, v1):
                    late = json.loads(json.dumps(item).replace("w00001", f"late{k}"))
                    backend.call("PutItem", {"TableName": name, "Item": late})

    with Hook("before-send.dynamodb.Scan", late_items):
        with dynorm.capture() as c:
            report = project.executor().migrate(MigrateOptions(segments=2))
    assert done["n"] == 1 and report.applied == ["0003_drop_v1"], report
    assert _at(project, "v1") == [] and len(_at(project, "v2")) == 33
    op = report.operations[-1]
    # pass 1 finds them (pass 2 then none), or the other segment's pass-1 Scan was already sent: pass 2
    # finds its share and pass 3 none
    assert op.catch_up_passes in (2, 3) and op.caught_up == 3, (op.catch_up_passes, op.caught_up)
    assert op.counts["rewritten"] == 33
    catch_up = [r for r in c.requests if r.operation == "Scan" and "Limit" not in r.params
                and r.params.get("ConsistentRead") is True]
    assert len(catch_up) >= 4  # two passes of two segments (the check's Scan reads eventually consistent)
    applied = [i for i in backend.call("Query", {
        "TableName": name, "KeyConditionExpression": "PK = :p AND SK = :s",
        "ExpressionAttributeValues": {":p": {"S": "dynorm#migrations"}, ":s": {"S": "applied#0003_drop_v1"}}})["Items"]]
    assert json.loads(applied[0]["counts"]["S"])["rewritten"] == 33
