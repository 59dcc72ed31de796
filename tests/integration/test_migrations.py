"""Migrations on DynamoDB Local: makemigrations, move/copy rekeys, resume after kill -9, lock."""

from __future__ import annotations

import json
import random
import textwrap
import threading
from typing import Any

import pytest
from click.testing import CliRunner

import dynorm
from dynorm import backend
from dynorm.migrations import MigrationError
from dynorm.migrations.executor import Executor, MigrateOptions
from dynorm.migrations.ledger import Ledger, MigrationLocked
from dynorm.migrations.loader import load_migrations
from tests.faults import Hook, fake_response
from tests.migproject import V1, V2, Project, body, copied_from, load_v1, scan_all, widgets


def test_v1_to_v2_move_rewrites_every_item_and_index(project: Project) -> None:
    load_v1(project, 5000)
    before = {i["widget_id"]["S"]: body(i) for i in widgets(project.table)}
    models = project.write_models(**V2)
    result = project.makemigrations()
    assert result.name == "0002_widget_v2"
    assert "RekeyEntity" in result.source and "S#{size:04d}#W#{widget_id}" in result.source
    report = project.executor().migrate(MigrateOptions(segments=4))
    assert report.applied == ["0002_widget_v2"]
    assert report.totals()["rewritten"] == 5000 and report.totals()["failed"] == 0
    after = widgets(project.table)
    assert len(after) == 5000
    assert all(i["PK"]["S"].startswith("v2#W#") for i in after)  # none left at v1
    assert {i["widget_id"]["S"]: body(i) for i in after} == before  # attributes identical, legacy kept
    # each item records the revision it was moved from: its own (dynorm.streams reads its INSERT as a move)
    assert all(copied_from(i) == [i["_dynorm_rev"]["S"]] for i in after)
    assert sum(1 for i in after if "legacy" in i) == 50
    with dynorm.capture() as c:
        got = models.Widget.objects.get(widget_id="w00042")
        by_maker = list(models.Widget.objects.filter(maker="m0", size=7))
    assert got.size == 42 and c.operations == ["GetItem", "Query"]
    assert sorted(w.widget_id for w in by_maker) == sorted(f"w{i:05d}" for i in range(5000)
                                                          if i % 7 == 0 and i % 50 == 7)
    again = project.executor().migrate(MigrateOptions())
    assert again.applied == [] and set(project.executor().applied()) == {"0001_initial", "0002_widget_v2"}


@pytest.mark.slow(reason="a race soak: application writers during a whole migration (18 s)")
def test_concurrent_application_writes_are_never_lost(project: Project) -> None:
    load_v1(project, 2000)
    project.write_models(**V2)
    project.makemigrations()
    acked: dict[str, int] = {}
    stop = threading.Event()
    name = project.table.table_name()

    def app() -> None:
        rng = random.Random(3)
        while not stop.is_set():
            wid = f"w{rng.randrange(2000):05d}"
            try:
                backend.call("UpdateItem", {
                    "TableName": name, "Key": {"PK": {"S": f"v1#W#{wid}"}, "SK": {"S": "METADATA"}},
                    "UpdateExpression": "SET #c = #c + :one, #v = #v + :one",
                    "ConditionExpression": "attribute_exists(PK)",
                    "ExpressionAttributeNames": {"#c": "counter", "#v": "version"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}}})
                acked[wid] = acked.get(wid, 0) + 1
            except dynorm.ConditionFailed:
                pass  # already moved: not acknowledged

    thread = threading.Thread(target=app)
    thread.start()
    try:
        report = project.executor().migrate(MigrateOptions(segments=2))
    finally:
        stop.set()
        thread.join()
    assert sum(acked.values()) > 50
    after = {i["widget_id"]["S"]: i for i in widgets(project.table)}
    assert len(after) == 2000 and all(i["PK"]["S"].startswith("v2#") for i in after.values())
    for wid, n in acked.items():
        assert int(after[wid]["counter"]["N"]) == n, wid
    assert report.totals()["failed"] == 0


def test_second_migrate_while_locked_fails_clearly(project: Project) -> None:
    load_v1(project, 10)
    project.write_models(**V2)
    project.makemigrations()
    holder = project.executor().ledger()
    holder.acquire()
    try:
        with pytest.raises(MigrationLocked, match="locked by another"):
            project.executor().migrate(MigrateOptions())
        from dynorm.cli import cli

        result = CliRunner().invoke(cli, ["--config", str(project.config()), "migrate"])
        assert result.exit_code == 1 and "MigrationLocked" in result.output and "--force-unlock" in result.output
    finally:
        holder.release()
    assert project.executor().migrate(MigrateOptions()).applied == ["0002_widget_v2"]


def test_dry_run_writes_nothing(project: Project) -> None:
    load_v1(project, 300)
    project.write_models(**V2)
    project.makemigrations()
    before = sorted(map(repr, scan_all(project.table)))
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions(dry_run=True))
    assert report.totals()["rewritten"] == 300
    assert not any(op in ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")
                   for op in c.operations)
    assert sorted(map(repr, scan_all(project.table))) == before


