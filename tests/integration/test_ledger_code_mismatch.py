"""Commands that read the ledger refuse when code and ledger disagree: a deploy rolled back by
reverting code (the applied or partly run rekey's file gone, or every file), or a `migrations:`
package that does not exist."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dynorm import conf
from dynorm.cli import cli
from dynorm.migrations.executor import MigrateOptions, MigrationInterrupted
from tests.faults import Hook
from tests.migproject import V1, V2, Project, load_v1, widgets


def _rolled_back(project: Project) -> str:
    """v1 -> v2 applied (0002 rekey), then the code reverted: v1 models, the 0002 file gone."""
    load_v1(project, 20)
    project.write_models(**V2)
    assert project.makemigrations().name == "0002_widget_v2"
    project.executor().migrate(MigrateOptions())
    (project.dir / "migrations" / "0002_widget_v2.py").unlink()
    project.write_models(**V1)
    return str(project.config())


def test_every_ledger_command_refuses_an_applied_migration_without_a_file(project: Project) -> None:
    cfg = _rolled_back(project)
    for args in (["showmigrations"], ["migrate"], ["migrate", "--plan"], ["migrate", "0001"],
                 ["migrate", "--dry-run"], ["migrate", "--json"]):
        result = CliRunner().invoke(cli, ["--config", cfg, *args])
        assert result.exit_code == 1, (args, result.output)
        assert "UnknownMigrationsApplied" in result.output and "0002_widget_v2 (applied 20" in result.output, \
            (args, result.output)
        assert "`dynorm migrate 0001_initial`" in result.output and "roll forward" in result.output
        assert "No migrations to apply" not in result.output
    assert all(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))  # nothing was touched


def test_a_migrations_package_that_does_not_exist_is_an_error(project: Project, tmp_path: Path) -> None:
    load_v1(project, 1)
    cfg = project.config()
    cfg.write_text(cfg.read_text().replace(f"migrations: {project.migrations}", f"migrations: {project.pkg}.migratons"))
    for args in (["migrate"], ["showmigrations"], ["migrate", "--plan"]):
        result = CliRunner().invoke(cli, ["--config", str(cfg), *args])
        assert result.exit_code == 1, (args, result.output)
        assert f"the migrations package '{project.pkg}.migratons' does not exist" in result.output, result.output
        assert "No migrations" not in result.output


def _interrupted_then_rolled_back(project: Project) -> tuple[str, int]:
    """0002 (a rekey) stopped after its first transaction (50 of 120 items at v2), then the code reverted."""
    load_v1(project, 120)
    project.write_models(**V2)
    assert project.makemigrations().name == "0002_widget_v2"
    stop = threading.Event()

    def stop_now(**kwargs: Any) -> None:
        stop.set()

    with Hook("after-call.dynamodb.TransactWriteItems", stop_now):
        with pytest.raises(MigrationInterrupted):
            project.executor().migrate(MigrateOptions(segments=1, stop=stop))
    moved = sum(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))
    assert 0 < moved < 120
    (project.dir / "migrations" / "0002_widget_v2.py").unlink()
    project.write_models(**V1)
    return str(project.config()), moved


def test_every_ledger_command_refuses_a_started_migration_without_a_file(project: Project) -> None:
    cfg, moved = _interrupted_then_rolled_back(project)
    for args in (["showmigrations"], ["migrate"], ["migrate", "--plan"], ["migrate", "0001"],
                 ["migrate", "--dry-run"], ["migrate", "--fake"]):
        result = CliRunner().invoke(cli, ["--config", cfg, *args])
        assert result.exit_code == 1, (args, result.output)
        assert "UnknownMigrationsApplied" in result.output, (args, result.output)
        assert "0002_widget_v2 (partial: started, not finished" in result.output, (args, result.output)
        assert "`dynorm migrate 0001_initial`" in result.output and "No migrations to apply" not in result.output
    assert sum(i["PK"]["S"].startswith("v2#") for i in widgets(project.table)) == moved  # nothing was touched


def test_an_empty_migrations_package_whose_ledger_lists_migrations_is_refused(project: Project) -> None:
    cfg = _rolled_back(project)
    (project.dir / "migrations" / "0001_initial.py").unlink()  # only __init__.py left
    for args in (["showmigrations"], ["migrate"], ["migrate", "--plan"]):
        result = CliRunner().invoke(cli, ["--config", cfg, *args])
        assert result.exit_code == 1, (args, result.output)
        assert "UnknownMigrationsApplied" in result.output, (args, result.output)
        assert "0001_initial (applied 20" in result.output and "0002_widget_v2 (applied 20" in result.output
        assert "No migrations" not in result.output and "no migration file at all" in result.output
    assert all(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))


# -- check and makemigrations --check: the same refusal, and an offline result when DynamoDB cannot be asked --------

def test_check_and_makemigrations_check_refuse_an_applied_migration_without_a_file(project: Project) -> None:
    cfg = _rolled_back(project)
    for args in (["check"], ["makemigrations", "--check"]):
        result = CliRunner().invoke(cli, ["--config", cfg, *args])
        assert result.exit_code == 1, (args, result.output)
        assert "UnknownMigrationsApplied" in result.output and "0002_widget_v2 (applied 20" in result.output, \
            (args, result.output)
        assert "`dynorm migrate 0001_initial`" in result.output and "roll forward" in result.output
        assert "No changes detected" not in result.output and "No problems found" not in result.output


def test_plain_makemigrations_refuses_too_and_writes_no_second_0002(project: Project) -> None:
    """With the ledger holding 0002_widget_v2 and its file gone, `makemigrations --empty --name x` wrote
    0002_x.py: a second 0002 that collides with the real one on roll-forward."""
    cfg = _rolled_back(project)
    result = CliRunner().invoke(cli, ["--config", cfg, "makemigrations", "--empty", "--name", "x"])
    assert result.exit_code == 1, result.output
    assert "UnknownMigrationsApplied" in result.output and "0002_widget_v2 (applied 20" in result.output
    assert sorted(p.name for p in (project.dir / "migrations").glob("0*.py")) == ["0001_initial.py"]


def test_a_first_makemigrations_still_creates_the_package(project: Project) -> None:
    project.write_models(**V1)
    cfg = project.config()
    result = CliRunner().invoke(cli, ["--config", str(cfg), "makemigrations"])
    assert result.exit_code == 0, result.output
    assert (project.dir / "migrations" / "0001_initial.py").exists()


def test_check_and_makemigrations_check_refuse_a_migrations_package_that_does_not_exist(project: Project) -> None:
    project.write_models(**V1)
    cfg = project.config()
    cfg.write_text(cfg.read_text().replace(f"migrations: {project.migrations}", f"migrations: {project.pkg}.migratons"))
    for args in (["check"], ["makemigrations", "--check"]):
        result = CliRunner().invoke(cli, ["--config", str(cfg), *args])
        assert result.exit_code == 1, (args, result.output)
        assert f"the migrations package '{project.pkg}.migratons' does not exist" in result.output, result.output
    assert not (project.dir / "migratons").exists()  # --check writes nothing


def _silent_endpoint() -> tuple[str, Any]:
    """A local socket that accepts connections and never answers; returns its URL and a closer."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[Any] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()

    def close() -> None:
        server.close()
        for conn in held:
            conn.close()

    return f"http://127.0.0.1:{server.getsockname()[1]}", close


