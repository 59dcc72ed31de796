"""Migrations on DynamoDB Local: makemigrations, move/copy rekeys, resume after kill -9, lock."""

from __future__ import annotations

import random
import textwrap
import threading

import pytest
from click.testing import CliRunner

import dynorm
from dynorm import backend
from dynorm.migrations import MigrationError
from dynorm.migrations.executor import Executor, MigrateOptions
from dynorm.migrations.ledger import Ledger, MigrationLocked
from dynorm.migrations.loader import load_migrations
from tests.migproject import V1, V2, Project, body, load_v1, scan_all, widgets


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
    assert sum(1 for i in after if "legacy" in i) == 50
    with dynorm.capture() as c:
        got = models.Widget.objects.get(widget_id="w00042")
        by_maker = list(models.Widget.objects.filter(maker="m0", size=7))
    assert got.size == 42 and c.operations == ["GetItem", "Query"]
    assert sorted(w.widget_id for w in by_maker) == sorted(f"w{i:05d}" for i in range(5000)
                                                          if i % 7 == 0 and i % 50 == 7)
    again = project.executor().migrate(MigrateOptions())
    assert again.applied == [] and set(project.executor().applied()) == {"0001_initial", "0002_widget_v2"}


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
    w.save()  # written under v2 keys; the v1 item stays
    report = project.executor().migrate(MigrateOptions(mode="copy"))
    assert report.totals()["rewritten"] == 39 and report.totals()["skipped"] == 1  # w00003 already at v2
    items = widgets(project.table)
    assert sum(i["PK"]["S"].startswith("v1#") for i in items) == 40
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