def test_copy_mode_read_versions_then_delete_version(project: Project) -> None:
    load_v1(project, 40)
    models = project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    project.makemigrations()
    # before the backfill, get() falls back to v1 (one extra GetItem)
    with dynorm.capture() as c:
        w = models.Widget.objects.get(widget_id="w00003")
    assert c.operations == ["GetItem", "GetItem"] and w.size == 3
    w.counter = 5
    w.save()  # moved to v2 keys (one transaction), then written there: no v1 item is left behind
    assert [i["PK"]["S"] for i in widgets(project.table) if i["widget_id"]["S"] == "w00003"] == ["v2#W#w00003"]
    report = project.executor().migrate(MigrateOptions(mode="copy"))
    assert report.totals()["rewritten"] == 39 and report.totals()["skipped"] == 0  # w00003 is at v2 only
    items = widgets(project.table)
    assert sum(i["PK"]["S"].startswith("v1#") for i in items) == 39
    assert sum(i["PK"]["S"].startswith("v2#") for i in items) == 40
    assert models.Widget.objects.get(widget_id="w00003").counter == 5  # the application's write won
    mig = project.dir / "migrations" / "0003_drop_v1.py"
    mig.write_text(textwrap.dedent('''
        from dynorm.migrations import operations as ops
        dependencies = ["0002_widget_v2"]
        operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="v1",
                                        pk="{version}#W#{widget_id}")]
    '''))
    assert project.executor().migrate(MigrateOptions()).applied == ["0003_drop_v1"]
    items = widgets(project.table)
    assert len(items) == 40 and all(i["PK"]["S"].startswith("v2#") for i in items)


def test_makemigrations_check_and_no_changes(project: Project) -> None:
    project.write_models(**V1)
    assert project.makemigrations(check=True).operations  # nothing written yet
    assert not (project.dir / "migrations").exists()
    project.makemigrations()
    assert project.makemigrations().operations == []
    project.write_models(**V2)
    assert [type(o).__name__ for o in project.makemigrations(check=True).operations] == ["RekeyEntity"]


@pytest.mark.parametrize("files, message", [
    ({"0001_a.py": "dependencies = ['0000_missing']\noperations = []\n"}, "depends on '0000_missing'"),
    ({"0001_a.py": "dependencies = ['0002_b']\noperations = []\n",
      "0002_b.py": "dependencies = ['0001_a']\noperations = []\n"}, "cycle"),
    ({"0001_a.py": "from dynorm.migrations import operations as ops\ndependencies = []\n"
                   "operations = [ops.CreateTable(name='migshop'), ops.RekeyEntity(table='migshop', "
                   "entity_type='NOPE', from_version='v1', to_version='v2', old={'keys': {}, 'fields': {}}, "
                   "new={'keys': {}, 'fields': {}})]\n"}, "unknown in table"),
    ({"0001_a.py": "dependencies = []\noperations = [1]\n"}, "must be a list of dynorm migration operations"),
    ({"0001_a.py": "dependencies = []\noperations = [\n"}, "cannot import migration"),
])
def test_bad_migration_files_fail_before_any_write(project: Project, files: dict[str, str], message: str) -> None:
    folder = project.dir / "migrations"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for name, text in files.items():
        (folder / name).write_text(text)
    with dynorm.capture() as c:
        with pytest.raises(MigrationError, match=message):
            Executor(load_migrations(project.migrations)).migrate(MigrateOptions())
    assert c.count == 0
    assert not project.table.exists()


def test_ledger_survives_in_the_table(project: Project) -> None:
    load_v1(project, 5)
    ledger: Ledger = project.executor().ledger()
    assert "0001_initial" in ledger.applied()
    assert ledger.name == project.table.table_name()


def test_transform_reshapes_items_on_the_way(project: Project) -> None:
    load_v1(project, 20)
    models = project.write_models(**V2)
    result = project.makemigrations()
    path = result.path
    # a hand edit, as a user would make: uppercase the maker and add an attribute
    text = path.read_text().replace("    ops.RekeyEntity(\n", "    ops.RekeyEntity(\n        transform=reshape,\n", 1)
    text = text.replace("operations = [", "def reshape(item):\n    item['maker'] = item['maker'].upper()\n"
                        "    item['migrated'] = True\n    return item\n\n\noperations = [", 1)
    path.write_text(text)
    report = project.executor().migrate(MigrateOptions())
    assert report.totals()["rewritten"] == 20
    w = models.Widget.objects.get(widget_id="w00003")
    assert w.maker == "M3"
    raw = backend.call("GetItem", {"TableName": project.table.table_name(),
                                   "Key": {"PK": {"S": "v2#W#w00003"}, "SK": {"S": "METADATA"}}})["Item"]
    assert raw["migrated"] == {"BOOL": True} and raw["GSI1PK"] == {"S": "v2#M#M3"}  # keys from the new values


def test_a_transform_that_calls_sys_exit_fails_the_run_with_exit_1(project: Project) -> None:
    """SystemExit(0) raised in a scan segment thread was re-raised as is: exit 0, nothing said, not applied."""
    from dynorm.cli import cli

    load_v1(project, 20)
    project.write_models(**V2)
    path = project.makemigrations().path
    text = path.read_text().replace("    ops.RekeyEntity(\n", "    ops.RekeyEntity(\n        transform=bye,\n", 1)
    path.write_text(text.replace("operations = [", "def bye(item):\n    import sys\n    sys.exit(0)\n\n\n"
                                 "operations = [", 1))
    result = CliRunner().invoke(cli, ["--config", str(project.config()), "migrate"])
    assert result.exit_code == 1, result.output
    assert "a scan segment's code raised SystemExit: 0" in result.output and "not applied" in result.output
    assert "0002_widget_v2" not in project.executor().applied()
    assert all(i["PK"]["S"].startswith("v1#") for i in widgets(project.table))


def test_workers_split_the_segments_and_the_last_one_records_the_migration(project: Project) -> None:
    load_v1(project, 400)
    project.write_models(**V2)
    project.makemigrations()
    first = project.executor().migrate(MigrateOptions(segments=4, worker=(0, 2)))
    assert first.applied == [] and first.operations[-1].status == "waiting for other workers"
    left = widgets(project.table)
    assert 0 < sum(i["PK"]["S"].startswith("v1#") for i in left) < 400  # worker 1's segments untouched
    second = project.executor().migrate(MigrateOptions(segments=4, worker=(1, 2)))
    assert second.applied == ["0002_widget_v2"]
    assert all(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))


