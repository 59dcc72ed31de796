"""Entity-state operations: CreateEntity and DeleteEntity (state only: no request)."""

from __future__ import annotations

import copy
from typing import Any

from ..errors import MigrationError
from ..state import EntityState, ProjectState
from .base import Operation, require_table

__all__ = ["CreateEntity", "DeleteEntity"]


class CreateEntity(Operation):
    """Record an entity type's key layout (state only: no request)."""

    state_only = True

    def __init__(self, table: str, entity_type: str, key_version: str, keys: dict[str, dict[str, str]],
                 fields: dict[str, list[str]], version_attribute: str | None = None,
                 constraints: dict[str, list[str]] | None = None, shards: dict[str, int] | None = None,
                 shard_by: dict[str, list[str]] | None = None) -> None:
        self.entity = EntityState(table, entity_type, key_version, keys, fields, version_attribute,
                                  dict(constraints or {}), dict(shards or {}),
                                  {k: list(v) for k, v in (shard_by or {}).items()})

    def state_forwards(self, state: ProjectState) -> None:
        require_table(state, self.entity.table, "CreateEntity")
        # a copy: DropIndexes changes the state's keys in place (see CreateTable)
        state.entities[(self.entity.table, self.entity.entity_type)] = copy.deepcopy(self.entity)

    def describe(self) -> str:
        return f"record entity {self.entity.entity_type} ({self.entity.key_version}) in {self.entity.table}"

    def deconstruct(self) -> dict[str, Any]:
        return self.entity.definition()

    def inverse(self) -> Operation | None:
        return None  # state only

    def tables(self) -> list[str]:
        return [self.entity.table]


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

    def tables(self) -> list[str]:
        return [self.table]
