"""Commands that read the ledger refuse when code and ledger disagree: a deploy rolled back by
reverting code (the applied or partly run rekey's file gone, or every file), or a `migrations:`
package that does not exist."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

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