def test_a_run_python_is_refused_under_worker_before_any_write(project: Project) -> None:
    """Only scan segments are split: two --worker processes started together both ran a RunPython."""
    from dynorm.cli import cli

    load_v1(project, 3)
    (project.dir / "migrations" / "0002_count.py").write_text(textwrap.dedent('''
        from dynorm.migrations import operations as ops
        def up(ctx):
            ctx.call("UpdateItem", {"TableName": ctx.table_name("migshop"),
                                    "Key": {"PK": {"S": "runs"}, "SK": {"S": "runs"}},
                                    "UpdateExpression": "ADD n :one",
                                    "ExpressionAttributeValues": {":one": {"N": "1"}}})
        def down(ctx):
            up(ctx)
        dependencies = ["0001_initial"]
        operations = [ops.RunPython(up, reverse=down)]
    '''))
    runs = {"TableName": project.table.table_name(), "Key": {"PK": {"S": "runs"}, "SK": {"S": "runs"}},
            "ConsistentRead": True}
    with dynorm.capture() as c:
        for worker in ((0, 2), (1, 2)):
            with pytest.raises(MigrationError, match=r"0002_count \[0\] run up: --worker .* RunPython would run "
                                                     r"once in each of the 2 worker processes"):
                project.executor().migrate(MigrateOptions(worker=worker))
    assert not any(op in ("PutItem", "DeleteItem", "TransactWriteItems", "UpdateItem") for op in c.operations)
    cfg = str(project.config())
    refused = CliRunner().invoke(cli, ["--config", cfg, "migrate", "--worker", "0/2"])
    assert refused.exit_code == 1 and "`dynorm migrate 0002_count` without --worker first" in refused.output
    assert "Item" not in backend.call("GetItem", runs)
    assert project.executor().migrate(MigrateOptions(target="0002_count")).applied == ["0002_count"]
    assert project.executor().migrate(MigrateOptions(worker=(1, 2))).applied == []  # nothing left to split
    with pytest.raises(MigrationError, match=r"`dynorm migrate 0001_initial` without --worker \(it reverses"):
        project.executor().migrate(MigrateOptions(target="0001", worker=(0, 2)))
    assert backend.call("GetItem", runs)["Item"]["n"] == {"N": "1"}  # ran once


# -- issue 10 §1: failed items are never stranded behind an "applied" record ---------------------------------


