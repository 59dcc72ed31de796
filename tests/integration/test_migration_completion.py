"""Finishing a migration without stranding items: the move's catch-up pass, DeleteVersion's check for
current-version copies, DeleteVersion's pacing, ``--lock-ttl`` and the ``--plan`` read bound (issue 10)."""

from __future__ import annotations

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
from tests.migproject import V1, V2, Project, load_v1, widgets

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

    def old_app_keeps_creating(**kwargs: Any) -> None:
        wid = f"new{len(created):03d}"
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
    assert len(catch_up) == 2 and all(r.items == 0 and r.params["ConsistentRead"] is False for r in catch_up)
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

def test_delete_version_batches_stay_within_the_write_budget(project: Project) -> None:
    load_v1(project, 100)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions(mode="copy"))
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1.format(extra="")))
    sent: list[tuple[float, float, int]] = []

    def consumed(parsed: Any, **kwargs: Any) -> None:
        units = sum(float(c.get("CapacityUnits", 0.0)) for c in parsed.get("ConsumedCapacity") or [])
        sent.append((time.monotonic(), units, 0))

    budget = 30.0
    with Hook("after-call.dynamodb.BatchWriteItem", consumed):
        report = project.executor().migrate(MigrateOptions(segments=2, max_wcu=budget))
    assert report.applied == ["0003_drop_v1"] and _at(project, "v1") == []
    assert sent and sum(u for _, u, _ in sent) >= 100  # DynamoDB reported every delete's units
    # no request costs more than one second of the budget (25 deletes of 2 WCU would be 50) ...
    assert max(u for _, u, _ in sent) <= budget, sent
    # ... and no second sees more than the rate plus one second of burst
    worst = max(sum(u for t, u, _ in sent if s <= t < s + 1.0) for s, _, _ in sent)
    assert worst <= 2 * budget, (worst, sent)


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
    assert len(leases) == 1 and 295 < leases[0] <= 300
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
