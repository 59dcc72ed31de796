"""Apply migrations to DynamoDB: ordering, lock, per-operation and per-segment checkpoints.

The ledger lives in the first table the migrations create. A run takes the lock, applies
each pending migration's operations in order, checkpoints every scanned page, and records
the migration as applied; an interrupted run (Ctrl-C, crash, kill -9) resumes where it
stopped, and a finished one is a no-op.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import backend, conf
from ..exceptions import ServiceError, TableDoesNotExist
from ..schema import create_params, gsi_update_params, wait_active
from .ledger import Ledger
from .loader import Migration, build_state
from .operations import (
    CreateTable,
    DeleteVersion,
    MigrationError,
    Operation,
    RekeyEntity,
    RunPython,
    SyncIndexes,
)
from .rekey import Counts, Rekeyer, VersionDeleter
from .state import ProjectState, TableState

__all__ = ["MigrateOptions", "MigrateReport", "OpReport", "Executor", "MigrationContext"]

Reporter = Callable[[str, dict[str, int], float, bool], None]


@dataclass
class MigrateOptions:
    """How ``migrate`` runs.

    Attributes:
        target: apply up to and including this migration (default: all).
        mode: ``"move"`` (delete old items in the same transaction) or ``"copy"`` (keep them).
        segments: parallel Scan segments (threads) for RekeyEntity/DeleteVersion.
        worker: ``(i, n)``: this process runs the segments ``s`` with ``s % n == i``.
        dry_run: scan and count, write nothing (not even the ledger or the lock).
        fake: record migrations as applied without running them.
        lock_ttl: seconds a lock lives without a heartbeat.
    """

    target: str | None = None
    mode: str = "move"
    segments: int = 4
    worker: tuple[int, int] = (0, 1)
    dry_run: bool = False
    fake: bool = False
    lock_ttl: float = 60.0


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


@dataclass
class MigrateReport:
    """The summary of a ``migrate`` run."""

    applied: list[str] = field(default_factory=list)
    operations: list[OpReport] = field(default_factory=list)
    dry_run: bool = False
    seconds: float = 0.0

    def totals(self) -> dict[str, int]:
        """Counters summed over operations."""
        out: dict[str, int] = {}
        for op in self.operations:
            for k, v in op.counts.items():
                out[k] = out.get(k, 0) + v
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``dynorm migrate --json``)."""
        return {"applied": self.applied, "dry_run": self.dry_run, "seconds": round(self.seconds, 3),
                "totals": self.totals(),
                "operations": [{"migration": o.migration, "index": o.index, "operation": o.description,
                                "status": o.status, "seconds": round(o.seconds, 3), **o.counts,
                                "errors": o.errors} for o in self.operations]}