def _conflicting(hot: set[str]) -> Any:
    """A before-send hook cancelling every transaction that moves one of the ``hot`` v1 partition keys."""

    def hook(request: Any, **kwargs: Any) -> Any:
        actions = json.loads(request.body)["TransactItems"]
        pks = [next(iter(a.values()))["Key"]["PK"]["S"] if "Delete" in a else "" for a in actions]
        if not hot & set(pks):
            return None
        reasons = [{"Code": "TransactionConflict" if pk in hot else "None"} for pk in pks]
        return fake_response(400, {"__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                                   "Message": "Transaction cancelled", "CancellationReasons": reasons})

    return hook


def test_items_that_keep_failing_leave_the_migration_partial_and_a_rerun_retries_exactly_them(
        project: Project) -> None:
    load_v1(project, 600)
    before = {i["widget_id"]["S"]: body(i) for i in widgets(project.table)}
    project.write_models(**V2)
    project.makemigrations()
    hot = {"v1#W#w00007", "v1#W#w00423"}
    with Hook("before-send.dynamodb.TransactWriteItems", _conflicting(hot)):
        report = project.executor().migrate(MigrateOptions(segments=3))
    # not applied, and it says which items and how many
    assert report.applied == [] and report.partial == {"0002_widget_v2": 2}
    assert len(report.failed_items) == 2 and all("TransactionConflict" in f for f in report.failed_items)
    assert "0002_widget_v2" not in project.executor().applied()
    left = {i["PK"]["S"] for i in widgets(project.table) if i["PK"]["S"].startswith("v1#")}
    assert left == hot
    ledger = project.executor().ledger()
    assert sorted(f["key"]["PK"]["S"] for f in ledger.failures("0002_widget_v2")) == sorted(hot)
    assert ledger.progress()["0002_widget_v2"]["failed"] == 2
    assert not any(i["SK"]["S"].startswith("lock#") for i in scan_all(project.table)
                   if i["PK"]["S"] == "dynorm#migrations")
    # the re-run retries the two items only: one GetItem and one transaction per item; the only Scans
    # are the catch-up pass (one 1 MB page per segment, no Limit), which finds nothing left at v1
    with dynorm.capture() as c:
        again = project.executor().migrate(MigrateOptions(segments=3))
    assert again.applied == ["0002_widget_v2"] and again.partial == {}
    scans = [r for r in c.requests if r.operation == "Scan"]
    assert len(scans) == 3 and all("Limit" not in r.params and r.items == 0 for r in scans)
    assert again.operations[-1].catch_up_passes == 1 and again.operations[-1].caught_up == 0
    assert c.operations.count("TransactWriteItems") == 2 and c.operations.count("GetItem") >= 2
    after = widgets(project.table)
    assert len(after) == 600 and all(i["PK"]["S"].startswith("v2#") for i in after)
    assert {i["widget_id"]["S"]: body(i) for i in after} == before
    assert project.executor().ledger().failures("0002_widget_v2") == []


def test_cli_exits_non_zero_with_the_failed_keys_and_showmigrations_says_partial(project: Project) -> None:
    from dynorm.cli import cli

    load_v1(project, 50)
    name = project.table.table_name()
    # an item of the entity type that lacks the value of its new partition key
    backend.call("PutItem", {"TableName": name, "Item": {"PK": {"S": "v1#W#broken"}, "SK": {"S": "METADATA"},
                                                         "entityType": {"S": "WIDGET"}, "maker": {"S": "m1"}}})
    project.write_models(**V2)
    project.makemigrations()
    cfg = str(project.config())
    result = CliRunner().invoke(cli, ["--config", cfg, "migrate"])
    assert result.exit_code == 1, result.output
    assert "1 item(s) failed" in result.output and "NOT applied" in result.output
    assert "v1#W#broken" in result.output and "widget_id" in result.output
    shown = CliRunner().invoke(cli, ["--config", cfg, "showmigrations"])
    assert "[~] 0002_widget_v2 (partial: 1 failed item(s)" in shown.output, shown.output
    again = CliRunner().invoke(cli, ["--config", cfg, "migrate"])  # still broken: still partial, not "No migrations"
    assert again.exit_code == 1 and "1 item(s) failed" in again.output
    backend.call("UpdateItem", {"TableName": name, "Key": {"PK": {"S": "v1#W#broken"}, "SK": {"S": "METADATA"}},
                                "UpdateExpression": "SET widget_id = :w", "ExpressionAttributeValues": {
                                    ":w": {"S": "fixed"}}})
    with dynorm.capture() as c:
        fixed = CliRunner().invoke(cli, ["--config", cfg, "migrate"])
    assert fixed.exit_code == 0, fixed.output
    assert "Applied 1 migration(s)" in fixed.output
    # no Scan of the old pages (Limit 200): only the catch-up pass (1 MB pages), which finds nothing
    assert all("Limit" not in r.params and r.items == 0 for r in c.requests if r.operation == "Scan")
    assert backend.call("GetItem", {"TableName": name, "Key": {"PK": {"S": "v2#W#fixed"},
                                                               "SK": {"S": "METADATA"}}}).get("Item")
    shown = CliRunner().invoke(cli, ["--config", cfg, "showmigrations"])
    assert "[X] 0002_widget_v2" in shown.output


# -- issue 10 §6: backwards migrations -----------------------------------------------------------------------


def test_migrating_back_to_an_earlier_target_reverses_a_rekey(project: Project) -> None:
    load_v1(project, 300)
    before = {i["widget_id"]["S"]: body(i) for i in widgets(project.table)}
    project.write_models(**V2)
    project.makemigrations()
    assert project.executor().migrate(MigrateOptions()).applied == ["0002_widget_v2"]
    assert project.executor().plan("0001") == []  # nothing to apply forwards
    report = project.executor().migrate(MigrateOptions(target="0001"))
    assert report.unapplied == ["0002_widget_v2"] and report.applied == []
    back = widgets(project.table)
    assert len(back) == 300 and all(i["PK"]["S"].startswith("v1#W#") for i in back)
    assert all(i["GSI1SK"]["S"].startswith("W#") for i in back)  # the v1 GSI template again
    assert {i["widget_id"]["S"]: body(i) for i in back} == before
    assert set(project.executor().applied()) == {"0001_initial"}
    # and forwards again: the ledger forgot the reversed migration's checkpoints
    assert project.executor().migrate(MigrateOptions()).applied == ["0002_widget_v2"]
    assert all(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))


def test_reversing_an_operation_without_inverse_is_refused_before_any_write(project: Project) -> None:
    from dynorm.cli import cli

    load_v1(project, 10)
    (project.dir / "migrations" / "0002_seed.py").write_text(textwrap.dedent('''
        from dynorm.migrations import operations as ops
        def seed(ctx):
            pass
        dependencies = ["0001_initial"]
        operations = [ops.RunPython(seed)]
    '''))
    assert project.executor().migrate(MigrateOptions()).applied == ["0002_seed"]
    with dynorm.capture() as c:
        with pytest.raises(MigrationError, match="RunPython.*reverse="):
            project.executor().migrate(MigrateOptions(target="0001_initial"))
    assert not any(op in ("PutItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem", "UpdateItem")
                   for op in c.operations)
    result = CliRunner().invoke(cli, ["--config", str(project.config()), "migrate", "0001"])
    assert result.exit_code == 1 and "cannot be reversed" in result.output
    with pytest.raises(MigrationError, match="drop the table"):
        load_migrations(project.migrations)[0].operations[0].inverse()


def test_run_python_with_reverse_runs_it_backwards(project: Project) -> None:
    load_v1(project, 3)
    (project.dir / "migrations" / "0002_flag.py").write_text(textwrap.dedent('''
        from dynorm.migrations import operations as ops
        def key(ctx):
            return {"PK": {"S": "flag"}, "SK": {"S": "flag"}}
        def up(ctx):
            ctx.call("PutItem", {"TableName": ctx.table_name("migshop"), "Item": key(ctx)})
        def down(ctx):
            ctx.call("DeleteItem", {"TableName": ctx.table_name("migshop"), "Key": key(ctx)})
        dependencies = ["0001_initial"]
        operations = [ops.RunPython(up, reverse=down)]
    '''))
    flag = {"TableName": project.table.table_name(), "Key": {"PK": {"S": "flag"}, "SK": {"S": "flag"}}}
    project.executor().migrate(MigrateOptions())
    assert "Item" in backend.call("GetItem", flag)
    assert project.executor().migrate(MigrateOptions(target="0001")).unapplied == ["0002_flag"]
    assert "Item" not in backend.call("GetItem", flag)


def test_migrating_back_with_fake_only_unrecords_and_writes_no_item(project: Project) -> None:
    """Django's ``migrate <older> --fake``: the later migrations are un-recorded; no RunPython reverse runs,
    no rekey moves an item back (also when an operation has no inverse)."""
    from dynorm.cli import cli

    load_v1(project, 40)
    project.write_models(**V2)
    assert project.makemigrations().name == "0002_widget_v2"
    (project.dir / "migrations" / "0003_flag.py").write_text(textwrap.dedent('''
        from dynorm.migrations import operations as ops
        def put(ctx, sk):
            ctx.call("PutItem", {"TableName": ctx.table_name("migshop"),
                                 "Item": {"PK": {"S": "flag"}, "SK": {"S": sk}}})
        def up(ctx):
            put(ctx, "up")
        def down(ctx):
            put(ctx, "down")
        def once(ctx):
            put(ctx, "once")
        dependencies = ["0002_widget_v2"]
        operations = [ops.RunPython(up, reverse=down), ops.RunPython(once)]
    '''))
    assert project.executor().migrate(MigrateOptions()).applied == ["0002_widget_v2", "0003_flag"]
    before = sorted(scan_all(project.table), key=lambda i: (i["PK"]["S"], i["SK"]["S"]))
    items = [i for i in before if i["PK"]["S"] != "dynorm#migrations"]
    cfg = str(project.config())
    plan = CliRunner().invoke(cli, ["--config", cfg, "migrate", "0001", "--fake", "--plan"])
    assert plan.exit_code == 0 and "0002_widget_v2: --fake: would be recorded as not applied" in plan.output
    with dynorm.capture() as c:
        result = CliRunner().invoke(cli, ["--config", cfg, "migrate", "0001", "--fake", "--yes"])
    assert result.exit_code == 0, result.output
    assert "Recorded 2 migration(s) as not applied (--fake: their inverse operations were NOT run" in result.output
    assert "0003_flag, 0002_widget_v2" in result.output and "Reversed" not in result.output
    writes = [r for r in c.requests if r.operation in ("PutItem", "DeleteItem", "UpdateItem", "TransactWriteItems",
                                                       "BatchWriteItem")]
    assert writes and all(r.operation != "TransactWriteItems" and r.operation != "BatchWriteItem" for r in writes)
    assert all((r.params.get("Key") or r.params["Item"])["PK"]["S"] == "dynorm#migrations" for r in writes)
    after = sorted(scan_all(project.table), key=lambda i: (i["PK"]["S"], i["SK"]["S"]))
    assert [i for i in after if i["PK"]["S"] != "dynorm#migrations"] == items  # still at v2, no "down" flag
    assert set(project.executor().applied()) == {"0001_initial"} and not project.executor().started()


# -- issue 10 §6/§7: progress, --plan cost, pacing, consistency ------------------------------------------------


def test_plan_prints_requests_and_capacity_and_json_progress_lines(project: Project) -> None:
    from dynorm.cli import cli

    load_v1(project, 400)
    project.write_models(**V2)
    project.makemigrations()
    cfg = str(project.config())
    with dynorm.capture() as c:
        plan = CliRunner().invoke(cli, ["--config", cfg, "migrate", "--plan", "--max-wcu", "100"])
    assert plan.exit_code == 0, plan.output
    assert not any(op not in ("DescribeTable", "Query", "GetItem") for op in c.operations)
    # 400 widgets (+ the ledger items) of ~150 B: 2 pages + 4 segment ends; 0.5 RCU per 4 KB read eventually
    assert "rekey WIDGET in migshop from v1 to v2" in plan.output
    assert "request(s), <= " in plan.output and "RCU (eventually consistent Scan/Query" in plan.output
    line = next(x for x in plan.output.splitlines() if "WCU" in x and "writes" in x)
    wcu = int(line.split("<= ")[2].split(" WCU")[0])
    # Put 2 + Delete 2 + GSI delete 1 + GSI put 1 per item of <= 1 KB; the bound adds 6 per KB of the
    # table's total size (it holds whatever the item sizes; see docs/migrations.md)
    assert 400 * 6 <= wcu <= 400 * 6 * 1.2
    assert "2 WCU per KB" in plan.output
    result = CliRunner().invoke(cli, ["--config", cfg, "migrate", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["applied"] == ["0002_widget_v2"] and summary["totals"]["rewritten"] == 400
    events = [json.loads(x) for x in result.stderr.splitlines() if x.startswith("{")]
    done = [e for e in events if e["event"] == "done"]
    assert done and done[-1]["rewritten"] == 400 and done[-1]["total"] >= 400
    assert done[-1]["percent"] is not None and done[-1]["items_per_s"] > 0


def test_max_wcu_paces_the_writes_of_all_segments(project: Project) -> None:
    from dynorm.migrations.cost import Pacer

    load_v1(project, 200)
    project.write_models(**V2)
    project.makemigrations()
    executor = project.executor()
    waits: list[float] = []
    options = MigrateOptions(segments=4, max_wcu=400)
    original = Pacer.__init__

    def recording(self: Pacer, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **{**kwargs, "sleep": waits.append})

    Pacer.__init__ = recording  # type: ignore[method-assign]
    try:
        report = executor.migrate(options)
    finally:
        Pacer.__init__ = original  # type: ignore[method-assign]
    assert report.applied == ["0002_widget_v2"]
    # 200 items x 6 WCU = 1200 WCU at 400/s with 400 of burst: at least 2 s of waiting asked for
    assert report.write_units == 1200
    assert sum(waits) >= (1200 - 400) / 400 - 0.01


def test_scans_are_eventually_consistent_by_default_and_consistent_on_request(project: Project) -> None:
    load_v1(project, 100)
    project.write_models(**V2)
    project.makemigrations()
    with dynorm.capture() as c:
        project.executor().migrate(MigrateOptions(target="0002", dry_run=True))
    scans = [r for r in c.requests if r.operation == "Scan"]
    assert scans and all(r.params["ConsistentRead"] is False for r in scans)
    eventual = sum(r.read_capacity for r in scans)
    with dynorm.capture() as c:
        project.executor().migrate(MigrateOptions(dry_run=True, consistent_read=True))
    scans = [r for r in c.requests if r.operation == "Scan"]
    assert scans and all(r.params["ConsistentRead"] is True for r in scans)
    assert sum(r.read_capacity for r in scans) == pytest.approx(2 * eventual, rel=0.2)
    with dynorm.capture() as c:
        project.executor().migrate(MigrateOptions(mode="copy", dry_run=True))
    assert all(r.params["ConsistentRead"] is True for r in c.requests if r.operation == "Scan")


# -- issue 10 §5: a version bump that splits an item collection is refused -------------------------------------

COLLECTION_SRC = '''
from dynorm import Entity, fields
from {pkg}.tables import MigShop

class Issue(Entity):
    issue_id = fields.String()
    title = fields.String()

    class Meta:
        table = MigShop
        entity_type = "ISSUE"
        key_version = "{issue}"
        pk = "{{version}}#I#{{issue_id}}"
        sk = "ISSUE"

class Comment(Entity):
    issue_id = fields.String()
    comment_id = fields.String()
    text = fields.String()

    class Meta:
        table = MigShop
        entity_type = "COMMENT"
        key_version = "{comment}"
        pk = "{{version}}#I#{{issue_id}}"
        sk = "C#{{comment_id}}"
'''


def _collection_models(project: Project, issue: str, comment: str) -> Any:
    import importlib
    import sys

    (project.dir / "models.py").write_text(COLLECTION_SRC.format(pkg=project.pkg, issue=issue, comment=comment))
    name = f"{project.pkg}.models"
    return importlib.reload(sys.modules[name]) if name in sys.modules else importlib.import_module(name)


def test_bumping_one_member_of_an_item_collection_is_refused_by_check_and_makemigrations(project: Project) -> None:
    from dynorm.cli import cli

    models = _collection_models(project, "v1", "v1")
    assert project.makemigrations().name == "0001_initial"
    project.executor().migrate(MigrateOptions())
    models.Issue.objects.create(issue_id="i1", title="t")
    for c in range(180):
        models.Comment.objects.create(issue_id="i1", comment_id=f"{c:03d}", text="x")
    assert project.table.check() == []
    cfg = str(project.config())
    models = _collection_models(project, "v2", "v1")  # the bug: only Issue bumped
    problems = project.table.check()
    assert len(problems) == 1 and "item collection split" in problems[0]
    assert "Issue(ISSUE) at v2" in problems[0] and "Comment(COMMENT) at v1" in problems[0]
    assert "bump key_version of Comment(COMMENT) to 'v2'" in problems[0]
    result = CliRunner().invoke(cli, ["--config", cfg, "check"])
    assert result.exit_code == 1 and "item collection split" in result.output
    with pytest.raises(MigrationError, match="splits an item collection.*COMMENT.*bump key_version of COMMENT"):
        project.makemigrations()
    made = CliRunner().invoke(cli, ["--config", cfg, "makemigrations", "--check"])
    assert made.exit_code == 1 and "splits an item collection" in made.output
    assert sorted(p.name for p in (project.dir / "migrations").glob("0*.py")) == ["0001_initial.py"]
    # bumped together: accepted, and the collection stays whole
    models = _collection_models(project, "v2", "v2")
    assert project.table.check() == []
    result = project.makemigrations()
    assert [type(o).__name__ for o in result.operations] == ["RekeyEntity", "RekeyEntity"]
    assert project.executor().migrate(MigrateOptions()).applied == [result.name]
    assert len(list(models.Issue.objects.collection(issue_id="i1"))) == 181


def test_a_stop_ends_every_segment_at_a_checkpoint_and_the_next_run_finishes(project: Project) -> None:
    from dynorm.migrations.executor import MigrationInterrupted

    load_v1(project, 1000)
    before = {i["widget_id"]["S"]: body(i) for i in widgets(project.table)}
    project.write_models(**V2)
    project.makemigrations()
    stop = threading.Event()
    sent = {"n": 0}

    def stop_after_three(**kwargs: Any) -> None:  # as if Ctrl-C came after the third transaction
        sent["n"] += 1
        if sent["n"] == 3:
            stop.set()

    with Hook("after-call.dynamodb.TransactWriteItems", stop_after_three):
        with pytest.raises(MigrationInterrupted) as info:
            project.executor().migrate(MigrateOptions(segments=4, stop=stop))
    assert info.value.report.operations[-1].status == "interrupted"
    assert sent["n"] <= 3 + 4  # at most the transaction in flight in each segment after the stop
    items = widgets(project.table)
    assert len(items) == 1000 and 0 < sum(i["PK"]["S"].startswith("v2#") for i in items) <= 50 * 7
    ledger = [i for i in scan_all(project.table) if i["PK"]["S"] == "dynorm#migrations"]
    assert not any(i["SK"]["S"].startswith(("lock#", "applied#0002")) for i in ledger)
    report = project.executor().migrate(MigrateOptions(segments=4))
    assert report.applied == ["0002_widget_v2"]
    after = widgets(project.table)
    assert len(after) == 1000 and {i["widget_id"]["S"]: body(i) for i in after} == before


def test_a_failed_item_deleted_meanwhile_is_not_retried(project: Project) -> None:
    load_v1(project, 100)
    project.write_models(**V2)
    project.makemigrations()
    hot = {"v1#W#w00011"}
    with Hook("before-send.dynamodb.TransactWriteItems", _conflicting(hot)):
        assert project.executor().migrate(MigrateOptions()).partial == {"0002_widget_v2": 1}
    backend.call("DeleteItem", {"TableName": project.table.table_name(),
                                "Key": {"PK": {"S": "v1#W#w00011"}, "SK": {"S": "METADATA"}}})  # the app deleted it
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions())
    assert report.applied == ["0002_widget_v2"] and "TransactWriteItems" not in c.operations
    assert len(widgets(project.table)) == 99


# -- reversals with failed items, worker locks, --plan and --max-wcu bounds, copy rollbacks ------
def test_reverse_with_failed_items_is_reported_partial_and_exits_non_zero(project: Project) -> None:
    """Backwards migration whose items keep failing: today it says nothing, exits 0, and the
    migration stays 'applied' while part of its items are back at v1 (a forward re-run then
    says "No migrations to apply" and leaves them stranded)."""
    from dynorm.cli import cli

    load_v1(project, 100)
    project.write_models(**V2)
    project.makemigrations()
    assert project.executor().migrate(MigrateOptions()).applied == ["0002_widget_v2"]
    hot = {"v2#W#w00007"}
    cfg = str(project.config())
    with Hook("before-send.dynamodb.TransactWriteItems", _conflicting(hot)):
        result = CliRunner().invoke(cli, ["--config", cfg, "migrate", "0001"])
    items = widgets(project.table)
    at_v1 = sum(i["PK"]["S"].startswith("v1#") for i in items)
    assert at_v1 == 99  # the reverse did run for the others
    assert result.exit_code != 0, result.output  # actual: 0
    assert "failed" in result.output and "v2#W#w00007" in result.output, result.output
    # and a plain forward `migrate` must not claim there is nothing to do with 99 items at v1
    forward = CliRunner().invoke(cli, ["--config", cfg, "migrate"])
    assert "No migrations to apply" not in forward.output, forward.output


def test_reverse_with_failed_items_reports_partial_in_the_api(project: Project) -> None:
    load_v1(project, 60)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    with Hook("before-send.dynamodb.TransactWriteItems", _conflicting({"v2#W#w00003"})):
        report = project.executor().migrate(MigrateOptions(target="0001"))
    assert report.unapplied == []
    # before the fix: partial == {} (the failure was only in failed_items)
    assert report.partial != {} and report.failed_items, report


def test_a_worker_lock_does_not_let_a_plain_migrate_run_at_the_same_time(project: Project) -> None:
    """`--worker 0/2` takes lock#w0of2, a plain `migrate` (or a backwards one) takes lock#all:
    both run at once on the same table (a forward worker and a reverse run can interleave)."""
    load_v1(project, 10)
    project.write_models(**V2)
    project.makemigrations()
    holder = project.executor().ledger()
    holder.acquire("w0of2")  # a `dynorm migrate --worker 0/2` in progress
    try:
        with pytest.raises(MigrationLocked):
            project.executor().migrate(MigrateOptions())
    finally:
        holder.release()


def test_backwards_to_before_a_partial_migration_is_not_silently_a_no_op(project: Project) -> None:
    """0002 is partial (one item failed; 59 items at v2). `migrate 0001` says
    "No migrations to apply" (exit 0) and leaves the 59 items where the v1 app cannot see them."""
    from dynorm.cli import cli

    load_v1(project, 60)
    project.write_models(**V2)
    project.makemigrations()
    with Hook("before-send.dynamodb.TransactWriteItems", _conflicting({"v1#W#w00003"})):
        assert project.executor().migrate(MigrateOptions()).partial == {"0002_widget_v2": 1}
    result = CliRunner().invoke(cli, ["--config", str(project.config()), "migrate", "0001"])
    at_v2 = sum(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))
    # either the partial migration is reversed (all back at v1) or the command refuses (exit != 0)
    assert at_v2 == 0 or result.exit_code != 0, (at_v2, result.exit_code, result.output)


def test_plan_write_bound_is_an_upper_bound_with_mixed_item_sizes(project: Project) -> None:
    """`migrate --plan` prints '<= N WCU' from the average item size; with half the items ~100 B and
    half ~1.5 KB the documented per-item rules (which the pacer itself applies) give more."""
    load_v1(project, 100)
    name = project.table.table_name()
    for i in range(0, 100, 2):
        backend.call("UpdateItem", {"TableName": name, "Key": {"PK": {"S": f"v1#W#w{i:05d}"}, "SK": {"S": "METADATA"}},
                                    "UpdateExpression": "SET padding = :b",
                                    "ExpressionAttributeValues": {":b": {"S": "x" * 1500}}})
    project.write_models(**V2)
    project.makemigrations()
    executor = project.executor()
    op = executor.migrations[-1].operations[0]
    bound = executor.estimate(op, MigrateOptions(segments=1))
    report = executor.migrate(MigrateOptions(segments=1, max_wcu=1_000_000))
    assert report.totals()["rewritten"] == 100
    assert report.write_units <= bound.wcu, (report.write_units, bound.wcu)  # actual: 900 > 612


@pytest.mark.slow(reason="paced by --max-wcu in real seconds (17 s)")
def test_max_wcu_is_not_exceeded_by_one_transaction_many_times_over(project: Project) -> None:
    """--max-wcu 20 (one second of burst, docs): each moved item here costs 6 WCU by the documented
    rules (Put 2 + Delete 2 + one GSI entry removed and one written), yet a transaction of 50 items
    (300 WCU, 15x the budget) is sent in one go after a long wait: the live application is starved
    for that second."""
    import time

    load_v1(project, 60)
    project.write_models(**V2)
    project.makemigrations()
    sends: list[tuple[float, int]] = []

    def count(request: Any, **kwargs: Any) -> None:
        actions = json.loads(request.body)["TransactItems"]
        sends.append((time.monotonic(), 6 * sum(1 for a in actions if "Put" in a)))

    with Hook("before-send.dynamodb.TransactWriteItems", count):
        report = project.executor().migrate(MigrateOptions(segments=1, max_wcu=20))
    assert report.applied == ["0002_widget_v2"]
    worst = max(sum(u for t, u in sends if s <= t < s + 1.0) for s, _ in sends)
    assert worst <= 2 * 20, (worst, sends)  # rate + one second of burst; actual: 300


def test_a_partial_reversal_rerun_finishes_it_and_forgets_the_migration(project: Project) -> None:
    from dynorm.cli import cli

    load_v1(project, 60)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    with Hook("before-send.dynamodb.TransactWriteItems", _conflicting({"v2#W#w00003"})):
        assert project.executor().migrate(MigrateOptions(target="0001")).partial == {"0002_widget_v2": 1}
    shown = CliRunner().invoke(cli, ["--config", str(project.config()), "showmigrations"])
    assert "[~] 0002_widget_v2 (partly reversed: 1 failed item(s)" in shown.output, shown.output
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions(target="0001"))
    assert report.unapplied == ["0002_widget_v2"] and report.partial == {}
    assert c.operations.count("TransactWriteItems") == 1  # only the failed item is retried
    assert all(i["PK"]["S"].startswith("v1#") for i in widgets(project.table))
    assert project.executor().applied().keys() == {"0001_initial"} and project.executor().started() == set()


