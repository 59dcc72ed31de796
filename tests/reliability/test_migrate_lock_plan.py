"""`migrate` plans from the ledger read under the lock: a run slowed between its first read of the
ledger and taking the lock never repeats what another run did meanwhile, and says so truthfully."""

from __future__ import annotations

import threading
from typing import Any

from click.testing import CliRunner

from dynorm import backend
from dynorm.migrations.executor import MigrateOptions
from tests.faults import Hook
from tests.migproject import V1, Project

COUNTER_MIGRATION = '''
from dynorm.migrations import RunPython

dependencies = ["0001_initial"]


def _add(ctx, n):
    ctx.call("UpdateItem", {"TableName": ctx.table_name("migshop"),
                            "Key": {"PK": {"S": "counter"}, "SK": {"S": "c"}},
                            "UpdateExpression": "ADD n :n", "ExpressionAttributeValues": {":n": {"N": str(n)}}})


def forward(ctx):
    _add(ctx, 1)


def backward(ctx):
    _add(ctx, -1)


operations = [RunPython(forward, reverse=backward)]
'''


def _counter(project: Project) -> int:
    item = backend.call("GetItem", {"TableName": project.table.table_name(), "ConsistentRead": True,
                                    "Key": {"PK": {"S": "counter"}, "SK": {"S": "c"}}}).get("Item")
    return int(item["n"]["N"]) if item else 0


def _setup(project: Project) -> None:
    project.write_models(**V1)
    assert project.makemigrations().name == "0001_initial"
    project.executor().migrate(MigrateOptions())
    (project.dir / "migrations" / "0002_counter.py").write_text(COUNTER_MIGRATION)


class _OtherRunFirst:
    """Hook: when the slowed run (this thread) is about to write its lock, another run does the
    same migrate from start to end first (in its own thread), as when one request is slow."""

    def __init__(self, project: Project, target: str | None) -> None:
        self.project, self.target = project, target
        self.slowed = threading.get_ident()
        self.other: Any = None

    def __call__(self, params: dict[str, Any], **_: Any) -> None:
        sk = params.get("Item", {}).get("SK", {}).get("S", "")
        if not sk.startswith("lock#") or threading.get_ident() != self.slowed or self.other is not None:
            return
        result: dict[str, Any] = {}

        def run() -> None:
            result["report"] = self.project.executor().migrate(MigrateOptions(target=self.target))

        self.other = result
        thread = threading.Thread(target=run)
        thread.start()
        thread.join(timeout=60)


def test_two_reversals_run_the_reverse_function_once(project: Project) -> None:
    """Two `migrate 0001`: the second, slowed before its lock, used to reverse 0002 again (1 -> -1)."""
    _setup(project)
    project.executor().migrate(MigrateOptions())
    assert _counter(project) == 1
    other = _OtherRunFirst(project, "0001")
    with Hook("before-parameter-build.dynamodb.PutItem", other):
        report = project.executor().migrate(MigrateOptions(target="0001"))
    assert other.other["report"].unapplied == ["0002_counter"]
    assert _counter(project) == 0
    assert report.unapplied == [] and report.operations == []
    assert report.nothing_to_do() == "nothing to do: 0002_counter was reversed by another run"


def test_two_forward_runs_do_not_both_claim_the_migration(project: Project) -> None:
    """Both runs printed "Applied 1 migration(s)" though one did nothing; now the second says
    nothing to do, naming the migration and when the other run applied it (exit 0)."""
    from dynorm.cli import cli

    _setup(project)
    cfg = str(project.config())
    other = _OtherRunFirst(project, None)
    with Hook("before-parameter-build.dynamodb.PutItem", other):
        result = CliRunner().invoke(cli, ["--config", cfg, "migrate"])
    assert result.exit_code == 0, result.output
    assert other.other["report"].applied == ["0002_counter"]
    assert _counter(project) == 1
    assert "Applied 1 migration" not in result.output
    assert "Nothing to do: 0002_counter was applied by another run at 20" in result.output, result.output
    as_json = CliRunner().invoke(cli, ["--config", cfg, "migrate", "--json"])
    assert as_json.exit_code == 0 and _counter(project) == 1


def test_a_confirmed_plan_another_run_did_before_the_lock_says_nothing_to_do(project: Project) -> None:
    """`migrate` asks before it runs against a remote table: the operator confirmed applying 0002 while
    another run applied it. The run re-read the plan after the prompt and printed "Applied 0
    migration(s): none"; it now compares what was confirmed with the plan under the lock."""
    _setup(project)
    project.executor().migrate(MigrateOptions())  # the other run, between the prompt and the answer
    report = project.executor().migrate(MigrateOptions(confirmed=((), ("0002_counter",))))
    assert _counter(project) == 1
    assert report.applied == [] and report.nothing_to_do() is not None
    assert report.nothing_to_do().startswith("nothing to do: 0002_counter was applied by another run at 20")


def test_a_plan_that_grew_after_it_was_confirmed_is_refused_and_nothing_runs(project: Project) -> None:
    """The operator confirmed reversing 0002; meanwhile another run applied 0003. The run reversed 0003
    too (its reverse function ran, never shown nor confirmed). Now it refuses, naming 0003, and runs nothing."""
    import pytest

    from dynorm.migrations.executor import MigrationError

    _setup(project)
    project.executor().migrate(MigrateOptions())
    shown = project.executor().backwards_plan("0001_initial")
    assert [m.name for m in shown] == ["0002_counter"]
    (project.dir / "migrations" / "0003_counter.py").write_text(
        COUNTER_MIGRATION.replace('dependencies = ["0001_initial"]', 'dependencies = ["0002_counter"]'))
    project.executor().migrate(MigrateOptions())  # the other run applies 0003: the counter is 2
    assert _counter(project) == 2
    with pytest.raises(MigrationError, match="would now also reverse 0003_counter, which was not confirmed"):
        project.executor().migrate(MigrateOptions(target="0001_initial", confirmed=(("0002_counter",), ())))
    assert _counter(project) == 2
    assert set(project.executor().applied()) >= {"0002_counter", "0003_counter"}
    assert project.executor().ledger()._live_locks(0) == []  # the lock was given back
