"""Library entry points behind ``dynorm makemigrations`` / ``migrate`` / ``showmigrations``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..checks import CollectionMember, collection_splits
from .autodetector import detect_changes, suggest_name
from .loader import NAME_RE, Migration, build_state, load_migrations, package_path
from .operations import MigrationError, Operation
from .state import ProjectState, state_from_models
from .writer import render_migration

if TYPE_CHECKING:  # pragma: no cover
    from ..tables import Table

__all__ = ["MakeResult", "make_migrations", "load_migrations"]


@dataclass
class MakeResult:
    """What ``makemigrations`` found: the operations and (unless checking) the file written."""

    name: str | None
    operations: list[Operation]
    path: Path | None
    source: str | None


def _next_number(migrations: list[Migration]) -> int:
    numbers = [int(m.name[:4]) for m in migrations if NAME_RE.match(m.name)]
    return max(numbers, default=0) + 1


def make_migrations(package: str, tables: list[type[Table]], name: str | None = None, empty: bool = False,
                    check: bool = False) -> MakeResult:
    """Compare the migration files with the models and write the next migration module.

    Args:
        package: dotted migrations package (created with an ``__init__.py`` if missing).
        tables: the tables whose entities are compared.
        name: the migration's name after its number (default: suggested).
        empty: write a migration without operations (for ``RunPython``).
        check: write nothing; only report the operations.

    Returns:
        :class:`MakeResult` (``operations`` empty when the models match the files).

    Raises:
        MigrationError: invalid migration files, a change DynamoDB cannot make in place, or a key
            version bump that splits an item collection (its entities must be bumped together).
    """
    migrations = load_migrations(package, missing_ok=True)
    old = build_state(migrations)
    new = state_from_models(tables)
    splits = collection_splits(_members(old), _members(new))
    if splits and not empty:
        raise MigrationError("refusing to write a migration that splits an item collection: " + " ".join(splits))
    ops = [] if empty else detect_changes(old, new)
    _check_new_multi_gsis(ops, tables)
    if not ops and not empty:
        return MakeResult(None, [], None, None)
    leaves = _leaves(migrations)
    label = name or ("empty" if empty else suggest_name(ops, first=not migrations))
    if not label.isidentifier():
        raise MigrationError(f"migration name {label!r} must be a Python identifier.")
    full = f"{_next_number(migrations):04d}_{label}"
    source = render_migration(leaves, ops)
    if check:
        return MakeResult(full, ops, None, source)
    folder = package_path(package)
    folder.mkdir(parents=True, exist_ok=True)
    init = folder / "__init__.py"
    if not init.exists():
        init.write_text('"""dynorm migrations."""\n')
    path = folder / f"{full}.py"
    path.write_text(source)
    return MakeResult(full, ops, path, source)


def _check_new_multi_gsis(ops: list[Operation], tables: list[type[Table]]) -> None:
    """Refuse to add a multi-attribute GSI that an entity of its table stores with another type.

    DynamoDB would refuse every later write of such an item with a value there (and leave the
    stored ones out of the backfill). ``Table.check()`` reports it; its message is the reason.

    Raises:
        MigrationError: naming the entity, field, attribute, both types and what to do instead.
    """
    from ..checks import multi_key_problems
    from .operations import CreateTable, SyncIndexes

    by_name = {t._meta.table_name: t for t in tables}
    for op in ops:
        if isinstance(op, SyncIndexes):
            added, name = list(op.multi_gsis), op.table
        elif isinstance(op, CreateTable):
            added, name = list(op.table.multi_gsis), op.table.name
        else:
            continue
        table = by_name.get(name)
        if not added or table is None:
            continue
        problems = [p for p in multi_key_problems(table) if any(f"GSI {g} " in p for g in added)]
        if problems:
            raise MigrationError(f"refusing to add multi-attribute GSI(s) {', '.join(added)}: " + " ".join(problems))


def _members(state: ProjectState) -> list[CollectionMember]:
    """Each entity's partition-key template on the table and on each GSI, from a frozen state."""
    out: list[CollectionMember] = []
    for (table_name, entity_type), entity in state.entities.items():
        table = state.tables.get(table_name)
        if table is None:
            continue
        for path, attrs in entity.keys.items():
            index = "" if path == "primary" else path
            pk_attr = table.pk_attribute if path == "primary" else (table.gsis.get(path) or (None, None))[0]
            if pk_attr in attrs:
                out.append((entity_type, index, attrs[pk_attr], entity.key_version))
    return out


def _leaves(migrations: list[Migration]) -> list[str]:
    depended = {d for m in migrations for d in m.dependencies}
    return [m.name for m in migrations if m.name not in depended]
