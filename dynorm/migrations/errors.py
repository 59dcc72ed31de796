"""The error of the migrations package: a migration file, the graph or a run is invalid.

Its own module so that every layer of :mod:`dynorm.migrations` (operations, reports, the executor)
can raise it without importing one another; ``dynorm.migrations.operations.MigrationError`` and
``dynorm.migrations.MigrationError`` are this class.
"""

from __future__ import annotations

from ..exceptions import DynormError

__all__ = ["MigrationError"]


class MigrationError(DynormError):
    """A migration file or the migration graph is invalid, or a migration cannot run."""
