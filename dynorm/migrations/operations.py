"""Migration operations: pure descriptions that update a :class:`ProjectState`.

Applying them to DynamoDB is the executor's job (:mod:`dynorm.migrations.executor`); an
operation only knows how it changes the frozen state and how to describe itself.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from ..exceptions import DynormError
from .state import EntityState, ProjectState, TableState, split_gsis

__all__ = ["Operation", "CreateTable", "SyncIndexes", "DropIndexes", "AlterKeyEncoding", "CreateEntity", "DeleteEntity",
           "RekeyEntity", "RunPython", "DeleteVersion", "MigrationError"]


class MigrationError(DynormError):
    """A migration file or the migration graph is invalid, or a migration cannot run."""


class Operation:
    """Base class of migration operations."""

    #: True for operations that only change the recorded state (no request is sent).
    state_only = False

    def state_forwards(self, state: ProjectState) -> None:
        """Apply this operation to ``state`` in place."""

    def describe(self) -> str:
        """One line for ``--plan`` and progress output."""
        return type(self).__name__

    def deconstruct(self) -> dict[str, Any]:
        """Keyword arguments that rebuild this operation (for the migration writer)."""
        raise NotImplementedError

    def inverse(self) -> Operation | None:
        """The operation that undoes this one when migrating backwards (``None``: nothing to undo).

        Raises:
            MigrationError: the operation cannot be undone without losing data.
        """
        raise MigrationError(f"{self.describe()} cannot be reversed.")

    def key_versions(self, mode: str) -> list[tuple[str, str, str, str | None, bool]]:
        """What recording this operation applied does to key versions, for the ledger's key-version record.

        Args:
            mode: the run's ``--mode`` (``"move"`` or ``"copy"``).

        Returns:
            ``(table, entity_type, old, new, retires)`` per entity type whose items it moves away
            from ``old`` (``new``: the version they move to, ``None`` when they are deleted);
            ``retires``: whether ``old`` holds none of them once it is applied. ``[]`` by default.
        """
        return []

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.describe()}>"


class CreateTable(Operation):
    """Create a table with its GSIs and LSIs (CreateTable; skipped when it exists)."""

    def __init__(self, name: str, gsis: dict[str, Any] | None = None, lsis: dict[str, str] | None = None,
                 **options: Any) -> None:
        plain, multi = split_gsis(gsis or {})
        self.table = TableState(name=name, gsis=plain, multi_gsis=multi, lsis=dict(lsis or {}), **options)

    def state_forwards(self, state: ProjectState) -> None:
        if self.table.name in state.tables:
            raise MigrationError(f"CreateTable: table {self.table.name!r} already exists in the migration state.")
        # a copy, dicts included: later operations (SyncIndexes, DropIndexes) change the state's table in
        # place, and the same loaded migrations are replayed again (executor, makemigrations, migrate's check)
        state.tables[self.table.name] = copy.deepcopy(self.table)

    def describe(self) -> str:
        names = [*self.table.gsis, *self.table.multi_gsis]
        gsis = f" with GSIs {', '.join(names)}" if names else ""
        return f"create table {self.table.name}{gsis}"

    def deconstruct(self) -> dict[str, Any]:
        return self.table.definition()

    def inverse(self) -> Operation | None:
        raise MigrationError(f"{self.describe()} cannot be reversed: it would drop the table and every item in it "
                             "(delete the table yourself if that is what you want).")


class SyncIndexes(Operation):
    """Add GSIs to an existing table (UpdateTable per index, waiting until ACTIVE); never drops any."""

    def __init__(self, table: str, gsis: dict[str, Any]) -> None:
        self.table = table
        self.gsis, self.multi_gsis = split_gsis(gsis)

    @property
    def names(self) -> list[str]:
        """The GSIs this operation adds, template GSIs first."""
        return [*self.gsis, *self.multi_gsis]

    def state_forwards(self, state: ProjectState) -> None:
        t = _table(state, self.table, "SyncIndexes")
        t.gsis.update(self.gsis)
        t.multi_gsis.update(self.multi_gsis)

    def describe(self) -> str:
        return f"add GSI(s) {', '.join(self.names)} to {self.table}"

    def deconstruct(self) -> dict[str, Any]:
        gsis: dict[str, Any] = {k: list(v) for k, v in self.gsis.items()}
        gsis.update({k: v for k, v in self.multi_gsis.items()})
        return {"table": self.table, "gsis": gsis}

    def inverse(self) -> Operation | None:
        return None  # the index stays: an unused GSI loses nothing (drop it by hand to save its cost)


class DropIndexes(Operation):
    """Drop GSIs from a table (UpdateTable ``Delete`` per index, waiting until ACTIVE); no item is rewritten.

    Every entity of the table stops writing the dropped indexes' key attributes (their
    recorded layouts lose those indexes). Items keep the attributes they hold: after the
    drop they are plain undeclared attributes, which dynorm's writes keep. This is how an
    access pattern finishes moving onto a multi-attribute GSI (docs/modelling.md).
    """

    def __init__(self, table: str, gsis: list[str]) -> None:
        self.table = table
        self.gsis = list(gsis)

    def state_forwards(self, state: ProjectState) -> None:
        t = _table(state, self.table, "DropIndexes")
        for g in self.gsis:
            if g not in t.gsis and g not in t.multi_gsis:
                raise MigrationError(f"DropIndexes: table {self.table!r} has no GSI {g!r} in the migration state.")
            t.gsis.pop(g, None)
            t.multi_gsis.pop(g, None)
        for (tname, _etype), e in state.entities.items():
            if tname == self.table:
                for g in self.gsis:
                    e.keys.pop(g, None)

    def describe(self) -> str:
        return f"drop GSI(s) {', '.join(self.gsis)} of {self.table} (items are not rewritten)"

    def deconstruct(self) -> dict[str, Any]:
        return {"table": self.table, "gsis": list(self.gsis)}

    def inverse(self) -> Operation | None:
        raise MigrationError(f"{self.describe()} cannot be reversed: items written since no longer hold the "
                             "dropped indexes' key attributes. Add the index again in a new migration and "
                             "rekey the entities that use it.")


class AlterKeyEncoding(Operation):
    """Record a table's new key encoding (state only: no request).

    The stored keys are rewritten by the ``RekeyEntity`` operations that follow it in the same
    migration (one per entity type, each to a new key version), which render the new keys
    with the new encoding.
    """

    state_only = True

    def __init__(self, table: str, key_encoding: str) -> None:
        self.table = table
        self.key_encoding = key_encoding

    def state_forwards(self, state: ProjectState) -> None:
        _table(state, self.table, "AlterKeyEncoding").key_encoding = self.key_encoding

    def describe(self) -> str:
        return f"record key_encoding={self.key_encoding!r} for table {self.table}"

    def deconstruct(self) -> dict[str, Any]:
        return {"table": self.table, "key_encoding": self.key_encoding}


def _table(state: ProjectState, name: str, who: str) -> TableState:
    if name not in state.tables:
        raise MigrationError(f"{who}: table {name!r} is not created by any earlier migration.")
    return state.tables[name]


class CreateEntity(Operation):
    """Record an entity type's key layout (state only: no request)."""

    state_only = True

    def __init__(self, table: str, entity_type: str, key_version: str, keys: dict[str, dict[str, str]],
                 fields: dict[str, list[str]], version_attribute: str | None = None) -> None:
        self.entity = EntityState(table, entity_type, key_version, keys, fields, version_attribute)

    def state_forwards(self, state: ProjectState) -> None:
        _table(state, self.entity.table, "CreateEntity")
        state.entities[(self.entity.table, self.entity.entity_type)] = copy.deepcopy(self.entity)  # see CreateTable

    def describe(self) -> str:
        return f"record entity {self.entity.entity_type} ({self.entity.key_version}) in {self.entity.table}"

    def deconstruct(self) -> dict[str, Any]:
        return self.entity.definition()

    def inverse(self) -> Operation | None:
        return None  # state only


