"""``dynorm migrate --verify NAME``: count the items of each rekeyed entity at the old and new key version.

After a move, no item of the entity should be left at the old version. After a copy, every old
item should have a copy, so the new version must hold at least as many items as the old one.
The counts come from a parallel Scan with ``Select=COUNT`` that uses the same filter as the rekey
(entity type and old or new partition-key prefix), or one Query when the partition key is
constant. No item is transferred to the client, except when the key version is outside the
partition key's constant prefix (in the sort key, or after a variable): then both versions share
one read, which returns the key attributes, and each item's version is told from its key.

A rekey that keeps its key version (index keys only) is also checked item by item: one more
parallel Scan renders each item's index keys under the new layout and counts the items whose
stored ones differ (:mod:`.index_check`), which counting by version cannot see.
"""

from __future__ import annotations

from collections.abc import Collection
from concurrent.futures import Executor as Pool
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .errors import MigrationError
from .executor import Executor
from .reports import VerifyRow
from .state import ProjectState

__all__ = ["VerifyRow", "verify", "Check"]


@dataclass
class Check:
    """The :class:`~dynorm.migrations.operations.base.VerifyContext` of one ``--verify`` run.

    Attributes:
        migration: the migration's name; final_state: the state after every migration;
        mode: ``"move"`` or ``"copy"``; segments: parallel Scan segments per count;
        consistent: strongly consistent counts; pool: the threads counting them;
        superseded: ``(table, entity type)`` -> the later applied migration that rekeyed it again
            (its index keys are that migration's to check).
    """

    migration: str
    final_state: ProjectState
    mode: str
    segments: int
    consistent: bool
    pool: Pool
    superseded: dict[tuple[str, str], str] = field(default_factory=dict)


def verify(executor: Executor, name: str, mode: str = "move", segments: int = 4,
           consistent: bool = True) -> tuple[bool, list[VerifyRow]]:
    """Count the items of each RekeyEntity of migration ``name`` at its old and new key version (and,
    for one that keeps its key version, those whose index keys differ from the new layout's).

    Args:
        executor: the project's executor (loaded migrations); name: a migration name or unique prefix.
        mode: ``"move"`` (no item may be left at the old version) or ``"copy"`` (at least as many at
            the new version as at the old one).
        segments: parallel Scan segments per count (threads).
        consistent: strongly consistent counts (default; an eventually consistent Scan may still see
            items moved a moment ago).

    Returns:
        ``(ok, rows)``: ``ok`` is False when the migration is not applied or any row does not match.

    Raises:
        MigrationError: no migration ``name``, or a bad ``mode``/``segments``.

    DynamoDB: Query on the ledger (applied migrations), then per RekeyEntity and version
    ``segments`` parallel Scans with ``Select=COUNT`` (one Query for a constant partition key); when
    the version is outside the partition-key prefix, ``segments`` parallel Scans projecting the key
    attributes instead; for a RekeyEntity that keeps its key version, ``segments`` more parallel Scans
    projecting its key attributes and key fields (:func:`.index_check.check_index_keys`).
    """
    if mode not in ("move", "copy"):
        raise MigrationError(f"--mode must be move or copy, not {mode!r}.")
    if segments < 1:
        raise MigrationError(f"--segments must be >= 1, not {segments}.")
    resolved = executor._resolve(name)
    migration = next((m for m in executor.migrations if m.name == resolved), None)
    if migration is None:
        raise MigrationError(f"no migration {name!r}.")
    recorded = executor.applied()
    applied = migration.name in recorded
    rows: list[VerifyRow] = []
    with ThreadPoolExecutor(max_workers=segments) as pool:
        check = Check(migration.name, executor.final_state, mode, segments, consistent, pool,
                      superseded=_rekeyed_later(executor, migration.name, recorded))
        for op in migration.operations:
            rows += op.verify(check)
    return applied and all(r.ok for r in rows), rows


def _rekeyed_later(executor: Executor, name: str, recorded: Collection[str]) -> dict[tuple[str, str], str]:
    """``(table, entity type)`` -> the first applied migration after ``name`` that rekeys it again."""
    from .operations.rekey_entity import RekeyEntity

    names = [m.name for m in executor.migrations]
    later: dict[tuple[str, str], str] = {}
    for m in executor.migrations[names.index(name) + 1:]:
        if m.name not in recorded:
            continue
        for op in m.operations:
            if isinstance(op, RekeyEntity):
                later.setdefault((op.table, op.entity_type), m.name)
    return later
