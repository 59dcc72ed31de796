"""``dynorm check`` and ``dynorm migrate``."""

from __future__ import annotations

import click

from ._common import State, pass_state


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
