"""``dynorm check`` and ``dynorm migrate``."""

from __future__ import annotations

import click

from ._common import State, check_ledger, pass_state


@click.command()
@pass_state
def check(state: State) -> None:
    """Check the models for errors; with a migrations package, check the ledger against its files.

    The models are checked without I/O. With `migrations:` configured, the package must exist and the
    ledger must list no applied or started migration without a file (the code would be older than the
    table); when DynamoDB does not answer (one attempt, short timeouts), a note on stderr says the
    ledger was not checked.
    """
    from dynorm.migrations.executor import UnknownMigrationsApplied
    from dynorm.migrations.operations import MigrationError

    tables = state.load_models()
    problems = [p for t in tables for p in t.check()]
    package = state.settings().migrations
    if package:
        try:
            check_ledger(package, tables)
        except (MigrationError, UnknownMigrationsApplied) as exc:
            problems.append(f"{type(exc).__name__}: {exc}")
    entities = sum(len(t.entities()) for t in tables)
    if problems:
        for p in problems:
            click.echo(f"ERROR: {p}", err=True)
        raise click.ClickException(
            f"{len(problems)} problem(s) found in {entities} entities on {len(tables)} table(s).")
    click.echo(f"No problems found ({entities} entities on {len(tables)} table(s)).")
