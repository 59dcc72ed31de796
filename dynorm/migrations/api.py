"""Library entry points behind ``dynorm makemigrations`` / ``migrate`` / ``showmigrations``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..checks import CollectionMember, collection_splits
from .autodetector import detect_changes, suggest_name
from .loader import NAME_RE, Migration, build_state, load_migrations, package_path, tables_of
from .operations import MigrationError, Operation
from .state import ProjectState, state_from_models
from .writer import render_migration

if TYPE_CHECKING:  # pragma: no cover
    from ..tables import Table

__all__ = ["MakeResult", "PendingChanges", "make_migrations", "pending_changes", "load_migrations", "check_ledger"]


@dataclass
class MakeResult:
    """What ``makemigrations`` found: the operations and (unless checking) the file written."""

    name: str | None
    operations: list[Operation]
    path: Path | None
    source: str | None


def check_ledger(migrations: list[Migration], tables: list[type[Table]]) -> None:
    """Refuse when the ledger lists applied or started migrations that ``migrations`` has no file for.

    What ``migrate`` and ``showmigrations`` refuse, for ``check`` and ``makemigrations --check``: the
    code is older than the table (a deploy rolled back by reverting code). With no migration at
    all, the ledger is looked for in the tables of the models.

    Args:
        migrations: the loaded migration files (:func:`load_migrations`, which refuses a missing package).
        tables: the model tables (where an empty package's ledger would be).

    Raises:
        UnknownMigrationsApplied: naming each such migration and the safe deploy order.
        ServiceError, ConfigurationError: DynamoDB could not be asked (see the CLI's offline note).

    DynamoDB: DescribeTable of the ledger's table, then two consistent Queries of the ledger
    partition when it exists (per model table with a sort key when there is no migration).
    """
    from .executor import Executor, check_ledger_without_migrations

    if not migrations:
        check_ledger_without_migrations(tables)
        return
    Executor(migrations).applied()


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
    ops = _detect(migrations, tables, compare=not empty)
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


def _detect(migrations: list[Migration], tables: list[type[Table]], compare: bool = True) -> list[Operation]:
    """The operations from the state the migrations build to the models' state, checked (pure).

    ``compare=False`` (``makemigrations --empty``) only builds both states, which validates them,
    and returns ``[]``.

    Raises:
        MigrationError: as :func:`make_migrations`.
    """
    old = build_state(migrations)
    new = state_from_models(tables)
    if not compare:
        return []
    splits = collection_splits(_members(old), _members(new))
    if splits:
        raise MigrationError("refusing to write a migration that splits an item collection: " + " ".join(splits))
    ops = detect_changes(old, new)
    _check_new_multi_gsis(ops, tables)
    return ops


@dataclass(frozen=True)
class PendingChanges:
    """Model changes of one app that no migration reflects (what ``makemigrations`` would write).

    Attributes:
        app: the app label: the package holding the module that declares the table
            (``demo_project.library.models`` -> ``library``; a top-level module: its name).
        table: the logical table name.
        operations: the operations ``dynorm makemigrations`` would write for the table, in order.
    """

    app: str
    table: str
    operations: tuple[Operation, ...]


def pending_changes(migrations: list[Migration], tables: list[type[Table]]) -> list[PendingChanges]:
    """Return the model changes that no migration reflects, per app, as ``makemigrations --check`` finds them.

    The same comparison as :func:`make_migrations` (the state the migration files build against
    the models), so the two never disagree; ``dynorm migrate`` and ``showmigrations`` warn with it.
    Pure: no request is sent (the migration modules are already loaded, the models imported).

    Args:
        migrations: the loaded migrations (:func:`~dynorm.migrations.loader.load_migrations`).
        tables: the model tables to compare (``State.load_models()`` in the CLI).

    Returns:
        One :class:`PendingChanges` per table with changes, in the order of their first operation; ``[]``
        when every model change has its migration.

    Raises:
        MigrationError: the migrations do not replay, or the models changed in a way no migration
            can be made for (the message of ``makemigrations``: key attributes, LSIs, a split item
            collection, a stored type change ...).
    """
    by_table: dict[str, list[Operation]] = {}
    for op in _detect(migrations, tables):
        for name in tables_of([op]):
            by_table.setdefault(name, []).append(op)
    apps = {t._meta.table_name: _app_label(t) for t in tables}
    return [PendingChanges(apps.get(name, name), name, tuple(ops)) for name, ops in by_table.items()]


def _app_label(table: type[Table]) -> str:
    """The package holding the table's module, as Django labels an app by its package.

    ``demo_project.library.models`` -> ``library``; ``shop.tables`` -> ``shop``; a top-level
    module ``shop_models`` -> ``shop_models``.
    """
    parts = table.__module__.split(".")
    return parts[-2] if len(parts) > 1 else parts[0]


def _check_new_multi_gsis(ops: list[Operation], tables: list[type[Table]]) -> None:
    """Refuse to add a multi-attribute GSI that an entity of its table stores with another type.

    DynamoDB would refuse every later write of such an item with a value there (and leave the
    stored ones out of the backfill). ``Table.check()`` reports it; its message is the reason.

    Raises:
        MigrationError: naming the entity, field, attribute, both types and what to do instead.
    """
    from ..checks import multi_key_problems

    by_name = {t._meta.table_name: t for t in tables}
    for op in ops:
        adds = op.added_multi_gsis()
        if adds is None:
            continue
        name, added = adds
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