def test_backwards_from_a_partial_forward_run_moves_back_what_was_moved(project: Project) -> None:
    from dynorm.cli import cli

    load_v1(project, 60)
    project.write_models(**V2)
    project.makemigrations()
    with Hook("before-send.dynamodb.TransactWriteItems", _conflicting({"v1#W#w00003"})):
        assert project.executor().migrate(MigrateOptions()).partial == {"0002_widget_v2": 1}
    result = CliRunner().invoke(cli, ["--config", str(project.config()), "migrate", "0001"])
    assert result.exit_code == 0 and "Reversed 1 migration(s): 0002_widget_v2" in result.output, result.output
    assert len(widgets(project.table)) == 60 and all(i["PK"]["S"].startswith("v1#") for i in widgets(project.table))
    shown = CliRunner().invoke(cli, ["--config", str(project.config()), "showmigrations"])
    assert "[ ] 0002_widget_v2" in shown.output, shown.output
    assert project.executor().migrate(MigrateOptions()).applied == ["0002_widget_v2"]  # and forward again
    assert all(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))


def test_worker_locks_of_one_split_coexist_and_exclude_every_other_run(project: Project) -> None:
    load_v1(project, 1)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions(target="0001"))
    w0, w1, other, plain = (project.executor().ledger() for _ in range(4))
    w0.acquire("w0of2")
    try:
        w1.acquire("w1of2")  # the same split: they share the segments
        for ledger, worker in ((other, "w0of3"), (other, "w0of2"), (plain, "all")):
            with pytest.raises(MigrationLocked):
                ledger.acquire(worker)
        w1.release()
    finally:
        w0.release()
    plain.acquire("all")
    try:
        with pytest.raises(MigrationLocked):
            w0.acquire("w0of2")  # a worker while a plain (or backwards) run holds the table
    finally:
        plain.release()
    assert not plain._query_prefix("lock#")  # every refused run gave its lock back


