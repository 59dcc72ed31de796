"""``dynorm patterns``: print the access-pattern document generated from the models."""

from __future__ import annotations

import click

from ._common import State, pass_state


@click.command()
@click.option("--format", "fmt", type=click.Choice(["json", "yaml", "markdown"]), default="json", show_default=True)
@click.option("--entity", default=None, help="Only this entity (class name or entity type).")
@pass_state
def patterns(state: State, fmt: str, entity: str | None) -> None:
    """Print every entity's key templates, indexes and named access patterns (no I/O)."""
    from dynorm.exceptions import ConfigurationError
    from dynorm.patterns import build_document, render

    tables = state.load_models()
    try:
        doc = build_document(tables, entity)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from exc
    click.echo(render(doc, fmt))
