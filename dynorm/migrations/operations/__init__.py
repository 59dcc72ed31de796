"""Migration operations: each describes a change and carries its own behaviour.

An operation knows how it changes the frozen :class:`~dynorm.migrations.state.ProjectState`
(``state_forwards``), what it sends forwards and backwards (``database_forwards`` /
``database_backwards``, through the executor's context), what ``migrate --plan`` estimates,
what ``migrate --verify`` counts, and how to describe itself (:mod:`.base`). Migration files
import them as ``from dynorm.migrations import operations as ops``.

Modules: :mod:`.base` (the interface and its contexts), :mod:`.ddl` (table DDL and key encoding),
:mod:`.entities` (state-only entity records), :mod:`.rekey_entity`, :mod:`.delete_version`,
:mod:`.run_python`, :mod:`.constraints` (unique constraints: sentinels backfilled or deleted).
"""

from __future__ import annotations

from ..errors import MigrationError
from .base import Operation
from .constraints import AddConstraint, RemoveConstraint
from .ddl import AlterKeyEncoding, AlterStream, CreateTable, DropIndexes, SyncIndexes
from .delete_version import DeleteVersion
from .entities import CreateEntity, DeleteEntity
from .rekey_entity import RekeyEntity
from .run_python import RunPython

__all__ = ["Operation", "CreateTable", "SyncIndexes", "DropIndexes", "AlterKeyEncoding", "AlterStream", "CreateEntity",
           "DeleteEntity", "RekeyEntity", "RunPython", "DeleteVersion", "AddConstraint", "RemoveConstraint",
           "MigrationError"]
