"""Migrations: rewrite version-prefixed keys safely (``dynorm makemigrations`` / ``migrate``).

Pure planning (:mod:`.state`, :mod:`.operations`, :mod:`.autodetector`, :mod:`.writer`,
:mod:`.loader`) is separate from applying (:mod:`.executor`, :mod:`.rekey`, :mod:`.ledger`).
Migration files import the operations as ``from dynorm.migrations import operations as ops``.
"""

from __future__ import annotations

from .operations import (
    CreateEntity,
    CreateTable,
    DeleteEntity,
    DeleteVersion,
    DropIndexes,
    MigrationError,
    Operation,
    RekeyEntity,
    RunPython,
    SyncIndexes,
)

__all__ = ["CreateEntity", "CreateTable", "DeleteEntity", "DeleteVersion", "DropIndexes", "MigrationError", "Operation",
           "RekeyEntity", "RunPython", "SyncIndexes"]
