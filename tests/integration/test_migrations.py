"""Migrations on DynamoDB Local: makemigrations, move/copy rekeys, resume after kill -9, lock."""

from __future__ import annotations

import importlib
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

import dynorm
from dynorm import backend, conf, tables
from dynorm.migrations import MigrationError
from dynorm.migrations.api import make_migrations
from dynorm.migrations.executor import Executor, MigrateOptions
from dynorm.migrations.ledger import Ledger, MigrationLocked
from dynorm.migrations.loader import load_migrations

REPO = Path(__file__).resolve().parents[2]

TABLE_SRC = '''
from dynorm import Table

class MigShop(Table):
    class Meta:
        table_name = "migshop"
        gsi_count = 1
'''

MODELS_SRC = '''
from dynorm import Entity, Index, fields
from {pkg}.tables import MigShop

class Widget(Entity):
    widget_id = fields.String()
    maker = fields.String()
    size = fields.Integer(default=0)
    counter = fields.Integer(default=0)
    version = fields.Version()

    class Meta:
        table = MigShop
        entity_type = "WIDGET"
        key_version = "{version}"
        read_versions = {read_versions}
        pk = "{{version}}#W#{{widget_id}}"
        sk = "METADATA"
        indexes = {{"by_maker": Index("GSI1", pk="{{version}}#M#{{maker}}", sk={gsi_sk!r})}}
'''

V1 = {"version": "v1", "gsi_sk": "W#{widget_id}", "read_versions": None}
V2 = {"version": "v2", "gsi_sk": "S#{size:04d}#W#{widget_id}", "read_versions": None}


class Project:
    """A throwaway project on disk: <pkg>/tables.py, <pkg>/models.py, <pkg>/migrations/."""

    def __init__(self, root: Path, pkg: str) -> None:
        self.root = root
        self.pkg = pkg
        self.dir = root / pkg
        self.dir.mkdir()
        (self.dir / "__init__.py").write_text("")
        (self.dir / "tables.py").write_text(TABLE_SRC)
        self.migrations = f"{pkg}.migrations"
        sys.path.insert(0, str(root))

    def write_models(self, **variant: Any) -> Any:
        (self.dir / "models.py").write_text(MODELS_SRC.format(pkg=self.pkg, **variant))
        name = f"{self.pkg}.models"
        module = importlib.reload(sys.modules[name]) if name in sys.modules else importlib.import_module(name)
        return module

    @property
    def table(self) -> Any:
        return importlib.import_module(f"{self.pkg}.tables").MigShop

    def makemigrations(self, **kw: Any) -> Any:
        return make_migrations(self.migrations, [self.table], **kw)

    def executor(self) -> Executor:
        return Executor(load_migrations(self.migrations))

    def config(self) -> Path:
        cfg = self.root / "dynorm.yaml"
        settings = conf.get_settings()
        cfg.write_text(f"models: [{self.pkg}.models]\nmigrations: {self.migrations}\n"
                       f"table_prefix: '{settings.table_prefix}'\n"
                       f"connection: {{region: us-east-1, endpoint: '{settings.endpoint}'}}\n")
        return cfg

    def cleanup(self) -> None:
        table = self.table
        if table.exists():
            table.delete_table()
        if table in tables._TABLES:
            tables._TABLES.remove(table)
        sys.path.remove(str(self.root))
        for name in [m for m in sys.modules if m == self.pkg or m.startswith(self.pkg + ".")]:
            del sys.modules[name]


_n = iter(range(10_000))


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    proj = Project(tmp_path, f"migproj{os.getpid()}_{next(_n)}")
    try:
        yield proj
    finally:
        proj.cleanup()


def scan_all(table: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {"TableName": table.table_name(), "ConsistentRead": True}
    while True:
        resp = backend.call("Scan", params)
        items += resp["Items"]
        if "LastEvaluatedKey" not in resp:
            return items
        params["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def widgets(table: Any) -> list[dict[str, Any]]:
    return [i for i in scan_all(table) if i.get("entityType", {}).get("S") == "WIDGET"]


def body(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in ("PK", "SK", "GSI1PK", "GSI1SK")}


def load_v1(project: Project, n: int) -> Any:
    models = project.write_models(**V1)
    result = project.makemigrations()
    assert result.name == "0001_initial"
    project.executor().migrate(MigrateOptions())
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i:05d}", maker=f"m{i % 7}", size=i % 50)
                                       for i in range(n)])
    for i in range(0, n, max(1, n // 50)):  # an attribute no model declares
        backend.call("UpdateItem", {"TableName": project.table.table_name(),
                                    "Key": {"PK": {"S": f"v1#W#w{i:05d}"}, "SK": {"S": "METADATA"}},
                                    "UpdateExpression": "SET legacy = :l", "ExpressionAttributeValues": {
                                        ":l": {"M": {"note": {"S": f"kept {i}"}}}}})
    return models


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


def test_kill_minus_9_at_random_moments_then_finish(project: Project) -> None:
    load_v1(project, 5000)
    before = {i["widget_id"]["S"]: body(i) for i in widgets(project.table)}
    project.write_models(**V2)
    project.makemigrations()
    cfg = project.config()
    env = {**os.environ, "PYTHONPATH": f"{project.root}{os.pathsep}{REPO}"}
    cmd = [sys.executable, "-m", "dynorm", "--config", str(cfg), "migrate", "--segments", "4"]
    rng = random.Random(11)
    kills = 0
    for _ in range(8):
        proc = subprocess.Popen(cmd + ["--force-unlock"], env=env, cwd=project.root, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.5, 1.0))  # start-up takes ~0.3 s; a full run several seconds
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        if kills >= 5:
            break
    assert kills >= 5
    partial = widgets(project.table)
    assert any(i["PK"]["S"].startswith("v1#") for i in partial), "killed runs should leave work to resume"
    assert len(partial) == 5000  # a kill between Put and Delete cannot happen: they are one transaction
    # the lock of a killed run stays until it expires: clear it as an operator would
    finish = subprocess.run([*cmd, "--force-unlock"], env=env, cwd=project.root, capture_output=True, text=True,
                            timeout=300)
    assert finish.returncode == 0, finish.stderr + finish.stdout
    after = widgets(project.table)
    assert len(after) == 5000 and all(i["PK"]["S"].startswith("v2#") for i in after)  # 0 lost, 0 duplicated
    assert {i["widget_id"]["S"]: body(i) for i in after} == before
    applied = [i for i in scan_all(project.table) if i["PK"]["S"] == "dynorm#migrations"
               and i["SK"]["S"].startswith("applied#0002")]
    assert len(applied) == 1


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