def test_a_lock_that_cannot_be_renewed_stops_the_run_at_a_checkpoint(project: Project) -> None:
    from dynorm.migrations.executor import MigrationInterrupted

    load_v1(project, 60)
    project.write_models(**V2)
    project.makemigrations()

    def fail_heartbeats(request: Any, **kwargs: Any) -> Any:
        if b"lock#" in request.body and b"expires_at" in request.body:
            return fake_response(400, {"__type": "com.amazonaws.dynamodb.v20120810#ValidationException",
                                       "Message": "injected: heartbeat fails"})
        return None

    with Hook("before-send.dynamodb.UpdateItem", fail_heartbeats):
        with pytest.raises(MigrationInterrupted, match="could not be renewed"):
            project.executor().migrate(MigrateOptions(segments=1, lock_ttl=1.5, max_wcu=40))
    assert "0002_widget_v2" not in project.executor().applied()
    assert project.executor().migrate(MigrateOptions()).applied == ["0002_widget_v2"]  # resumes
    assert all(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))


def _get_raw(project: Project, pk: str) -> dict[str, Any] | None:
    return backend.call("GetItem", {"TableName": project.table.table_name(), "ConsistentRead": True,
                                    "Key": {"PK": {"S": pk}, "SK": {"S": "METADATA"}}}).get("Item")


