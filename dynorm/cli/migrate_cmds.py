"""``dynorm migrate``, ``makemigrations`` and ``showmigrations``: thin wrappers over dynorm.migrations."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from . import State, pass_state
from .confirm import confirm_changes, yes_option


def _worker(value: str | None) -> tuple[int, int]:
    if not value:
        return (0, 1)
    try:
        i, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise click.BadParameter("use i/N, e.g. 0/4") from None
    return i, n


class _Bar:
    """One self-rewriting progress line on stderr (only when stderr is a terminal)."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()

    def __call__(self, label: str, counts: dict[str, int], seconds: float, final: bool) -> None:
        if not self.enabled:
            return
        rate = counts.get("scanned", 0) / seconds if seconds > 0 else 0.0
        line = (f"\r{label}: scanned {counts['scanned']}  rewritten {counts['rewritten']}  skipped "
                f"{counts['skipped']}  conflicts {counts['conflicts']}  failed {counts['failed']}  "
                f"({rate:.0f} items/s)")
        click.echo(line + ("\n" if final else ""), err=True, nl=False)


def _sync_models(state: State, plan_only: bool) -> None:
    tables = state.load_models()
    total = 0
    for table in tables:
        actions = table.sync(wait=True, dry_run=plan_only)
        total += len(actions)
        if not actions:
            click.echo(f"  {table.table_name()}: up to date")
        for line in actions:
            click.echo(f"  {'would ' if plan_only else ''}{line}")
    click.echo(f"{total} action(s) {'planned; nothing was changed' if plan_only else 'applied'}.")


@click.command()
@click.argument("target", required=False)
@click.option("--plan", "plan_only", is_flag=True, help="List the operations that would run; change nothing.")
@click.option("--dry-run", is_flag=True, help="Scan and count what each operation would rewrite; write nothing.")
@click.option("--fake", is_flag=True, help="Record pending migrations as applied without running them.")
@click.option("--segments", type=click.IntRange(1, 64), default=4, show_default=True,
              help="Parallel Scan segments for RekeyEntity/DeleteVersion.")
@click.option("--mode", type=click.Choice(["move", "copy"]), default="move", show_default=True,
              help="move: delete old items in the same transaction; copy: keep them (expand/contract).")
