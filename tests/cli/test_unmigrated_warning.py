"""`dynorm migrate` and `showmigrations` warn, as Django's migrate does, about model changes no migration has.

Only a warning, on stderr: the exit codes stay the commands' own; `makemigrations --check` is the CI gate.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dynorm.cli import cli
from tests.migproject import V1, V2, Project

pytestmark = pytest.mark.integration


def _config(project: Project, tmp_path: Path, endpoint: str) -> Path:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(f"models: [{project.pkg}.models]\nmigrations: {project.migrations}\n"
                   f"table_prefix: warn-{tmp_path.name}-\n"
                   f"connection: {{region: us-east-1, endpoint: '{endpoint}'}}\n")
    return cfg


def _run(cfg: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--config", str(cfg), *args], catch_exceptions=False)


def test_migrate_and_showmigrations_warn_about_changes_with_no_migration(
        project: Project, tmp_path: Path, dynamodb_local: str) -> None:
    project.write_models(**V1)
    assert project.makemigrations().name == "0001_initial"
    project.write_models(**V2)  # a new key version, and no `dynorm makemigrations`
    cfg = _config(project, tmp_path, dynamodb_local)
    warning = (f"WARNING: Your models in app(s) '{project.pkg}' have changes that are not yet reflected in a "
               "migration")

    shown = _run(cfg, "showmigrations")
    assert shown.exit_code == 0 and "[ ] 0001_initial" in shown.stdout
    assert warning in shown.stderr
    assert f"  {project.pkg}: rekey WIDGET in migshop from v1 to v2" in shown.stderr
    assert "Run `dynorm makemigrations`" in shown.stderr
    assert "WARNING" not in shown.stdout  # stdout stays the listing

    migrated = _run(cfg, "migrate")
    assert migrated.exit_code == 0, migrated.output
    assert "Applied 1 migration(s)" in migrated.stdout and "0001_initial" in migrated.stdout
    assert warning in migrated.stderr and "rekey WIDGET in migshop from v1 to v2" in migrated.stderr

    again = _run(cfg, "migrate")  # nothing to apply: the warning is the one thing to read
    assert again.exit_code == 0 and "No migrations to apply." in again.stdout and warning in again.stderr

    check = _run(cfg, "makemigrations", "--check")
    assert check.exit_code == 1 and "rekey WIDGET in migshop from v1 to v2" in check.output


def test_no_warning_when_the_migrations_reflect_the_models(
        project: Project, tmp_path: Path, dynamodb_local: str) -> None:
    project.write_models(**V1)
    project.makemigrations()
    project.write_models(**V2)
    assert project.makemigrations().name == "0002_widget_v2"
    cfg = _config(project, tmp_path, dynamodb_local)

    for args in (["showmigrations"], ["migrate", "--plan"], ["migrate"], ["showmigrations"]):
        result = _run(cfg, *args)
        assert result.exit_code == 0, (args, result.output)
        assert "WARNING" not in result.stderr and "makemigrations" not in result.stderr, args
    assert "[X] 0002_widget_v2" in result.stdout


def test_a_change_no_migration_can_make_is_a_warning_too(
        project: Project, tmp_path: Path, dynamodb_local: str) -> None:
    from tests.migproject import MODELS_SRC, TABLE_SRC

    project.write_models(**V1)
    project.makemigrations()
    # a new partition-key attribute: makemigrations refuses it (declare a new table instead)
    project.stage(TABLE_SRC.replace('table_name = "migshop"', 'table_name = "migshop"\n        pk_attribute = "pk"'),
                  MODELS_SRC.format(pkg=project.pkg, **V1))
    cfg = _config(project, tmp_path, dynamodb_local)
    shown = _run(cfg, "showmigrations")
    assert shown.exit_code == 0 and "[ ] 0001_initial" in shown.stdout
    assert "WARNING: cannot compare the models with the migrations" in shown.stderr
    assert "changing pk_attribute from 'PK' to 'pk' is not supported in place" in shown.stderr
    check = _run(cfg, "makemigrations", "--check")
    assert check.exit_code == 1 and "changing pk_attribute" in check.output