def test_reverse_after_copy_rollout_keeps_the_writes_made_at_v2(project: Project) -> None:
    """Copy-mode rollout, the v2 app acknowledges an update, then the operator migrates back:
    the reverse used to 'skip' the item (its v1 copy exists) so the v1 app read the old value.
    Now the differing copy fails the item: the reversal is partial and nothing is lost."""
    load_v1(project, 20)
    project.write_models(**V2)
    project.makemigrations()
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == ["0002_widget_v2"]
    models = project.write_models(**V2)
    w = models.Widget.objects.get(widget_id="w00005")
    w.counter = 41
    w.save()  # acknowledged at v2
    report = project.executor().migrate(MigrateOptions(target="0001"))
    # which copy is current cannot be known from the table: the item fails, loudly, and both stay
    assert report.partial and any("w00005" in k for k in report.failed_items), report.failed_items
    assert "different item" in " ".join(report.failed_items) or report.partial
    v2 = _get_raw(project, "v2#W#w00005")
    assert v2 is not None and v2["counter"] == {"N": "41"}, v2  # the acknowledged write is kept


def test_forward_move_after_reverse_of_copy_rollout_keeps_the_writes_made_at_v1(project: Project) -> None:
    """Copy forward, reverse (v2 copies stay, as documented), the v1 app writes, then forward in
    move mode: the move 'skips' the item (a stale v2 copy exists), leaves v1 behind, and the v2 app
    reads the stale value: the write acknowledged after the rollback is lost."""
    load_v1(project, 20)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions(mode="copy"))
    project.executor().migrate(MigrateOptions(target="0001"))
    models = project.write_models(**V1)
    w = models.Widget.objects.get(widget_id="w00005")
    w.counter = 7
    w.save()  # acknowledged at v1, after the rollback
    report = project.executor().migrate(MigrateOptions(mode="move"))
    assert report.applied == ["0002_widget_v2"]
    v2 = _get_raw(project, "v2#W#w00005")
    assert v2 is not None and v2["counter"] == {"N": "7"}, v2  # actual: counter 0
    assert _get_raw(project, "v1#W#w00005") is None  # move mode leaves nothing at v1
