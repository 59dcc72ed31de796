"""``dynorm export workbench|cloudformation`` and ``dynorm import workbench``: thin commands over
:mod:`dynorm.design`. Each writes to stdout or ``-o FILE``, only once everything it writes is built."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ._common import State, pass_state

if TYPE_CHECKING:  # pragma: no cover
    from dynorm.tables import Table


def _select(tables: list[type[Table]], names: tuple[str, ...]) -> list[type[Table]]:
    """The tables named (logical name or class name), all when none is named."""
    if not names:
        return tables
    from dynorm.exceptions import ConfigurationError

    known = {n: t for t in tables for n in (t._meta.table_name, t.__name__)}
    missing = [n for n in names if n not in known]
    if missing:
        raise ConfigurationError(f"no table {', '.join(map(repr, missing))} in the configured models; tables: "
                                 f"{', '.join(sorted(t._meta.table_name for t in tables)) or 'none'}.")
    return list(dict.fromkeys(known[n] for n in names))


def _emit(text: str, output: str | None, force: bool = True) -> None:
    """Write ``text`` to ``output`` (or stdout); an existing file is kept unless ``force``."""
    if output is None or output == "-":
        click.echo(text, nl=False)
        return
    path = Path(output)
    if path.exists() and not force:
        raise click.UsageError(f"{output} exists; pass --force to overwrite it, or choose another -o FILE.")
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from exc
    click.echo(f"Wrote {output}.", err=True)


_OUTPUT = click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
                       help="Write to this file instead of stdout.")
_TABLES = click.option("--table", "table_names", multiple=True,
                       help="Only this table (its table_name or class name); repeat for several. Default: all.")


@click.group("export")
def export() -> None:
    """Export the models' tables to other tools (NoSQL Workbench, CloudFormation)."""


@export.command("workbench")
@_TABLES
@click.option("--sample", type=click.IntRange(min=1), default=None, metavar="N",
              help="Read N items of each entity from the tables (one Scan per entity) as sample data.")
@click.option("--name", "model_name", default=None, help="The model's name (default: the tables' names).")
@_OUTPUT
@pass_state
def export_workbench(state: State, table_names: tuple[str, ...], sample: int | None, model_name: str | None,
                     output: str | None) -> None:
    """Write a NoSQL Workbench data model (JSON): keys, GSIs, facets, access patterns, sample data."""
    from dynorm.design.workbench import build_model, read_samples, render

    tables = _select(state.load_models(), table_names)
    samples: dict[Any, list[dict[str, Any]]] = read_samples(tables, sample) if sample else {}
    _emit(render(build_model(tables, name=model_name, samples=samples)), output)


@export.command("cloudformation")
@_TABLES
@click.option("--format", "fmt", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
@click.option("--pitr/--no-pitr", default=True, show_default=True, help="Point-in-time recovery on each table.")
@_OUTPUT
@pass_state
def export_cloudformation(state: State, table_names: tuple[str, ...], fmt: str, pitr: bool,
                          output: str | None) -> None:
    """Write a CloudFormation template: an AWS::DynamoDB::Table per table (no I/O)."""
    from dynorm.design.cloudformation import build_template, render

    tables = _select(state.load_models(), table_names)
    _emit(render(build_template(tables, pitr=pitr), fmt), output)


@click.group("import")
def import_() -> None:
    """Generate dynorm code from other tools' models (NoSQL Workbench)."""


@import_.command("workbench")
@click.argument("model", type=click.Path(dir_okay=False))
@_OUTPUT
@click.option("--force", is_flag=True, help="Overwrite the -o FILE if it exists.")
def import_workbench(model: str, output: str | None, force: bool) -> None:
    """Generate a module of Table and Entity classes from a NoSQL Workbench data model (JSON)."""
    from dynorm.design.codegen import generate_module, load_model

    _emit(generate_module(load_model(model), Path(model).name), output, force)
