"""A migration that fails in user code says which migration and operation, what the run applied,
what state the ledger is in, and shows the user code's traceback (also in ``--json``)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dynorm.cli import cli
from tests.migproject import V1, Project

SEED = '''
from dynorm.migrations import RunPython

dependencies = ["0001_initial"]


def seed(ctx):
    pass


operations = [RunPython(seed)]
'''

BOOM = '''
from dynorm.migrations import RunPython

dependencies = ["0002_seed"]


def _lookup(d):
    return d["missing"]


def fill(ctx):
    pass


def boom(ctx):
    _lookup({})


operations = [RunPython(fill), RunPython(boom)]
'''


def _project(project: Project) -> str:
    project.write_models(**V1)
    assert project.makemigrations().name == "0001_initial"
    (project.dir / "migrations" / "0002_seed.py").write_text(SEED)
    (project.dir / "migrations" / "0003_boom.py").write_text(BOOM)
    return str(project.config())


def test_a_failing_run_python_names_migration_operation_applied_ledger_and_traceback(project: Project) -> None:
    cfg = _project(project)
    result = CliRunner().invoke(cli, ["--config", cfg, "migrate"])
    out = result.output
    assert result.exit_code == 1, out
    assert "migration 0003_boom failed at operation [1] run boom: KeyError: 'missing'" in out, out
    assert "Applied by this run before it: 0001_initial, 0002_seed" in out
    assert "0003_boom is not applied; its operations [0] are recorded done" in out
    assert "starts again at operation [1]" in out
    assert "Traceback (most recent call last)" in out and 'return d["missing"]' in out and "in _lookup" in out
    assert "dynorm/migrations/executor.py" not in out  # the user's frames only
    shown = CliRunner().invoke(cli, ["--config", cfg, "showmigrations"]).output
    assert "[X] 0002_seed" in shown and "[X] 0003_boom" not in shown


def test_the_same_report_in_json(project: Project) -> None:
    cfg = _project(project)
    result = CliRunner().invoke(cli, ["--config", cfg, "migrate", "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    assert report["migration"] == "0003_boom" and report["operation_index"] == 1
    assert report["operation"] == "run boom" and report["applied"] == ["0001_initial", "0002_seed"]
    assert "KeyError: 'missing'" in report["error"] and "0003_boom is not applied" in report["ledger"]
    assert 'return d["missing"]' in report["traceback"]
    assert report["report"]["applied"] == ["0001_initial", "0002_seed"]


EXITS = '''
import sys

from dynorm.migrations import RunPython

dependencies = ["0002_seed"]


def bye(ctx):
    {body}


operations = [RunPython(bye)]
'''


@pytest.mark.parametrize("body, shown", [("sys.exit(0)", "SystemExit: 0"),
                                         ("raise SystemExit('done')", "SystemExit: done"),
                                         ("raise KeyboardInterrupt", "KeyboardInterrupt")])
def test_a_run_python_that_exits_or_raises_a_base_exception_is_an_operation_failed(project: Project, body: str,
                                                                                    shown: str) -> None:
    """Not exit 0 with no message while the migration is not applied: no signal came, so the code failed."""
    cfg = _project(project)
    (project.dir / "migrations" / "0003_boom.py").write_text(EXITS.format(body=body))
    result = CliRunner().invoke(cli, ["--config", cfg, "migrate"])
    out = result.output
    assert result.exit_code == 1, out
    assert f"migration 0003_boom failed at operation [0] run bye: {shown}" in out, out
    assert "Applied by this run before it: 0001_initial, 0002_seed" in out and "0003_boom is not applied" in out
    assert "Interrupted" not in out
    shown_migrations = CliRunner().invoke(cli, ["--config", cfg, "showmigrations"]).output
    assert "[X] 0002_seed" in shown_migrations and "[X] 0003_boom" not in shown_migrations
    again = CliRunner().invoke(cli, ["--config", cfg, "migrate"])  # the lock was released
    assert again.exit_code == 1 and "failed at operation [0] run bye" in again.output
