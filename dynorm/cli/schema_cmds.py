"""``dynorm check`` and ``dynorm migrate``."""

from __future__ import annotations

import click

from . import State, pass_state


@click.command()
@pass_state
def check(state: State) -> None:
    """Check the models for errors without touching DynamoDB."""
    tables = state.load_models()
    problems = [p for t in tables for p in t.check()]
    entities = sum(len(t.entities()) for t in tables)
    if problems:
        for p in problems:
            click.echo(f"ERROR: {p}", err=True)
        raise click.ClickException(
            f"{len(problems)} problem(s) found in {entities} entities on {len(tables)} table(s).")
    click.echo(f"No problems found ({entities} entities on {len(tables)} table(s)).")


@click.command()
@click.option("--plan", "plan_only", is_flag=True, help="Print what would be done and change nothing.")
@pass_state
def migrate(state: State, plan_only: bool) -> None:
    """Create missing tables and GSIs from the models (DescribeTable, CreateTable, UpdateTable).

    Never drops a table, an index or an item.
    """
    tables = state.load_models()
    settings = state.settings()
    click.echo(f"Endpoint: {settings.endpoint or 'AWS ' + settings.region}")
    total = 0
    for table in tables:
        actions = table.sync(wait=True, dry_run=plan_only)
        total += len(actions)
        if not actions:
            click.echo(f"  {table.table_name()}: up to date")
        for line in actions:
            click.echo(f"  {'would ' if plan_only else ''}{line}")
    if plan_only:
        click.echo(f"{total} action(s) planned; nothing was changed.")
    else:
        click.echo(f"{total} action(s) applied.")