class DeleteEntity(Operation):
    """Forget an entity type (state only; its items stay until a DeleteVersion removes them)."""

    state_only = True

    def __init__(self, table: str, entity_type: str) -> None:
        self.table = table
        self.entity_type = entity_type

    def state_forwards(self, state: ProjectState) -> None:
        if state.entities.pop((self.table, self.entity_type), None) is None:
            raise MigrationError(f"DeleteEntity: entity type {self.entity_type!r} is unknown in table {self.table!r}.")

    def describe(self) -> str:
        return f"forget entity {self.entity_type} in {self.table}"

    def deconstruct(self) -> dict[str, Any]:
        return {"table": self.table, "entity_type": self.entity_type}

    def inverse(self) -> Operation | None:
        return None  # state only (its items were never removed)


class RekeyEntity(Operation):
    """Rewrite every item of an entity type from its old key layout to the new one.

    Args:
        table: logical table name; entity_type: the type attribute value.
        from_version, to_version: key versions.
        old, new: ``{"keys": ..., "fields": ..., "version_attribute": ...}`` (the frozen
            :class:`EntityState` parts) before and after.
        transform: optional ``fn(item: dict) -> dict`` reshaping each item's plain attributes
            on the way (keys are recomputed afterwards).
    """

    def __init__(self, table: str, entity_type: str, from_version: str, to_version: str,
                 old: dict[str, Any], new: dict[str, Any],
                 transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.table = table
        self.entity_type = entity_type
        self.from_version = from_version
        self.to_version = to_version
        self.old = EntityState(table, entity_type, from_version, old["keys"], old["fields"],
                               old.get("version_attribute"))
        self.new = EntityState(table, entity_type, to_version, new["keys"], new["fields"],
                               new.get("version_attribute"))
        self.transform = transform

    def state_forwards(self, state: ProjectState) -> None:
        key = (self.table, self.entity_type)
        current = state.entities.get(key)
        if current is None:
            raise MigrationError(f"RekeyEntity: entity type {self.entity_type!r} is unknown in table {self.table!r} "
                                 "(no earlier CreateEntity).")
        if current.key_version != self.from_version:
            raise MigrationError(f"RekeyEntity {self.entity_type}: the state has key version {current.key_version!r}, "
                                 f"not {self.from_version!r}.")
        state.entities[key] = copy.deepcopy(self.new)  # a copy: DropIndexes changes the state's keys in place

    def describe(self) -> str:
        return f"rekey {self.entity_type} in {self.table} from {self.from_version} to {self.to_version}"

    def deconstruct(self) -> dict[str, Any]:
        def part(e: EntityState) -> dict[str, Any]:
            out: dict[str, Any] = {"keys": e.keys, "fields": e.fields}
            if e.version_attribute:
                out["version_attribute"] = e.version_attribute
            return out

        return {"table": self.table, "entity_type": self.entity_type, "from_version": self.from_version,
                "to_version": self.to_version, "old": part(self.old), "new": part(self.new)}

    def inverse(self) -> Operation | None:
        """A RekeyEntity from the new layout back to the old one.

        Raises:
            MigrationError: the rekey has a ``transform`` (a function has no known inverse).
        """
        if self.transform is not None:
            raise MigrationError(f"{self.describe()} cannot be reversed: its transform has no inverse; "
                                 "write a new migration that rekeys forward to the layout you want.")

        def part(e: EntityState) -> dict[str, Any]:
            return {"keys": e.keys, "fields": e.fields, "version_attribute": e.version_attribute}

        return RekeyEntity(self.table, self.entity_type, self.to_version, self.from_version,
                           old=part(self.new), new=part(self.old))

    def key_versions(self, mode: str) -> list[tuple[str, str, str, str | None, bool]]:
        """A move leaves nothing at ``from_version``; a copy keeps the old items (expand/contract)."""
        return [(self.table, self.entity_type, self.from_version, self.to_version, mode == "move")]


class RunPython(Operation):
    """Run ``fn(context)`` with a :class:`~dynorm.migrations.executor.MigrationContext`.

    ``reverse(context)`` undoes it when migrating backwards; without it the migration cannot be
    reversed.
    """

    def __init__(self, fn: Callable[[Any], Any], reverse: Callable[[Any], Any] | None = None) -> None:
        if not callable(fn):
            raise MigrationError(f"RunPython needs a function, got {fn!r}.")
        self.fn = fn
        self.reverse = reverse

    def describe(self) -> str:
        return f"run {getattr(self.fn, '__name__', repr(self.fn))}"

    def deconstruct(self) -> dict[str, Any]:
        raise MigrationError("RunPython operations are written by hand (makemigrations --empty).")

    def inverse(self) -> Operation | None:
        if self.reverse is None:
            raise MigrationError(f"{self.describe()} cannot be reversed: give RunPython a reverse= function "
                                 "(RunPython(forward, reverse=backward)).")
        return RunPython(self.reverse, self.fn)


class DeleteVersion(Operation):
    """Delete the items of an entity type stored under an old key version (after a copy-mode rollout).

    Before deleting anything it checks that every item of that version has a copy under the
    entity's current keys, and refuses otherwise (nothing is deleted): items an application still on
    the old version wrote after the copy passed them would be lost. Each page is checked again
    before its deletes, and an item without a copy is never deleted.

    Args:
        table, entity_type: which items.
        version: the key version to delete.
        pk: the partition-key template those items were written with (for the prefix).
        copy_missing: copy the items that have no current-version copy to the current keys first
            (once every application instance writing ``version`` is stopped), instead of refusing.
    """

    def __init__(self, table: str, entity_type: str, version: str, pk: str, copy_missing: bool = False) -> None:
        self.table = table
        self.entity_type = entity_type
        self.version = version
        self.pk = pk
        self.copy_missing = copy_missing

    def state_forwards(self, state: ProjectState) -> None:
        current = state.entities.get((self.table, self.entity_type))
        if current is not None and current.key_version == self.version:
            raise MigrationError(f"DeleteVersion {self.entity_type} {self.version}: that is the current key version; "
                                 "deleting it would delete the live items.")

    def describe(self) -> str:
        return f"delete {self.entity_type} items at key version {self.version} in {self.table}"

    def deconstruct(self) -> dict[str, Any]:
        out: dict[str, Any] = {"table": self.table, "entity_type": self.entity_type, "version": self.version,
                               "pk": self.pk}
        if self.copy_missing:
            out["copy_missing"] = True
        return out

    def key_versions(self, mode: str) -> list[tuple[str, str, str, str | None, bool]]:
        """Its items at ``version`` are deleted, whatever the mode."""
        return [(self.table, self.entity_type, self.version, None, True)]

    def inverse(self) -> Operation | None:
        raise MigrationError(f"{self.describe()} cannot be reversed: the deleted items are gone.")