class MigrationContext:
    """What a ``RunPython`` function receives.

    Attributes:
        state: the :class:`ProjectState` before this migration.
        migration: the migration's name.
    """

    def __init__(self, state: ProjectState, migration: str) -> None:
        self.state = state
        self.migration = migration

    def table_name(self, logical: str) -> str:
        """The physical name of a table (prefix included)."""
        return conf.get_settings().table_prefix + logical

    def call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one DynamoDB request (through dynorm's backend)."""
        return backend.call(operation, params)


def _physical(logical: str) -> str:
    return conf.get_settings().table_prefix + logical


def _describe_table(name: str) -> dict[str, Any] | None:
    try:
        return backend.call("DescribeTable", {"TableName": name})["Table"]
    except TableDoesNotExist:
        return None


class Executor:
    """Plans and applies the loaded migrations.

    Args:
        migrations: loaded in dependency order (:func:`~dynorm.migrations.loader.load_migrations`).
        reporter: called as ``reporter(label, counts, seconds, final)`` while long operations run.
    """

    def __init__(self, migrations: list[Migration], reporter: Reporter | None = None) -> None:
        self.migrations = migrations
        self.reporter = reporter
        self.final_state = build_state(migrations)  # validates every operation against the state
        self._created: set[str] = set()

    # -- ledger ------------------------------------------------------------------------
    def ledger_table(self) -> TableState:
        """The table holding the ledger: the first one the migrations create."""
        for m in self.migrations:
            for op in m.operations:
                if isinstance(op, CreateTable):
                    return self.final_state.tables[op.table.name]
        raise MigrationError("no migration creates a table; the first migration must (the ledger lives there).")

    def ledger(self) -> Ledger:
        """The :class:`Ledger` of this project."""
        table = self.ledger_table()
        return Ledger(table, _physical(table.name))

    def applied(self) -> dict[str, dict[str, Any]]:
        """Applied migrations by name (empty when the ledger table does not exist yet)."""
        if not self.migrations:
            return {}
        ledger = self.ledger()
        return ledger.applied() if ledger.exists() else {}

    def plan(self, target: str | None = None) -> list[Migration]:
        """The pending migrations up to and including ``target``, in order.

        Raises:
            MigrationError: ``target`` names no migration.
        """
        names = [m.name for m in self.migrations]
        if target is not None and target not in names:
            matches = [n for n in names if n.startswith(target)]
            if len(matches) != 1:
                raise MigrationError(f"no migration {target!r}; migrations: {', '.join(names) or 'none'}.")
            target = matches[0]
        applied = self.applied()
        out = []
        for m in self.migrations:
            if m.name not in applied:
                out.append(m)
            if m.name == target:
                break
        return out

    # -- running -----------------------------------------------------------------------
    def migrate(self, options: MigrateOptions) -> MigrateReport:
        """Apply (or, with ``dry_run``, measure) the pending migrations.

        Raises:
            MigrationLocked: another run holds the lock.
            MigrationError: bad migrations or options.
        """
        started = time.monotonic()
        report = MigrateReport(dry_run=options.dry_run)
        if not self.migrations:
            return report
        if options.mode not in ("move", "copy"):
            raise MigrationError(f"--mode must be move or copy, not {options.mode!r}.")
        if options.segments < 1 or not 0 <= options.worker[0] < options.worker[1]:
            raise MigrationError("--segments must be >= 1 and --worker i/N needs 0 <= i < N.")
        pending = self.plan(options.target)
        if options.dry_run:
            for m in pending:
                self._run(m, options, report, None)
            report.seconds = time.monotonic() - started
            return report
        ledger = self.ledger()
        if not ledger.exists():
            self._create_table(self.ledger_table())
        worker = "all" if options.worker[1] == 1 else f"w{options.worker[0]}of{options.worker[1]}"
        ledger.acquire(worker, ttl=options.lock_ttl)
        try:
            for m in self.plan(options.target):
                if options.fake:
                    ledger.record_applied(m.name, {}, fake=True)
                    report.applied.append(m.name)
                    continue
                if not self._run(m, options, report, ledger):
                    break  # other workers still own segments of this migration
                ledger.record_applied(m.name, self._totals(report, m.name))
                report.applied.append(m.name)
        finally:
            ledger.release()
        report.seconds = time.monotonic() - started
        return report

    @staticmethod
    def _totals(report: MigrateReport, name: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for op in report.operations:
            if op.migration == name:
                for k, v in op.counts.items():
                    out[k] = out.get(k, 0) + v
        return out

    def _run(self, m: Migration, options: MigrateOptions, report: MigrateReport, ledger: Ledger | None) -> bool:
        """Run one migration's operations; return False when other workers still have work in it."""
        state_before = build_state(self.migrations[: [x.name for x in self.migrations].index(m.name)])
        complete = True
        for i, op in enumerate(m.operations):
            if op.state_only:
                continue
            if ledger is not None:
                marker = ledger.checkpoint(m.name, i, "op")
                if marker and marker["done"]:
                    continue
            rep = OpReport(m.name, i, op.describe())
            t0 = time.monotonic()
            done = self._apply(m, i, op, options, ledger, rep, state_before)
            rep.seconds = time.monotonic() - t0
            report.operations.append(rep)
            if ledger is not None and done:
                ledger.save_checkpoint(m.name, i, "op", None, True, rep.counts)
            complete = complete and done
        return complete

    def _apply(self, m: Migration, i: int, op: Operation, options: MigrateOptions, ledger: Ledger | None,
               rep: OpReport, state: ProjectState) -> bool:
        if isinstance(op, CreateTable):
            exists = _describe_table(_physical(op.table.name)) is not None
            rep.status = "exists" if exists else ("would create" if options.dry_run else "created")
            if _physical(op.table.name) in self._created:
                rep.status = "created"  # just now, to hold the ledger
            if not exists and not options.dry_run:
                self._create_table(self.final_state.tables.get(op.table.name, op.table))
            return True
        if isinstance(op, SyncIndexes):
            desc = _describe_table(_physical(op.table))
            present = {g["IndexName"] for g in (desc or {}).get("GlobalSecondaryIndexes", [])}
            missing = {g: v for g, v in op.gsis.items() if g not in present}
            rep.status = f"{'would add' if options.dry_run else 'added'} {', '.join(missing) or 'nothing'}"
            if not options.dry_run:
                for gname, (pk, sk) in missing.items():
                    backend.call("UpdateTable", gsi_update_params(_physical(op.table), gname, pk, sk))
                    wait_active(_physical(op.table))
            return True
        if isinstance(op, RunPython):
            rep.status = "would run" if options.dry_run else "ran"
            if not options.dry_run:
                op.fn(MigrationContext(state, m.name))
            return True
        if isinstance(op, (RekeyEntity, DeleteVersion)):
            return self._scan_op(m, i, op, options, ledger, rep)
        raise MigrationError(f"migration {m.name}: unknown operation {op!r}.")  # pragma: no cover

    def _create_table(self, table: TableState) -> None:
        name = _physical(table.name)
        try:
            backend.call("CreateTable", create_params(table.options(), name, table.attribute_types))
        except ServiceError as exc:
            if exc.code != "ResourceInUseException":  # created meanwhile by another run
                raise
        else:
            self._created.add(name)
        wait_active(name)
        if table.ttl_attribute:
            backend.call("UpdateTimeToLive", {"TableName": name, "TimeToLiveSpecification": {
                "Enabled": True, "AttributeName": table.ttl_attribute}})

    def _scan_op(self, m: Migration, i: int, op: RekeyEntity | DeleteVersion, options: MigrateOptions,
                 ledger: Ledger | None, rep: OpReport) -> bool:
        table = self.final_state.tables[op.table]
        physical = _physical(op.table)
        counts = Counts()
        if _describe_table(physical) is None:
            rep.status = "table missing: nothing to do"
            rep.counts = counts.as_dict()
            return True
        worker: Any = Rekeyer(op, table, physical, options.mode, counts, options.dry_run) \
            if isinstance(op, RekeyEntity) else VersionDeleter(op, table, physical, counts, options.dry_run)
        operation, _ = worker.read_params(0, 1)
        total = options.segments if operation == "Scan" else 1
        if ledger is not None:
            meta = ledger.checkpoint(m.name, i, "meta")
            if meta is not None:
                total = int(meta["counts"].get("segments", total))  # resume with the same segmentation
            else:
                ledger.save_checkpoint(m.name, i, "meta", None, False, {"segments": total})
        mine = [s for s in range(total) if s % options.worker[1] == options.worker[0]]
        label = f"{m.name} {op.describe()}"

        def run_segment(seg: int) -> None:
            start = None
            if ledger is not None:
                cp = ledger.checkpoint(m.name, i, seg)
                if cp is not None:
                    if cp["done"]:
                        return
                    start = cp["lek"]
            op_name, params = worker.read_params(seg, total)
            for items, lek in worker.pages(op_name, params, start):
                worker.process(items)
                if ledger is not None:
                    ledger.save_checkpoint(m.name, i, seg, lek, lek is None, counts.as_dict())

        stop = threading.Event()
        t0 = time.monotonic()
        ticker = None
        if self.reporter is not None:
            reporter = self.reporter

            def tick() -> None:
                while not stop.wait(0.5):
                    reporter(label, counts.as_dict(), time.monotonic() - t0, False)

            ticker = threading.Thread(target=tick, daemon=True)
            ticker.start()
        try:
            with ThreadPoolExecutor(max_workers=max(1, len(mine))) as pool:
                for future in [pool.submit(run_segment, s) for s in mine]:
                    future.result()
        finally:
            stop.set()
            if ticker is not None:
                ticker.join()
        rep.counts = counts.as_dict()
        rep.errors = list(counts.errors)
        if self.reporter is not None:
            self.reporter(label, rep.counts, time.monotonic() - t0, True)
        if options.dry_run:
            rep.status = "dry run"
            return True
        if options.worker[1] > 1 and ledger is not None:
            done = {c["segment"] for c in ledger.checkpoints(m.name, i) if c["done"]}
            if not all(str(s) in done for s in range(total)):
                rep.status = "waiting for other workers"
                return False
        rep.status = "done" if not counts.failed else f"done with {counts.failed} failure(s)"
        return True
