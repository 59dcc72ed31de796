"""The pytest plugin as an application uses it (issue 12, section 2): `--dynorm-backend=moto` runs
the same fixtures on moto in-process; tests needing DynamoDB Local are skipped, not failed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

APP_TESTS = '''
import pytest
import dynorm
from dynorm import Entity, Table, fields


class Notes(Table):
    class Meta:
        table_name = "plugin-notes"


class Note(Entity):
    author = fields.String()
    note_id = fields.String()
    text = fields.String()

    class Meta:
        table = Notes
        pk = "{version}#A#{author}"
        sk = "N#{note_id}"


def test_queries_and_transactions(dynorm_tables, dynorm_backend):
    print("BACKEND", dynorm_backend.name, dynorm_backend.endpoint)
    Note.objects.create(author="ada", note_id="1", text="x")
    with dynorm.transaction() as tx:
        tx.create(Note(author="ada", note_id="2", text="y"))
    with dynorm.capture() as c:
        assert [n.text for n in Note.objects.filter(author="ada")] == ["x", "y"]
    assert c.operations == ["Query"]


def test_tables_start_empty(dynorm_tables):
    assert Note.objects.filter(author="ada").count() == 0


def test_needs_the_emulator(dynamodb_local):
    assert dynamodb_local.startswith("http://127.0.0.1:")


@pytest.mark.dynamodb_local_only("pins DynamoDB Local's capacity figures")
def test_marked(dynorm_tables):
    pass
'''


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_app.py").write_text(APP_TESTS)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-s", "-p", "no:cacheprovider", *args,
                           "test_app.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)


@pytest.mark.slow(reason="runs a second pytest session in a subprocess (15 s)")
def test_moto_backend_runs_the_same_fixtures_and_skips_what_needs_dynamodb_local(tmp_path: Path) -> None:
    proc = _run(tmp_path, "--dynorm-backend=moto")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "BACKEND moto None" in proc.stdout
    assert "2 passed, 2 skipped" in proc.stdout
    assert "moto backend: pins DynamoDB Local's capacity figures" in proc.stdout


def test_unknown_backend_is_a_usage_error(tmp_path: Path) -> None:
    proc = _run(tmp_path, "--dynorm-backend=sqlite")
    assert proc.returncode != 0 and "invalid choice: 'sqlite'" in proc.stderr
