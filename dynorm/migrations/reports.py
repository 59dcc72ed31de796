"""What a ``migrate`` run is asked to do and what it reports.

:class:`MigrateOptions`, :class:`OpReport`, :class:`MigrateReport` (re-exported by
``dynorm.migrations.executor``) and what ``--verify`` finds, :class:`VerifyRow` (re-exported by
``dynorm.migrations.verify``): plain values, importing nothing else of the package.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MigrateOptions", "OpReport", "MigrateReport", "VerifyRow"]


@dataclass
class MigrateOptions:
    """How ``migrate`` runs.

    Attributes:
        target: apply up to and including this migration (default: all).
        mode: ``"move"`` (delete old items in the same transaction) or ``"copy"`` (keep them).
        segments: parallel Scan segments (threads) for RekeyEntity/DeleteVersion.
        worker: ``(i, n)``: this process runs the segments ``s`` with ``s % n == i``.
        dry_run: scan and count, write nothing (not even the ledger or the lock).
        fake: record migrations as applied without running them; migrating backwards, remove their
            records (applied, checkpoints, failed items) without running any inverse: no item is written.
        lock_ttl: seconds a lock lives without a heartbeat (``MIN_LOCK_TTL``..``MAX_LOCK_TTL``; the
            heartbeat renews it every third of it).
        consistent_read: strongly consistent scans; ``None`` (default): eventually consistent
            (half the RCU; the conditional writes catch a stale read), except copy-mode rekeys,
            whose Put does not compare the old item and so reads consistently.
        max_rcu, max_wcu: capacity units per second for the whole migration, split evenly
            between the ``worker`` processes and shared by this process's segments.
        resolve: ``"keep-new"`` or ``"keep-old"``: a rekey's failed items whose new key holds a
            different item are settled that way (:meth:`Rekeyer.resolve`) instead of failing again.
        confirmed: the plan the operator was shown (and confirmed): ``(migrations to reverse, newest
            first; migrations to apply)`` by name. The run takes it as the plan read before the lock:
            what another run did meanwhile is reported in ``done_elsewhere``, and a plan under the
            lock holding a migration not in it is refused (:class:`MigrationError`, nothing done).
            ``None``: the plan the executor reads itself.
        stop: when set (SIGINT/SIGTERM), every segment stops at its next checkpoint and
            :meth:`Executor.migrate` raises :class:`MigrationInterrupted`. The executor sets it
            too when one segment fails with an error, to end the others before re-raising.
    """

    target: str | None = None
    mode: str = "move"
    segments: int = 4
    worker: tuple[int, int] = (0, 1)
    dry_run: bool = False
    fake: bool = False
    lock_ttl: float = 60.0
    consistent_read: bool | None = None
    max_rcu: float | None = None
    max_wcu: float | None = None
    resolve: str | None = None
    confirmed: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    stop: threading.Event | None = field(default=None, repr=False)


@dataclass
class OpReport:
    """What one operation did (or would do, in a dry run)."""

    migration: str
    index: int
    description: str
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    status: str = "done"
    errors: list[str] = field(default_factory=list)
    #: move-mode rekeys: catch-up passes run after the scan, and the items they moved
    catch_up_passes: int = 0
    caught_up: int = 0
    #: what to do about a partial operation, when the generic advice (re-run, --resolve) does not fit
    hint: str = ""


@dataclass
class MigrateReport:
    """The summary of a ``migrate`` run."""

    applied: list[str] = field(default_factory=list)
    operations: list[OpReport] = field(default_factory=list)
    dry_run: bool = False
    seconds: float = 0.0
    #: migrations reversed (migrating backwards), newest first
    unapplied: list[str] = field(default_factory=list)
    #: migrations left partial: name -> items that failed (recorded in the ledger)
    partial: dict[str, int] = field(default_factory=dict)
    #: the first failed items, ``"<key>: <reason>"``
    failed_items: list[str] = field(default_factory=list)
    #: RCU DynamoDB reported for the scans; estimated WCU of the writes (when paced)
    read_units: float = 0.0
    write_units: float = 0.0
    #: migrations the plan read before the lock listed but another run applied (or reversed) before
    #: this one took the lock: ``{"migration", "done": "applied"|"reversed", "at": ISO time or None}``
    done_elsewhere: list[dict[str, Any]] = field(default_factory=list)
    #: ``--fake``: ``applied``/``unapplied`` were only recorded (or un-recorded); no operation ran
    fake: bool = False
    #: when the lock could not be given back: why, and the time (``time.time()``) its lease ends by
    #: at the latest (another run can take it then; ``dynorm migrate --force-unlock`` removes it sooner)
    lock_error: str = ""
    lock_expires_by: float | None = None

    def nothing_to_do(self) -> str | None:
        """``"nothing to do: 0003 was applied by another run at <time>"`` when every migration this
        run meant to apply (or reverse) was done by another run before it took the lock; else ``None``."""
        if not self.done_elsewhere or self.applied or self.unapplied or self.partial or self.operations:
            return None
        parts = [f"{d['migration']} was {d['done']} by another run" + (f" at {d['at']}" if d["at"] else "")
                 for d in self.done_elsewhere]
        return "nothing to do: " + "; ".join(parts)

    def totals(self) -> dict[str, int]:
        """Counters summed over operations."""
        out: dict[str, int] = {}
        for op in self.operations:
            for k, v in op.counts.items():
                out[k] = out.get(k, 0) + v
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``dynorm migrate --json``)."""
        return {"applied": self.applied, "unapplied": self.unapplied, "partial": self.partial,
                "failed_items": self.failed_items, "dry_run": self.dry_run, "fake": self.fake,
                "seconds": round(self.seconds, 3),
                "read_units": round(self.read_units, 1), "totals": self.totals(),
                "done_elsewhere": self.done_elsewhere,
                "lock_expires_by": None if self.lock_expires_by is None else
                time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.lock_expires_by)),
                "operations": [{"migration": o.migration, "index": o.index, "operation": o.description,
                                "status": o.status, "seconds": round(o.seconds, 3), **o.counts,
                                "catch_up_passes": o.catch_up_passes, "caught_up": o.caught_up,
                                "errors": o.errors} for o in self.operations]}


@dataclass
class VerifyRow:
    """What ``--verify`` found for one RekeyEntity or AddConstraint.

    Attributes:
        migration, table, entity_type, from_version, to_version: the operation (versions ``""`` for a
            constraint).
        old, new: items of the entity at the old and at the new key version; for a constraint, items
            holding a value and sentinels.
        ok: the counts match the mode: move: ``old == 0``; copy: ``new >= old``; for a constraint: every
            item's value has a sentinel naming it and no sentinel is an orphan.
        note: how the counts were taken when not by ``Select=COUNT`` (the version is outside the
            partition-key prefix, so the keys were read and each item's version told from its key), else "".
        constraint: the unique constraint's name (``""`` for a rekey); problems: the missing sentinels
            and orphans found (the first 20).
        index_keys_checked: for a rekey that keeps its key version (index keys only), the items whose
            index keys were rendered under the new layout and compared; ``None``: not checked (the
            version changes). stale_index_keys: those whose stored index keys differ (``ok`` is then
            False); stale_examples: the primary keys of the first 10 of them.
    """

    migration: str
    table: str
    entity_type: str
    from_version: str
    to_version: str
    old: int
    new: int
    ok: bool
    note: str = ""
    constraint: str = ""
    problems: list[str] = field(default_factory=list)
    index_keys_checked: int | None = None
    stale_index_keys: int = 0
    stale_examples: list[dict[str, Any]] = field(default_factory=list)
