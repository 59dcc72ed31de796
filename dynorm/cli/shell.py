"""``dynorm shell``: an interactive console with every entity and table preloaded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # pragma: no cover
    from dynorm.tables import Table

from ._common import State, pass_state


def namespace(tables: list[type[Table]]) -> dict[str, Any]:
    """The shell's namespace: dynorm, Q, F, capture, and every table and entity by class name."""
    import dynorm

    ns: dict[str, Any] = {"dynorm": dynorm, "Q": dynorm.Q, "F": dynorm.F, "capture": dynorm.capture}
    for table in tables:
        ns[table.__name__] = table
        for entity in table.entities().values():
            ns[entity.__name__] = entity
    return ns


def banner(tables: list[type[Table]]) -> str:
    """Text listing the tables, their entities and each entity's access paths and named patterns."""
    import inspect

    from dynorm.query import QuerySet
    from dynorm.registry import default_manager

    lines = ["dynorm shell — preloaded: dynorm, Q, F, capture"]
    for table in tables:
        lines.append(f"table {table.__name__} ({table.table_name()})")
        for entity in table.entities().values():
            m = entity._meta
            lines.append(f"  {entity.__name__} [{m.entity_type}] pk={m.primary.pk.template!r}"
                         f" sk={m.primary.sk.template if m.primary.sk else None!r}")
            for b in m.indexes.values():
                if b.is_multi:  # keys are the fields' own attributes
                    lines.append(f"    .using({b.name!r}) {b.index_name}: pk={b.pk_fields!r} sk={b.sk_fields!r}")
                    continue
                lines.append(f"    .using({b.name!r}) {b.index_name}: pk={b.pk.template!r}"
                             f" sk={b.sk.template if b.sk else b.sort_field!r}")
            manager = default_manager(entity)
            named = [n for n, f in inspect.getmembers(manager._queryset_class, inspect.isfunction)
                     if not n.startswith("_") and not hasattr(QuerySet, n)]
            if named:
                lines.append(f"    patterns: {', '.join(f'{entity.__name__}.{manager.name}.{n}()' for n in named)}")
    lines.append(f"Try: {_example(tables)}   with capture() as c: ...")
    return "\n".join(lines)


def _example(tables: list[type[Table]]) -> str:
    """An ``explain()`` line written with the app's own first entity (and its first index field)."""
    from dynorm.registry import default_manager

    entities = [e for t in tables for e in t.entities().values()]
    if not entities:
        return "Entity.objects.filter(...).explain()"
    entity = entities[0]
    meta = entity._meta
    templates = [meta.primary.pk, meta.primary.sk] + [getattr(b, "pk", None) for b in meta.indexes.values()]
    name = next((f for t in templates if t is not None for f in getattr(t, "fields", ())), None)
    return f"{entity.__name__}.{default_manager(entity).name}.filter({f'{name}=...' if name else '...'}).explain()"


def _readable(value: Any) -> Any:
    """What the console shows for ``value``: a query plan as its text, everything else unchanged."""
    from dynorm.plan import Plan

    return _Text(str(value)) if isinstance(value, Plan) else value


class _Text(str):
    """A string that the console echoes without quotes (``repr`` is the text itself)."""

    def __repr__(self) -> str:
        return str(self)


def _displayhook(value: Any) -> None:
    import builtins
    import sys

    if value is None:
        return
    builtins._ = None  # type: ignore[attr-defined]
    sys.stdout.write(repr(_readable(value)) + "\n")
    builtins._ = value  # type: ignore[attr-defined]


@click.command()
@click.option("-c", "--command", "code", default=None, help="Run this Python code in the shell namespace and exit.")
@click.option("-i", "--interface", type=click.Choice(["ipython", "python"]), default=None,
              help="Console to use (default: IPython when installed, else the standard console).")
@pass_state
def shell(state: State, code: str | None, interface: str | None) -> None:
    """Open an interactive shell with all entities and tables preloaded."""
    tables = state.load_models()
    ns = namespace(tables)
    if code is not None:
        exec(compile(code, "<dynorm shell -c>", "exec"), ns)  # noqa: S102 - the user's own code
        return
    text = banner(tables)
    if interface != "python":
        try:
            from IPython import start_ipython
        except ImportError:
            if interface == "ipython":
                raise click.ClickException("IPython is not installed (pip install ipython).") from None
        else:
            from traitlets.config import Config

            from dynorm.plan import Plan

            cfg = Config()
            cfg.TerminalInteractiveShell.banner2 = text + "\n"
            # a query plan prints as its readable text, not a dataclass dump
            cfg.PlainTextFormatter.type_printers = {Plan: lambda obj, p, cycle: p.text(str(obj))}
            start_ipython(argv=[], user_ns=ns, config=cfg)
            return
    import code as _code
    import sys

    previous = sys.displayhook
    sys.displayhook = _displayhook
    try:
        _code.interact(banner=text, local=ns, exitmsg="")
    finally:
        sys.displayhook = previous
