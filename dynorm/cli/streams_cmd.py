"""``dynorm streams tail``: print a table's changes as they are written (for debugging)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from ._common import State, pass_state

if TYPE_CHECKING:  # pragma: no cover
    from dynorm.streams import Change


@click.group()
def streams() -> None:
    """Read the tables' DynamoDB streams (tables declaring Meta.stream)."""


def _line(change: Change) -> str:
    """One line per change: kind, entity, key fields (or table key), changed fields."""
    from dynorm import UnknownItem

    shown = change.new if change.new is not None else change.old
    if change.entity is UnknownItem or shown is None:
        etype = getattr(shown, "entity_type", None)
        name = f"UnknownItem({etype})" if etype else "UnknownItem"
        key = " ".join(f"{a}={next(iter(v.values()))!r}" for a, v in sorted(change.keys.items()))
    else:
        name = change.entity.__name__
        key = " ".join(f"{k}={v!r}" for k, v in shown.key.items())
    extra = f" fields: {', '.join(change.changed_fields)}" if change.kind == "updated" and change.changed_fields else ""
    extra += " (expired)" if change.expired else ""
    return f"{change.kind:<8} {name} {key}{extra}"


@streams.command()
@click.option("--table", "table_names", multiple=True,
              help="Table class name or logical table name (default: every table declaring Meta.stream).")
@click.option("--from", "start", type=click.Choice(["latest", "trim-horizon"]), default="latest", show_default=True,
              help="latest: changes written from now on; trim-horizon: every record the stream still holds (24 h).")
@click.option("--hide-moves", is_flag=True, help="Leave out key-version moves made by `dynorm migrate`.")
@click.option("--include-internal", is_flag=True, help="Show dynorm's own items (migration ledger, unique sentinels).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--interval", type=click.FloatRange(0.05, 60.0), default=1.0, show_default=True,
              help="Seconds between polls when nothing new came.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Stop after this many changes.")
@pass_state
def tail(state: State, table_names: tuple[str, ...], start: str, hide_moves: bool, include_internal: bool,
         fmt: str, interval: float, limit: int | None) -> None:
    """Print each change to the tables as it happens (Ctrl-C stops).

    Reads the streams with DescribeStream, GetShardIterator and GetRecords (no checkpoints are kept).
    """
    import time

    from dynorm.exceptions import ConfigurationError
    from dynorm.streams import StreamReader

    tables = state.load_models()
    if table_names:
        by_name = {n: t for t in tables for n in (t.__name__, t._meta.table_name)}
        unknown = [n for n in table_names if n not in by_name]
        if unknown:
            raise ConfigurationError(f"no table named {', '.join(unknown)} in the models "
                                     f"(tables: {', '.join(sorted(t.__name__ for t in tables))}).")
        chosen = list(dict.fromkeys(by_name[n] for n in table_names))
    else:
        chosen = [t for t in tables if t._meta.stream]
        if not chosen:
            raise ConfigurationError("no table declares a stream: set Meta.stream = 'NEW_AND_OLD_IMAGES' on a Table, "
                                     "then run `dynorm makemigrations` and `dynorm migrate`.")
    readers = [StreamReader(t, start=start.upper().replace("-", "_")) for t in chosen]
    for r in readers:
        click.echo(f"tailing {r.table.table_name()} ({r.arn}); Ctrl-C stops", err=True)
    options: dict[str, Any] = {"moves": "hide" if hide_moves else "report", "include_internal": include_internal}
    shown = 0
    try:
        while True:
            found = [c for r in readers for c in r.changes(**options)]
            for change in found:
                click.echo(json.dumps(change.to_dict(), default=_json_value) if fmt == "json" else _line(change))
                shown += 1
                if limit is not None and shown >= limit:
                    return
            if not found:
                time.sleep(interval)
    except KeyboardInterrupt:
        # the CLI's convention for Ctrl-C (dynorm/cli/__init__.py): exit 130
        click.echo(f"\nstopped after {shown} change(s).", err=True)
        raise click.exceptions.Exit(130) from None


def _json_value(value: Any) -> Any:
    """JSON for what ``Change.to_dict()`` holds beyond JSON: bytes as base64 (as DynamoDB's JSON),
    sets as sorted lists, anything else as text."""
    import base64

    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=lambda v: (type(v).__name__, v))
    return str(value)