@click.option("--worker", default=None, metavar="i/N", help="Run only share i of N of the scan segments.")
@click.option("--force-unlock", is_flag=True, help="Remove a lock left by a dead run (with a warning) first.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@yes_option
@pass_state
def migrate(state: State, target: str | None, plan_only: bool, dry_run: bool, fake: bool, segments: int, mode: str,
            worker: str | None, force_unlock: bool, as_json: bool, yes: bool) -> None:
    """Apply pending migrations (or, with no migrations package configured, create missing tables and GSIs).

    Against a non-local endpoint it first shows endpoint, account, region and tables and asks (--yes skips).
    """
    settings = state.settings()
    if not settings.migrations:
        click.echo(f"Endpoint: {settings.endpoint or 'AWS ' + settings.region}")
        if not plan_only:
            confirm_changes(settings, "create missing tables and GSIs",
                            [t.table_name() for t in state.load_models()], yes)
        _sync_models(state, plan_only)
        return
    from dynorm.migrations.executor import Executor, MigrateOptions
    from dynorm.migrations.loader import load_migrations

    state.load_models()
    executor = Executor(load_migrations(settings.migrations), reporter=None if as_json else _Bar())
    if force_unlock:
        ledger = executor.ledger()
        confirm_changes(settings, "remove the migration lock", [ledger.name], yes)
        if ledger.exists():
            n = ledger.force_unlock()
            click.echo(f"WARNING: removed {n} lock(s) on {ledger.name}; make sure no other migrate is running.",
                       err=True)
    pending = executor.plan(target)
    if plan_only:
        if not pending:
            click.echo("No migrations to apply.")
        for m in pending:
            click.echo(f"{m.name}:")
            for op in m.operations:
                click.echo(f"  {'(state) ' if op.state_only else ''}{op.describe()}")
        return
    if not pending:
        click.echo(json.dumps({"applied": [], "totals": {}}) if as_json else "No migrations to apply.")
        return
    if not dry_run:
        confirm_changes(settings, f"apply {len(pending)} migration(s) (create tables, rewrite or delete items)",
                        sorted({settings.table_prefix + t for m in pending for t in m.tables}), yes)
    report = executor.migrate(MigrateOptions(target=target, mode=mode, segments=segments, worker=_worker(worker),
                                             dry_run=dry_run, fake=fake))
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    for rep in report.operations:
        counts = "" if not rep.counts else "  " + " ".join(f"{k}={v}" for k, v in rep.counts.items())
        click.echo(f"  {rep.migration} [{rep.index}] {rep.description}: {rep.status}{counts} ({rep.seconds:.1f} s)")
        for err in rep.errors[:5]:
            click.echo(f"    failed: {err}", err=True)
    totals: dict[str, Any] = report.totals()
    if dry_run:
        click.echo(f"Dry run: nothing was written. Would rewrite {totals.get('rewritten', 0)} item(s) "
                   f"of {totals.get('scanned', 0)} scanned.")
    else:
        click.echo(f"Applied {len(report.applied)} migration(s) in {report.seconds:.1f} s: "
                   + (", ".join(report.applied) or "none"))
        if totals:
            click.echo("Items: " + ", ".join(f"{k} {v}" for k, v in totals.items()))
    if totals.get("failed"):
        raise click.ClickException(f"{totals['failed']} item(s) failed; see above. Run migrate again to retry them.")


@click.command()
@click.option("--name", default=None, help="Name after the number (default: suggested, e.g. product_v2).")
@click.option("--empty", is_flag=True, help="Write an empty migration (for RunPython).")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if the models have changes with no migration.")
@pass_state
def makemigrations(state: State, name: str | None, empty: bool, check: bool) -> None:
    """Write the next migration from the differences between the migration files and the models."""
    from dynorm.exceptions import ConfigurationError
    from dynorm.migrations.api import make_migrations

    tables = state.load_models()
    settings = state.settings()
    if not settings.migrations:
        raise ConfigurationError("no migrations package configured; set `migrations:` in dynorm.yaml.")
    result = make_migrations(settings.migrations, tables, name=name, empty=empty, check=check)
    if not result.operations and not empty:
        click.echo("No changes detected.")
        return
    for op in result.operations:
        click.echo(f"  - {op.describe()}")
    if check:
        raise click.ClickException(f"models have changes with no migration ({len(result.operations)} operation(s)); "
                                   "run `dynorm makemigrations`.")
    click.echo(f"Wrote {result.path}")


@click.command()
@pass_state
def showmigrations(state: State) -> None:
    """List migrations per table: [X] applied, [ ] pending."""
    from dynorm.exceptions import ConfigurationError
    from dynorm.migrations.executor import Executor
    from dynorm.migrations.loader import load_migrations

    settings = state.settings()
    if not settings.migrations:
        raise ConfigurationError("no migrations package configured; set `migrations:` in dynorm.yaml.")
    state.load_models()
    migrations = load_migrations(settings.migrations)
    if not migrations:
        click.echo("No migrations.")
        return
    applied = Executor(migrations).applied()
    tables: dict[str, list[str]] = {}
    for m in migrations:
        for t in m.tables or ["(no table)"]:
            tables.setdefault(t, []).append(m.name)
    for t, names in tables.items():
        click.echo(f"{settings.table_prefix}{t}")
        for n in names:
            mark = "[X]" if n in applied else "[ ]"
            extra = " (fake)" if applied.get(n, {}).get("fake") else ""
            click.echo(f"  {mark} {n}{extra}")