def test_offline_check_and_makemigrations_check_note_that_the_ledger_was_not_checked(project: Project) -> None:
    project.write_models(**V1)
    assert project.makemigrations().name == "0001_initial"  # offline: no request
    silent, close = _silent_endpoint()
    before = conf.snapshot()
    try:
        for endpoint, why in (("http://127.0.0.1:9", "could not reach DynamoDB at http://127.0.0.1:9"),
                              (silent, "No answer within 3 s (connection.read_timeout), 1 attempt(s)")):
            cfg = project.root / "offline.yaml"
            cfg.write_text(f"models: [{project.pkg}.models]\nmigrations: {project.migrations}\n")
            conf.configure(endpoint=endpoint)  # over the test session's
            for args, offline in ((["check"], "No problems found (1 entities on 1 table(s))."),
                                  (["makemigrations", "--check"], "No changes detected.")):
                result = CliRunner().invoke(cli, ["--config", str(cfg), *args])
                assert result.exit_code == 0, (args, result.output)
                assert result.stdout.strip() == offline
                assert result.stderr.startswith("NOTE: the migration ledger was not checked, DynamoDB could not be "
                                                f"asked: DescribeTable on {project.table.table_name()}"), result.stderr
                assert why in result.stderr, result.stderr
    finally:
        conf.restore(before)
        close()
