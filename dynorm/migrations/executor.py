"""Apply migrations to DynamoDB: ordering, lock, per-operation and per-segment checkpoints.

The ledger lives in the first table the migrations create. A run takes the lock, applies
each pending migration's operations in order, checkpoints every scanned page, and records
the migration as applied; an interrupted run (Ctrl-C, crash, kill -9) resumes where it
stopped, and a finished one is a no-op.

A migration is recorded as applied only when every item was rewritten: items that failed are
recorded in the ledger and the migration stays *partial*; the next run retries exactly those
items (and any unfinished scan segment). A stop event (set by the CLI on SIGINT/SIGTERM) ends
every segment at its next checkpoint (between transactions, within ~0.1 s on DynamoDB Local)
and :class:`MigrationInterrupted` is raised after the lock is released. Migrating to an earlier
target runs the inverse of each operation of the applied migrations after it, newest first (with
``fake``, only their records are removed).
"""

from __future__ import annotations

import signal
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .. import backend, conf
from ..exceptions import DynormError, ServiceError, TableDoesNotExist
from ..schema import create_params, gsi_update_params, wait_active
from .cost import OperationCost, Pacer, estimate_scan_operation
from .ledger import Ledger
from .loader import Migration, build_state
from .operations import (
    CreateTable,
    DeleteVersion,
    DropIndexes,
    MigrationError,
    Operation,
    RekeyEntity,
    RunPython,
    SyncIndexes,
)
from .rekey import COPY_GROUP, DELETE_GROUP, MOVE_GROUP, PAGE_SIZE, TALLY_WCU, Counts, Rekeyer, VersionDeleter
from .state import ProjectState, TableState

if TYPE_CHECKING:  # pragma: no cover
    from ..tables import Table

__all__ = ["MigrateOptions", "MigrateReport", "OpReport", "Executor", "MigrationContext", "MigrationInterrupted",
           "UnknownMigrationsApplied", "OperationFailed", "check_ledger_without_migrations",
           "check_lock_ttl", "MIN_LOCK_TTL", "MAX_LOCK_TTL", "CATCH_UP_PASSES", "SegmentJob", "run_segment",
           "make_worker"]

Reporter = Callable[[str, dict[str, int], float, bool], None]

#: bounds of ``--lock-ttl``: below 1 s the heartbeat (every third of it) would be a request every
#: 0.3 s; above an hour a dead run would keep the table locked for longer than anyone waits
#: (``--force-unlock`` aside).
MIN_LOCK_TTL = 1.0
MAX_LOCK_TTL = 3600.0
#: catch-up passes after a move before it is recorded applied: each re-scans for old-version items
#: (written meanwhile by an application still on the old key version) and moves them; when the last
#: one still finds some, the migration stays partial (old-version writers are still running).
CATCH_UP_PASSES = 3


def check_lock_ttl(seconds: float) -> float:
    """Return ``seconds`` if it is a usable lock lease (``MIN_LOCK_TTL`` to ``MAX_LOCK_TTL``).

    Raises:
        MigrationError: it is not a number in that range.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not (
            MIN_LOCK_TTL <= seconds <= MAX_LOCK_TTL):
        raise MigrationError(f"--lock-ttl must be a number of seconds from {MIN_LOCK_TTL:g} to {MAX_LOCK_TTL:g}, "
                             f"not {seconds!r} (the lock's lease; a heartbeat renews it every third of it).")
    return float(seconds)


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
    stop: threading.Event | None = field(default=None, repr=False)


class UnknownMigrationsApplied(MigrationError):
    """The ledger lists applied, or started (partial), migrations that no migration file has: the
    code is older than the table.

    Typically a deploy rolled back by reverting code after a migration (a rekey) ran, or while it
    ran: the older entities would read nothing and write second copies at the old keys. Every
    command that reads the ledger refuses until the files are back (roll forward) or the migrations
    were reversed with the code that has them (docs/migrations.md, "Rolling back a deploy"). An
    empty migrations package whose ledger (in a table of the models) lists migrations is refused too.

    Attributes:
        unknown: ``{migration name: applied_at}`` of the applied migrations without a file.
        partial: the started, not applied, migrations without a file (work recorded: checkpoints).
        last_known: the newest applied migration that has a file (``None``: none).
    """

    def __init__(self, message: str, unknown: dict[str, str | None], last_known: str | None,
                 partial: list[str] | None = None) -> None:
        super().__init__(message)
        self.unknown = unknown
        self.last_known = last_known
        self.partial = list(partial or [])


def _refuse_unknown(table: str, names: list[str], applied: dict[str, dict[str, Any]], recorded: set[str]) -> None:
    """Raise :class:`UnknownMigrationsApplied` when the ledger of ``table`` lists an applied or started
    migration that is not in ``names`` (the migration files, in order)."""
    unknown = {n: rec.get("applied_at") for n, rec in sorted(applied.items()) if n not in names}
    partial = sorted(n for n in recorded if n not in names and n not in applied)
    if not unknown and not partial:
        return
    last = next((n for n in reversed(names) if n in applied), None)
    listed = ", ".join([f"{n} (applied {at or 'at an unknown time'})" for n, at in unknown.items()]
                       + [f"{n} (partial: started, not finished; some items may be rewritten already)"
                          for n in partial])
    back = f"`dynorm migrate {last}`" if last else "`dynorm migrate <the last migration this code has>`"
    files = ", ".join([*unknown, *partial])
    what = (f"Either roll forward (deploy the code that has {files}), or roll back in this order: with the code "
            f"that has those files, run {back} (it reverses them), then deploy this code." if names else
            f"This code has no migration file at all (an empty migrations package): restore the files ({files}), "
            "or, with the code that has them, reverse what must be undone before deploying this code.")
    raise UnknownMigrationsApplied(
        f"the ledger of table {table} lists {'applied or started' if partial else 'applied'} migration(s) that "
        f"this code has no file for: {listed}. "
        "The code is older than the table (a deploy rolled back by reverting code?): its entities would miss "
        "the items those migrations rewrote and write second copies at the old keys. Refusing to go on. " + what,
        unknown, last, partial)


def check_ledger_without_migrations(tables: list[type[Table]]) -> None:
    """With no migration file at all: refuse when a table of ``tables`` (the models') holds a ledger.

    The ledger lives in the first table the migrations create, which the files no longer name; an
    empty package whose table still lists migrations is code older than the table, as in
    :meth:`Executor.applied`. Per table with a sort key: DescribeTable, then two Queries of the
    ledger partition when it exists.

    Raises:
        UnknownMigrationsApplied: a ledger lists applied or started migrations.
    """
    from .state import table_state

    for table in tables:
        frozen = table_state(table)
        if not frozen.sk_attribute:
            continue
        ledger = Ledger(frozen, _physical(frozen.name))
        if ledger.exists():
            _refuse_unknown(ledger.name, [], ledger.applied(), ledger.recorded())


class OperationFailed(MigrationError):
    """An operation's own code (a ``RunPython`` function) raised: the run stopped there.

    Any exception counts, ``SystemExit`` (``sys.exit(0)``) and a ``KeyboardInterrupt`` the code raised
    itself included; only a signal's stop is :class:`MigrationInterrupted` instead.

    The message names the migration and the operation, what this run applied before it, the
    state the ledger is left in, and the traceback of the user code (dynorm's frames left out).

    Attributes:
        migration: the migration's name; index: the operation's position; operation: its description.
        applied: migrations this run recorded applied before the failure (in order).
        reversed: migrations this run reversed before the failure.
        ledger_state: one sentence: what the ledger says now and what a re-run does.
        user_traceback: the formatted traceback of the user code.
        report: the :class:`MigrateReport` so far.
    """

    def __init__(self, message: str, *, migration: str, index: int, operation: str, applied: list[str],
                 reversed: list[str], ledger_state: str, user_traceback: str, report: MigrateReport) -> None:
        super().__init__(message)
        self.migration, self.index, self.operation = migration, index, operation
        self.applied, self.reversed, self.ledger_state = applied, reversed, ledger_state
        self.user_traceback, self.report = user_traceback, report

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``dynorm migrate --json`` prints it as ``{"error": ...}``)."""
        return {"error": str(self).split("\n", 1)[0], "migration": self.migration, "operation_index": self.index,
                "operation": self.operation, "applied": self.applied, "reversed": self.reversed,
                "ledger": self.ledger_state, "traceback": self.user_traceback, "report": self.report.to_dict()}


def _user_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` without dynorm's own frames (the user's function and what it called)."""
    import os
    import traceback

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not os.path.abspath(f.filename).startswith(package)]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames),
             *traceback.format_exception_only(type(exc), exc)]
    return "".join(lines).rstrip("\n")


def _cause(exc: BaseException) -> str:
    """``exc`` in a few words for a stop's message: ``DeleteItem: ReadTimeoutError`` for a request that
    got no answer (its whole text is the exception's, kept as ``__cause__``)."""
    if isinstance(exc, ServiceError) and exc.operation and exc.code:
        return f"{exc.operation}: {exc.code}" + (" (the write may have been applied)" if exc.maybe_applied else "")
    if isinstance(exc, MigrationInterrupted):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


class MigrationInterrupted(DynormError):
    """A stop (SIGINT/SIGTERM) ended the run at a checkpoint; the lock is released and progress saved.

    Attributes:
        report: the :class:`MigrateReport` of what was done before the stop.
        lost_lease: True when the stop came from the lock: its lease could not be renewed in time
            (not from a signal).
    """

    def __init__(self, message: str, report: MigrateReport, lost_lease: bool = False) -> None:
        super().__init__(message)
        self.report = report
        self.lost_lease = lost_lease


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


def _key_growth(old: dict[str, dict[str, str]], new: dict[str, dict[str, str]]) -> int:
    """Bytes a rewritten item may gain: the new key attributes' names and templates, less the old ones'.

    Field values fill both templates alike; an attribute only the new keys have counts in full
    (its name and template text, plus its field values at most once more: counted as the template again).
    """
    def size(keys: dict[str, dict[str, str]]) -> dict[str, int]:
        return {attr: len(attr.encode()) + len(tpl.encode()) for attrs in keys.values() for attr, tpl in attrs.items()}

    before, after = size(old), size(new)
    return sum(max(0, n - before.get(a, 0)) if a in before else 2 * n for a, n in after.items())


def _describe_table(name: str) -> dict[str, Any] | None:
    try:
        return backend.call("DescribeTable", {"TableName": name})["Table"]
    except TableDoesNotExist:
        return None


@dataclass
class SegmentJob:
    """One RekeyEntity/DeleteVersion scan, as :meth:`Executor._run_segments` hands it to an engine.

    Attributes:
        name: the ledger label (``<migration>`` or ``<migration>~reverse``); index: the operation's position.
        op, table, physical: the operation, its frozen table state and physical table name.
        options: the run's options; consistent: strongly consistent reads; total: Scan segments.
        ledger: the migration ledger (``None`` in a dry run).
        copies: a DeleteVersion's copy-mode chain to the current key version (:meth:`Executor.copies_chain`),
            from which :func:`make_worker` builds the check for current copies; ``None`` otherwise.
    """

    name: str
    index: int
    op: RekeyEntity | DeleteVersion
    table: TableState
    physical: str
    options: MigrateOptions
    consistent: bool
    total: int
    ledger: Ledger | None
    copies: RekeyEntity | None = None


def make_worker(job: SegmentJob, counts: Counts, pacer: Pacer) -> Rekeyer | VersionDeleter:
    """The worker that rewrites (or deletes) the items of ``job``: the one builder of every engine.

    A DeleteVersion's :class:`~dynorm.migrations.rekey.VersionDeleter` gets its copy-mode
    :class:`~dynorm.migrations.rekey.Rekeyer` from ``job.copies`` (with its own counters and this
    ``pacer``), so it deletes only items at the deleted version that have a current copy, on
    whichever engine (thread or Dask task) it runs.

    Args:
        job: the operation; counts: the counters to add to; pacer: the rate limits to take from.
    """
    options = job.options
    if isinstance(job.op, RekeyEntity):
        return Rekeyer(job.op, job.table, job.physical, options.mode, counts, options.dry_run, pacer, job.consistent)
    copies = Rekeyer(job.copies, job.table, job.physical, "copy", Counts(), options.dry_run, pacer, True) \
        if job.copies is not None else None
    return VersionDeleter(job.op, job.table, job.physical, counts, options.dry_run, pacer=pacer,
                          consistent=job.consistent, copies=copies)


def run_segment(worker: Any, ledger: Ledger | None, name: str, i: int, seg: int, total: int,
                tally: bool = False) -> None:
    """Run one scan segment from its checkpoint: read a page, rewrite it, record failures, checkpoint.

    The one segment runner of every engine (threads here, Dask tasks in
    :mod:`dynorm.migrations.dask_executor`). A finished segment returns at once; a stop ends it at
    the next checkpoint (a page stopped midway is read again by the next run, which is harmless).

    Args:
        worker: a :class:`~dynorm.migrations.rekey.Rekeyer` or :class:`~dynorm.migrations.rekey.VersionDeleter`.
        ledger: where checkpoints and failed items go (``None``: a dry run).
        name, i: the ledger label and the operation's index; seg, total: this segment of ``total``.
        tally: a Rekeyer's transactions also add their item counts to the segment's tally in the
            ledger (:meth:`Ledger.tally_action`): the Dask engine reports from it. A VersionDeleter's
            always do (the executor reports a DeleteVersion's deletions from the ledger).

    DynamoDB: GetItem (checkpoint), Scan/Query pages, the worker's writes, PutItem per page (checkpoint).
    """
    start = None
    if ledger is not None:
        cp = ledger.checkpoint(name, i, seg)
        if cp is not None:
            if cp["done"]:
                return
            start = cp["lek"]
    op_name, params = worker.read_params(seg, total)
    # a DeleteVersion always counts in the ledger (its report takes "rewritten" from there: exact across
    # interrupted runs); a rekey when asked (the Dask engine)
    counter = ledger.tally_action(name, i, seg) if ledger is not None and not worker.dry_run and (
        isinstance(worker, VersionDeleter) or (tally and isinstance(worker, Rekeyer))) else None
    for items, lek in worker.pages(op_name, params, start):
        result = worker.process(items, tally=counter) if counter is not None else worker.process(items)
        if ledger is not None and result.failed:
            ledger.record_failures(name, i, result.failed)  # before the checkpoint moves past them
        if not result.complete:
            return  # stopped mid-page: the next run re-reads this page
        if ledger is not None:
            ledger.save_checkpoint(name, i, seg, lek, lek is None, worker.counts.as_dict())


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
        self._report = MigrateReport()  # the current run's (for OperationFailed)
        self._stop = threading.Event()
        self._pacer = Pacer()

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
        """Applied migrations by name (empty when the ledger table does not exist yet).

        DynamoDB: DescribeTable, then a consistent Query of the ledger partition.

        DynamoDB: DescribeTable, then two consistent Queries of the ledger partition (the applied
        records; the checkpoints' sort keys).

        Raises:
            UnknownMigrationsApplied: the ledger lists applied or started (partial) migrations that
                have no file here.
        """
        if not self.migrations:
            return {}
        ledger = self.ledger()
        if not ledger.exists():
            return {}
        applied = ledger.applied()
        _refuse_unknown(ledger.name, [m.name for m in self.migrations], applied, ledger.recorded())
        return applied

    def started(self) -> set[str]:
        """Migrations not applied with work recorded: partial, interrupted, or partly reversed (one Query)."""
        if not self.migrations:
            return set()
        ledger = self.ledger()
        if not ledger.exists():
            return set()
        applied = ledger.applied()
        return {name for name, p in ledger.progress().items() if p["started"] and name not in applied}

    def _resolve(self, target: str | None) -> str | None:
        names = [m.name for m in self.migrations]
        if target is not None and target not in names:
            matches = [n for n in names if n.startswith(target)]
            if len(matches) != 1:
                raise MigrationError(f"no migration {target!r}; migrations: {', '.join(names) or 'none'}.")
            target = matches[0]
        return target

    def backwards_plan(self, target: str | None, fake: bool = False) -> list[Migration]:
        """The migrations after ``target`` that migrating to it reverses, newest first.

        Those are the applied ones and those with recorded work (partial, interrupted, partly
        reversed): reversing a partial migration moves back what it moved.

        Args:
            fake: the reversal only un-records them (``--fake``): an operation without an inverse
                does not matter then.

        Raises:
            MigrationError: ``target`` names no migration, or (unless ``fake``) one of those migrations
                has an operation without an inverse (nothing is changed then).
        """
        target = self._resolve(target)
        if target is None:
            return []
        applied = self.applied()
        started = self.started()
        names = [m.name for m in self.migrations]
        later = [m for m in self.migrations[names.index(target) + 1:] if m.name in applied or m.name in started]
        if later and target not in applied:
            raise MigrationError(f"cannot migrate to {target}: it is not applied, but later migrations are "
                                 f"({', '.join(m.name for m in later)}).")
        for m in later if not fake else []:
            for op in m.operations:
                try:
                    op.inverse()
                except MigrationError as exc:
                    raise MigrationError(f"cannot migrate back to {target}: migration {m.name}: {exc}") from exc
        return list(reversed(later))

    def plan(self, target: str | None = None) -> list[Migration]:
        """The pending migrations up to and including ``target``, in order.

        Raises:
            MigrationError: ``target`` names no migration.
        """
        target = self._resolve(target)
        applied = self.applied()
        out = []
        for m in self.migrations:
            if m.name not in applied:
                out.append(m)
            if m.name == target:
                break
        return out

    # -- cost --------------------------------------------------------------------------
    @staticmethod
    def consistent_for(op: Operation, options: MigrateOptions) -> bool:
        """Whether ``op``'s scan reads consistently under ``options`` (see :class:`MigrateOptions`)."""
        if options.consistent_read is not None:
            return options.consistent_read
        return isinstance(op, RekeyEntity) and options.mode == "copy"

    def estimate(self, op: Operation, options: MigrateOptions) -> OperationCost | None:
        """Estimate the requests and capacity of a RekeyEntity/DeleteVersion (DescribeTable); else ``None``.

        Returns:
            An :class:`~dynorm.migrations.cost.OperationCost` (upper bounds of requests, RCU and WCU:
            it assumes every item of the table is of the operation's entity type, and uses the table's
            total size rather than the average item size), or ``None`` for other operations or a
            table that does not exist yet.
        """
        if not isinstance(op, (RekeyEntity, DeleteVersion)):
            return None
        desc = _describe_table(_physical(op.table))
        if desc is None:
            return None
        growth = 0
        if isinstance(op, RekeyEntity):
            kind = options.mode
            gsis = sum(1 for path in op.new.keys if path != "primary")
            group = MOVE_GROUP if kind == "move" else COPY_GROUP
            growth = _key_growth(op.old.keys, op.new.keys)
        else:
            # every delete transaction carries the ledger's tally action: 99 Deletes at most
            kind, gsis, group = "delete", len(self.final_state.tables[op.table].gsis), DELETE_GROUP - 1
            position = next((n for n, m in enumerate(self.migrations) if any(o is op for o in m.operations)),
                            len(self.migrations) - 1)
            copies = self.copies_of(op, position)
            if copies is not None:  # the copies read by the check may be larger than the old items
                growth = _key_growth(copies.op.old.keys, copies.op.new.keys)
                if op.copy_missing:  # every old item may lack its copy: copy-mode Puts first
                    kind = "delete+copy"
        # paced, a request takes at most one second of this process's budget (Pacer.groups), less the tally's
        budget = options.max_wcu / options.worker[1] - TALLY_WCU if options.max_wcu else None
        return estimate_scan_operation(kind, int(desc.get("ItemCount", 0)), int(desc.get("TableSizeBytes", 0)),
                                       options.segments, PAGE_SIZE, group, gsis, self.consistent_for(op, options),
                                       growth, budget)

    # -- running -----------------------------------------------------------------------
    def migrate(self, options: MigrateOptions) -> MigrateReport:
        """Apply (or, with ``dry_run``, measure) the pending migrations, or reverse later ones.

        When ``options.target`` is applied and later migrations are too, those are reversed
        (newest first) instead. The plan is made again from the ledger read once the lock is held:
        what another run did meanwhile is not done again but listed in ``report.done_elsewhere``.
        A migration with failed items is left partial (not applied) and
        the run stops there.

        Raises:
            MigrationLocked: another run holds the lock.
            MigrationError: bad migrations or options, or a reversal without an inverse.
            MigrationInterrupted: ``options.stop`` was set; progress is saved, the lock released.
            OperationFailed: a ``RunPython`` function raised (the lock is released; the message says
                what was applied, the ledger's state and the user code's traceback).
        """
        started = time.monotonic()
        report = MigrateReport(dry_run=options.dry_run)
        self._report = report
        if not self.migrations:
            return report
        if options.mode not in ("move", "copy"):
            raise MigrationError(f"--mode must be move or copy, not {options.mode!r}.")
        if options.resolve not in (None, "keep-new", "keep-old"):
            raise MigrationError(f"--resolve must be keep-new or keep-old, not {options.resolve!r}.")
        if options.segments < 1 or not 0 <= options.worker[0] < options.worker[1]:
            raise MigrationError("--segments must be >= 1 and --worker i/N needs 0 <= i < N.")
        for name, value in (("--max-rcu", options.max_rcu), ("--max-wcu", options.max_wcu)):
            if value is not None and value <= 0:
                raise MigrationError(f"{name} must be > 0, not {value}.")
        check_lock_ttl(options.lock_ttl)
        self._stop = options.stop or threading.Event()
        self._pacer = Pacer(options.max_rcu, options.max_wcu, options.worker[1], self._stop)
        # the plan read before the lock: validates the target and reversibility early, runs a dry
        # run, and is what the caller saw; a real run plans again from the ledger read under the lock
        backwards = self.backwards_plan(options.target, fake=options.fake)
        pending = [] if backwards else self.plan(options.target)
        report.fake = options.fake
        if options.worker[1] > 1 and not options.dry_run and not options.fake:
            self._refuse_split_run_python(backwards, pending, options)
        try:
            if options.dry_run:
                if options.fake:  # a fake run writes no item: nothing to measure
                    return report
                for m in backwards:
                    self._run(m, options, report, None, reverse=True)
                for m in pending:
                    self._run(m, options, report, None)
                return report
            ledger = self.ledger()
            if not ledger.exists():
                self._create_table(self.ledger_table())
            worker = "all" if options.worker[1] == 1 else f"w{options.worker[0]}of{options.worker[1]}"
            ledger.on_lost = self._stop.set  # a lock that cannot be renewed stops every segment
            ledger.acquire(worker, ttl=options.lock_ttl)
            self._pacer.lease = ledger.holds  # no write once the lock may have expired (a hung renewal)
            # once stopped (a signal, a lost lease), no request is retried: a silent endpoint must not
            # hold the stop for max_attempts x read_timeout per request
            with backend.no_retries_after(self._stop):
                try:
                    backwards, pending = self._replan(options.target, backwards, pending, report, options.fake)
                    for m in backwards:
                        if options.fake:
                            # Django's --fake: only the record changes; the items stay as the operations left them
                            ledger.forget(m.name)
                            report.unapplied.append(m.name)
                            continue
                        # from here on the migration is no longer applied: its forward records are void
                        # (a forward run starts it again) and an interruption leaves it partial
                        ledger.unrecord_applied(m.name)
                        ledger.clear(m.name)
                        status = self._run(m, options, report, ledger, reverse=True)
                        if status == "partial":
                            report.partial[m.name] = self._totals(report, f"{m.name}~reverse").get("failed", 0)
                        if status != "done":
                            break
                        ledger.forget(m.name)
                        report.unapplied.append(m.name)
                    for m in pending:
                        if options.fake:
                            ledger.record_applied(m.name, {}, fake=True)
                            report.applied.append(m.name)
                            continue
                        ledger.clear(f"{m.name}~reverse")  # a partial reversal is void once it moves forward
                        status = self._run(m, options, report, ledger)
                        if status == "waiting":
                            break  # other workers still own segments of this migration
                        if status == "partial":
                            report.partial[m.name] = self._totals(report, m.name).get("failed", 0)
                            break  # later migrations may rely on this one: stop here
                        ledger.record_applied(m.name, self._totals(report, m.name))
                        report.applied.append(m.name)
                except BaseException as exc:
                    interrupted = self._interruption(exc, ledger, report)
                    self._give_back(ledger, report, quick=interrupted is not None)
                    if interrupted is None or interrupted is exc:
                        raise
                    raise interrupted from exc
                else:
                    self._give_back(ledger, report, quick=False)
        finally:
            report.seconds = time.monotonic() - started
            report.read_units = self._pacer.read_units
            report.write_units = self._pacer.write_units
        return report

    def _interruption(self, exc: BaseException, ledger: Ledger, report: MigrateReport) -> MigrationInterrupted | None:
        """What ends a run that raised ``exc`` once its lock was held: a :class:`MigrationInterrupted`
        (``lost_lease`` when the lock's lease was lost or has run out), or ``None`` when ``exc`` is an
        error of its own (a ``RunPython`` failing, a bad migration, DynamoDB refusing with no stop).

        A request that fails once the run is stopping (it is not retried: the endpoint may be silent)
        is part of the stop, not an error of its own.
        """
        if isinstance(exc, (OperationFailed, MigrationError)):
            return None
        own_stop = isinstance(exc, MigrationInterrupted) or (not isinstance(exc, Exception) and self._stop.is_set())
        if not own_stop and not isinstance(exc, DynormError):
            return None
        lost = ledger.lost.is_set() or not ledger.holds()  # a lease that ran out while a request hung
        if lost:
            return MigrationInterrupted(
                f"the migration lock on {ledger.name} could not be renewed before it expired; stopped at a "
                f"checkpoint so that no other run writes at the same time ({_cause(exc)})", report, lost_lease=True)
        if isinstance(exc, MigrationInterrupted):
            return exc
        if not self._stop.is_set():
            return None
        return MigrationInterrupted(f"a request in flight when the run stopped failed and was not retried: "
                                    f"{_cause(exc)}", report)

    @staticmethod
    def _give_back(ledger: Ledger, report: MigrateReport, quick: bool) -> None:
        """Release the lock (one short attempt when ``quick``); when it stays, note until when in the report."""
        error = ledger.release(quick=quick)
        if error is not None:
            report.lock_error = _cause(error)
            report.lock_expires_by = ledger.expires_by

    def _refuse_split_run_python(self, backwards: list[Migration], pending: list[Migration],
                                 options: MigrateOptions) -> None:
        """Under ``--worker i/N``: refuse a ``RunPython`` (or its reverse) not yet recorded done.

        Only scan segments are split between the worker processes; every other operation runs in
        each of them, and a function is not known to be idempotent (two workers started together
        both ran it). A GetItem per such operation (its ``op`` checkpoint) when the ledger exists.

        Raises:
            MigrationError: naming the migration, the operation and the command that runs it once.
        """
        ledger = self.ledger()
        exists = ledger.exists()
        for reverse, migrations in ((True, backwards), (False, pending)):
            label_of = (lambda name: f"{name}~reverse") if reverse else (lambda name: name)
            for m in migrations:
                for i, op in enumerate(m.operations):
                    step = op.inverse() if reverse else op
                    if not isinstance(step, RunPython):
                        continue
                    marker = ledger.checkpoint(label_of(m.name), i, "op") if exists else None
                    if marker is not None and marker["done"]:
                        continue
                    target = self._resolve(options.target)
                    how = (f"`dynorm migrate {target}` without --worker (it reverses {m.name})" if reverse
                           else f"`dynorm migrate {m.name}` without --worker first, then split the rest")
                    raise MigrationError(
                        f"migration {m.name} [{i}] {step.describe()}: --worker {options.worker[0]}/"
                        f"{options.worker[1]} splits only the scan segments of RekeyEntity/DeleteVersion; a "
                        f"RunPython would run once in each of the {options.worker[1]} worker processes. Run "
                        f"{how}. Nothing was changed.")

    def _replan(self, target: str | None, backwards: list[Migration], pending: list[Migration],
                report: MigrateReport, fake: bool = False) -> tuple[list[Migration], list[Migration]]:
        """Plan again from the ledger read under the lock; note in ``report.done_elsewhere`` what
        the plan read before the lock held but another run did meanwhile.

        Between that first read and the lock, another run may have applied (or reversed) the same
        migrations: running them again would repeat a ``RunPython`` and report work this run did
        not do. Two consistent Queries of the ledger partition.
        """
        applied = self.applied()
        new_backwards = self.backwards_plan(target, fake=fake)
        new_pending = [] if new_backwards else self.plan(target)
        now_back = {m.name for m in new_backwards}
        now_pending = {m.name for m in new_pending}
        for m in backwards:
            if m.name not in now_back and m.name not in applied:
                report.done_elsewhere.append({"migration": m.name, "done": "reversed", "at": None})
        for m in pending:
            if m.name not in now_pending and m.name in applied:
                report.done_elsewhere.append({"migration": m.name, "done": "applied",
                                              "at": applied[m.name].get("applied_at")})
        return new_backwards, new_pending

    @staticmethod
    def _totals(report: MigrateReport, name: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for op in report.operations:
            if op.migration == name:
                for k, v in op.counts.items():
                    out[k] = out.get(k, 0) + v
        return out

    def _run(self, m: Migration, options: MigrateOptions, report: MigrateReport, ledger: Ledger | None,
             reverse: bool = False) -> str:
        """Run one migration's operations (or their inverses); return ``done``, ``waiting`` or ``partial``.

        Raises:
            MigrationInterrupted: the stop event was set.
        """
        position = [x.name for x in self.migrations].index(m.name)
        state = build_state(self.migrations[: position + 1 if reverse else position])
        label = f"{m.name}~reverse" if reverse else m.name
        steps: list[tuple[int, Operation | None]] = list(enumerate(m.operations))
        if reverse:
            steps = [(i, op.inverse()) for i, op in reversed(list(enumerate(m.operations)))]
        outcome = "done"
        for i, step in steps:
            if step is None or step.state_only:
                continue
            if self._stop.is_set():
                raise MigrationInterrupted(f"stopped before {m.name} [{i}] {step.describe()}", report)
            if ledger is not None:
                marker = ledger.checkpoint(label, i, "op")
                if marker and marker["done"]:
                    continue
            rep = OpReport(label, i, step.describe())
            t0 = time.monotonic()
            status = self._apply(m, label, i, step, options, ledger, rep, state)
            rep.seconds = time.monotonic() - t0
            report.operations.append(rep)
            if status == "interrupted":
                raise MigrationInterrupted(f"stopped during {m.name} [{i}] {step.describe()}", report)
            if status == "partial":
                report.failed_items += rep.errors[: max(0, 10 - len(report.failed_items))]
            if ledger is not None and status == "done":
                ledger.save_checkpoint(label, i, "op", None, True, rep.counts)
            if status != "done" and outcome != "partial":
                outcome = status
        return outcome

    def _apply(self, m: Migration, label: str, i: int, op: Operation, options: MigrateOptions,
               ledger: Ledger | None, rep: OpReport, state: ProjectState) -> str:
        if isinstance(op, CreateTable):
            exists = _describe_table(_physical(op.table.name)) is not None
            rep.status = "exists" if exists else ("would create" if options.dry_run else "created")
            if _physical(op.table.name) in self._created:
                rep.status = "created"  # just now, to hold the ledger
            if not exists and not options.dry_run:
                self._create_table(self.final_state.tables.get(op.table.name, op.table))
            return "done"
        if isinstance(op, SyncIndexes):
            desc = _describe_table(_physical(op.table))
            present = {g["IndexName"] for g in (desc or {}).get("GlobalSecondaryIndexes", [])}
            missing = [g for g in op.names if g not in present]
            rep.status = f"{'would add' if options.dry_run else 'added'} {', '.join(missing) or 'nothing'}"
            if not options.dry_run:
                ddl = TableState(op.table, gsis=dict(op.gsis), multi_gsis=dict(op.multi_gsis)).options()
                for gname in missing:
                    backend.call("UpdateTable", gsi_update_params(_physical(op.table), ddl, gname))
                    wait_active(_physical(op.table))
            return "done"
        if isinstance(op, DropIndexes):
            desc = _describe_table(_physical(op.table))
            present = {g["IndexName"] for g in (desc or {}).get("GlobalSecondaryIndexes", [])}
            gone = [g for g in op.gsis if g in present]
            rep.status = f"{'would drop' if options.dry_run else 'dropped'} {', '.join(gone) or 'nothing'}"
            if not options.dry_run:
                for gname in gone:
                    backend.call("UpdateTable", {"TableName": _physical(op.table),
                                                 "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": gname}}]})
                    wait_active(_physical(op.table))
            return "done"
        if isinstance(op, RunPython):
            rep.status = "would run" if options.dry_run else "ran"
            if not options.dry_run:
                try:
                    op.fn(MigrationContext(state, m.name))
                except BaseException as exc:  # noqa: BLE001 - user code: any error is reported with its context
                    if self._from_signal(exc):
                        raise
                    rep.status = f"failed: {type(exc).__name__}"
                    raise self._failed(label, i, op, exc, ledger is not None) from exc
            return "done"
        if isinstance(op, (RekeyEntity, DeleteVersion)):
            return self._scan_op(label, i, op, options, ledger, rep, [x.name for x in self.migrations].index(m.name))
        raise MigrationError(f"migration {m.name}: unknown operation {op!r}.")  # pragma: no cover

    def _from_signal(self, exc: BaseException) -> bool:
        """Whether ``exc``, raised out of user code, is the way a signal stops the run (not the code's own doing).

        A stop that came (the CLI's SIGINT/SIGTERM handler sets it before it raises to end a waiting
        request; a lost lease) is; so is a ``KeyboardInterrupt`` while Python's default SIGINT handler
        is installed (Ctrl-C through the API). Anything else the code raised, ``sys.exit(0)`` included,
        is the operation failing: the run must not end silently with the migration not applied.
        """
        if isinstance(exc, Exception):
            return False  # an error, reported as OperationFailed even after a stop (as before)
        if self._stop.is_set():
            return True
        return isinstance(exc, KeyboardInterrupt) and signal.getsignal(signal.SIGINT) is signal.default_int_handler

    def _failed(self, label: str, i: int, op: Operation, exc: BaseException, recorded: bool) -> OperationFailed:
        """The :class:`OperationFailed` for ``op`` (operation ``i`` of ``label``) that raised ``exc``."""
        report = self._report
        name, reverse = label.removesuffix("~reverse"), label.endswith("~reverse")
        applied, undone = list(report.applied), list(report.unapplied)
        done_ops = [str(o.index) for o in report.operations if o.migration == label and o.index != i]
        if not recorded:
            ledger = "dry run: nothing was recorded"
        elif reverse:
            ledger = (f"{name} is no longer applied (partly reversed): operations [{', '.join(done_ops) or 'none'}] "
                      f"of its reversal are done; `dynorm migrate <earlier>` resumes the reversal at operation [{i}], "
                      f"`dynorm migrate` applies {name} again")
        else:
            ledger = (f"{name} is not applied; its operations [{', '.join(done_ops) or 'none'}] are recorded done "
                      f"and are skipped by the next run, which starts again at operation [{i}] "
                      f"(fix the function first)")
        tb = _user_traceback(exc)
        what = "reversing " if reverse else ""
        message = (f"{what}migration {name} failed at operation [{i}] {op.describe()}: {type(exc).__name__}: {exc}. "
                   f"Applied by this run before it: {', '.join(applied) or 'none'}"
                   + (f"; reversed: {', '.join(undone)}" if undone else "")
                   + f". Ledger: {ledger}.\n{tb}")
        return OperationFailed(message, migration=name, index=i, operation=op.describe(), applied=applied,
                               reversed=undone, ledger_state=ledger, user_traceback=tb, report=report)

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

    def copies_of(self, op: DeleteVersion, position: int, pacer: Pacer | None = None,
                  dry_run: bool = False) -> Rekeyer | None:
        """A copy-mode :class:`Rekeyer` from ``op``'s version to the entity's current one (after migration
        ``position``), to find (and, with ``copy_missing``, write) the current-version copies of the
        items ``op`` deletes; ``None`` when the entity is no longer declared (see :meth:`copies_chain`).
        """
        chain = self.copies_chain(op, position)
        if chain is None:
            return None
        table = self.final_state.tables[op.table]
        return Rekeyer(chain, table, _physical(op.table), "copy", Counts(), dry_run, pacer, True)

    def copies_chain(self, op: DeleteVersion, position: int) -> RekeyEntity | None:
        """The RekeyEntity from ``op``'s version to the entity's current one (after migration ``position``);
        ``None`` when the entity is no longer declared. Picklable (cloudpickle: its transform is a closure).

        The old layout and the transforms come from the RekeyEntity operations that led from ``op.version``
        to the current version (the current layout when there are none).
        """
        state = build_state(self.migrations[: position + 1])
        current = state.entities.get((op.table, op.entity_type))
        if current is None:
            return None
        old = None
        transforms: list[Callable[[dict[str, Any]], dict[str, Any]]] = []
        version = op.version
        for m in self.migrations[: position + 1]:
            for step in m.operations:
                if isinstance(step, RekeyEntity) and (step.table, step.entity_type, step.from_version) == (
                        op.table, op.entity_type, version):
                    old = old or step.old
                    if step.transform is not None:
                        transforms.append(step.transform)
                    version = step.to_version

        def part(e: Any) -> dict[str, Any]:
            return {"keys": e.keys, "fields": e.fields, "version_attribute": e.version_attribute}

        def transform(item: dict[str, Any]) -> dict[str, Any]:
            for fn in transforms:
                item = fn(item)
            return item

        return RekeyEntity(op.table, op.entity_type, op.version, current.key_version, old=part(old or current),
                           new=part(current), transform=transform if transforms else None)

    def _parallel(self, segments: list[int], fn: Callable[[int], None], threads: int) -> None:
        """Run ``fn(segment)`` on a thread pool; the first error stops the others (at a checkpoint) and is raised."""
        stop = self._stop
        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            futures = [pool.submit(fn, s) for s in segments]
            # wait in short slices so the main thread stays free to run signal handlers
            while True:
                finished, left = wait_futures(futures, timeout=0.2, return_when=FIRST_EXCEPTION)
                if not left or any(f.exception() is not None for f in finished):
                    break
            for future in futures:
                error = future.exception() if future.done() else None
                if error is not None:
                    asked = stop.is_set()  # by a signal or a lost lease, before this error
                    stop.set()  # end the other segments at their next checkpoint, then re-raise
                    wait_futures(futures)
                    if not asked:
                        stop.clear()  # that stop was only ours: the error is the run's own, not a stop
                    if not isinstance(error, Exception):
                        # signals reach the main thread only: this is user code (a transform) exiting, and
                        # re-raised as it is, a SystemExit(0) would end the command with exit 0, nothing said
                        raise MigrationError(
                            f"a scan segment's code raised {type(error).__name__}: {error} (user code: a RekeyEntity "
                            "transform calling sys.exit()?). The run stopped at a checkpoint and the migration is "
                            "not applied; fix the function and run `dynorm migrate` again.") from error
                    future.result()

    def _verify_copies(self, name: str, i: int, op: DeleteVersion, worker: VersionDeleter, ledger: Ledger | None,
                       total: int, threads: int, rep: OpReport) -> None:
        """Before a DeleteVersion deletes anything: every old item must have a current-version copy.

        One pass over the old version (Scan/Query with the operation's filter, 1 MB pages) and a
        consistent BatchGetItem of the copies' keys; with ``copy_missing`` the missing copies are
        written first (copy-mode transactions). Recorded in the ledger once passed.

        Raises:
            MigrationError: items without a copy (nothing was deleted); the message lists the first
                keys and the fix.
        """
        copies = worker.copies
        if copies is None or self._stop.is_set():
            return
        if ledger is not None:
            mark = ledger.checkpoint(name, i, "verified")
            if mark is not None and mark["done"]:
                return
        lock = threading.Lock()
        orphans: list[str] = []
        found = {"n": 0}

        def segment(seg: int) -> None:
            op_name, params = worker.read_params(seg, total, page_size=None)
            for items, _ in worker.pages(op_name, params, None):
                missing = worker.missing([raw for raw in items if worker.at_version(raw)])
                if missing and op.copy_missing:
                    result = copies.process([raw for raw, _ in missing])
                    missing = [(key, reason) for key, reason in result.failed]
                if self._stop.is_set():
                    return
                with lock:
                    found["n"] += len(missing)
                    orphans.extend(f"{worker._key_of(raw)}" for raw, _ in missing[: max(0, 10 - len(orphans))])

        self._parallel(list(range(total)), segment, threads)
        rep.counts["copied"] = copies.counts.rewritten
        if self._stop.is_set():
            return
        if found["n"]:
            to = copies.op.to_version
            raise MigrationError(
                f"{name}: {op.describe()} refused; nothing was deleted: {found['n']} item(s) at key version "
                f"{op.version} have no copy at the current key version {to}, or a copy of another revision (first: "
                f"{'; '.join(orphans)}). They "
                f"were written at {op.version} after the rekey passed them (an application still writing "
                f"{op.version}), or never copied, or their copy was deleted by an application on {to} "
                f"models WITHOUT Meta.read_versions listing {op.version} (such a delete leaves the old item). "
                f"Fix: stop every application instance that writes key version {op.version} (deploy the {to} "
                f"models, with Meta.read_versions listing {op.version} until this DeleteVersion has run), then add "
                "copy_missing=True to this DeleteVersion (it copies them to the current keys first: check first "
                "that none of them was deleted at the current version, or it comes back) and run "
                "`dynorm migrate` again.")
        if ledger is not None:
            ledger.save_checkpoint(name, i, "verified", None, True, {"copied": copies.counts.rewritten})

    def _catch_up(self, name: str, i: int, worker: Rekeyer | VersionDeleter, ledger: Ledger | None, total: int,
                  threads: int, rep: OpReport) -> tuple[str, list[str], str]:
        """After a move or a DeleteVersion: re-scan for items still at the old version and move (or
        delete) them, until none is left.

        Items an application still on the old key version created (or re-created) after the scan
        passed their position would otherwise stay there once the migration is recorded applied.
        A DeleteVersion's pass goes through the same :meth:`VersionDeleter.process` as its scan: an
        item with a current copy of its revision is deleted (conditional, counted in the ledger),
        one without is failed (recorded; the migration stays partial).
        Each pass reads the old version with the operation's filter in 1 MB pages (the whole
        table's RCU, few items returned), strongly consistent whatever ``--consistent-read`` says
        (an item an eventually consistent read missed would be stranded once the migration is
        recorded applied), and moves what it finds; up to :data:`CATCH_UP_PASSES`.

        Returns:
            ``(status, errors, status line)``: status ``"done"`` (a pass found none), ``"partial"`` (items
            failed, recorded in the ledger, or the last pass still found items: old-version writers are
            running) or ``"interrupted"``.
        """
        lock = threading.Lock()
        counting = ledger is not None and isinstance(worker, VersionDeleter)
        for n in range(1, CATCH_UP_PASSES + 1):
            before = worker.counts.rewritten
            failed: list[tuple[dict[str, Any], str]] = []

            def segment(seg: int, failed: list[tuple[dict[str, Any], str]] = failed) -> None:
                op_name, params = worker.read_params(seg, total, page_size=None)
                # "none left" is concluded from this read: it must see every write acknowledged before it
                params["ConsistentRead"] = True
                # a tally item per segment: parallel transactions updating one item would conflict
                counter = ledger.tally_action(name, i, f"catch-up-{seg}") if counting and ledger is not None \
                    else None
                for items, _ in worker.pages(op_name, params, None):
                    result = worker.process(items, tally=counter)
                    if result.failed:
                        if ledger is not None:
                            ledger.record_failures(name, i, result.failed)
                        with lock:
                            failed.extend(result.failed)
                    if not result.complete:
                        return

            self._parallel(list(range(total)), segment, threads)
            moved = worker.counts.rewritten - before
            rep.catch_up_passes, rep.caught_up = n, rep.caught_up + moved
            if self._stop.is_set():
                return "interrupted", [], ""
            if failed:
                worker.counts.failed = len(failed)
                return "partial", [f"{key}: {reason}" for key, reason in failed[:20]], \
                    f"partial: {len(failed)} item(s) failed"
            if moved == 0:
                return "done", [], ""
        if isinstance(worker, VersionDeleter):
            old_v = worker.op.version
            new_v = worker.copies.op.to_version if worker.copies is not None else "the current version"
            did = "deleted"
        else:
            old_v, new_v, did = worker.op.from_version, worker.op.to_version, "moved"
        errors = [f"items keep appearing at key version {old_v}: {CATCH_UP_PASSES} catch-up passes "
                  f"{did} {rep.caught_up} item(s), the last {moved}; an application still writes key version "
                  f"{old_v}. Deploy the {new_v} models everywhere (with Meta.read_versions "
                  f"= [{new_v!r}, {old_v!r}] during the rollout) or stop the "
                  f"{old_v} writers, then run `dynorm migrate` again"]
        return "partial", errors, f"partial: {worker.op.entity_type} items keep appearing at {old_v}"

    def _scan_op(self, name: str, i: int, op: RekeyEntity | DeleteVersion, options: MigrateOptions,
                 ledger: Ledger | None, rep: OpReport, position: int) -> str:
        table = self.final_state.tables[op.table]
        physical = _physical(op.table)
        counts = Counts()
        desc = _describe_table(physical)
        if desc is None:
            rep.status = "table missing: nothing to do"
            rep.counts = counts.as_dict()
            return "done"
        consistent = self.consistent_for(op, options)
        pacer = self._pacer
        chain = self.copies_chain(op, position) if isinstance(op, DeleteVersion) else None
        job = SegmentJob(name, i, op, table, physical, options, consistent, 1, ledger, chain)
        worker: Any = make_worker(job, counts, pacer)
        operation, _ = worker.read_params(0, 1)
        total = options.segments if operation == "Scan" else 1
        meta = ledger.checkpoint(name, i, "meta") if ledger is not None else None
        if meta is not None:
            total = int(meta["counts"].get("segments", total))  # resume with the same segmentation
        mine = [s for s in range(total) if s % options.worker[1] == options.worker[0]]
        if isinstance(op, DeleteVersion) and not options.dry_run:  # dry run: the pages count what lacks a copy
            # before anything is recorded: a refusal leaves the migration pending, not started
            self._verify_copies(name, i, op, worker, ledger, total, len(mine), rep)
        if ledger is not None and meta is None:
            ledger.save_checkpoint(name, i, "meta", None, False, {"segments": total})
        label = f"{name} {op.describe()}"
        table_items = int(desc.get("ItemCount", 0)) if operation == "Scan" else 0
        stop = self._stop

        def progress() -> dict[str, int]:
            return {**counts.as_dict(), "evaluated": counts.evaluated, "total": table_items}

        ticking = threading.Event()
        t0 = time.monotonic()
        ticker = None
        if self.reporter is not None:
            reporter = self.reporter

            def tick() -> None:
                while not ticking.wait(0.5):
                    reporter(label, progress(), time.monotonic() - t0, False)

            ticker = threading.Thread(target=tick, daemon=True)
            ticker.start()
        caught: tuple[str, list[str], str] = ("done", [], "")
        try:
            if not stop.is_set():
                job.total = total
                self._run_segments(job, worker, mine)
            remaining = self._retry_failures(name, i, worker, ledger, options, total, stop)
            if remaining == [] and not options.dry_run and (
                    isinstance(op, DeleteVersion) or (isinstance(op, RekeyEntity) and options.mode == "move")):
                caught = self._catch_up(name, i, worker, ledger, total, len(mine), rep)
        finally:
            ticking.set()
            if ticker is not None:
                ticker.join()
        if isinstance(op, DeleteVersion) and ledger is not None and not options.dry_run:
            # every delete transaction of every run (an interrupted one too) added its count to the ledger
            counts.rewritten = ledger.tally(name, i)
        rep.counts = {**counts.as_dict(), **({"copied": rep.counts["copied"]} if rep.counts.get("copied") else {})}
        rep.errors = list(counts.errors)
        if self.reporter is not None:
            self.reporter(label, progress(), time.monotonic() - t0, True)
        if stop.is_set():
            rep.status = "interrupted"
            return "interrupted"
        if options.dry_run:
            rep.status = "dry run"
            return "done"
        if remaining is None:
            rep.status = "waiting for other workers"
            return "waiting"
        if caught[0] == "partial":
            rep.counts, rep.errors, rep.status = counts.as_dict(), caught[1], caught[2]
            return "partial"
        if remaining:
            counts.failed = len(remaining)
            rep.counts = counts.as_dict()
            rep.errors = [f"{f['key']}: {f['reason']}" for f in remaining[:20]]
            rep.status = f"partial: {len(remaining)} item(s) failed"
            return "partial"
        counts.failed = 0
        rep.counts = {**counts.as_dict(), **({"copied": rep.counts["copied"]} if rep.counts.get("copied") else {})}
        rep.errors = []
        rep.status = "done"
        return "done"

    def _run_segments(self, job: SegmentJob, worker: Any, mine: list[int]) -> None:
        """Run the scan segments ``mine`` of one operation, one thread each (:func:`run_segment`).

        The seam another engine replaces (:mod:`dynorm.migrations.dask_executor` runs each segment
        as a Dask task). Returns when every segment finished or stopped; re-raises the first error
        after stopping the other segments at their next checkpoint.
        """
        self._parallel(mine, lambda seg: run_segment(worker, job.ledger, job.name, job.index, seg, job.total),
                       len(mine))

    def _retry_failures(self, name: str, i: int, worker: Any, ledger: Ledger | None, options: MigrateOptions,
                        total: int, stop: threading.Event) -> list[dict[str, Any]] | None:
        """Retry the failed items recorded for one operation once every segment is done.

        Returns:
            The failures still left, or ``None`` when some segment is not finished yet (another
            worker's, or this one's after a stop).
        """
        if stop.is_set():
            return None
        if ledger is None:  # dry run: nothing is recorded
            return [{"key": e, "reason": ""} for e in worker.counts.errors]
        counter = ledger.tally_action(name, i, "retry") if isinstance(worker, VersionDeleter) else None
        done = {c["segment"] for c in ledger.checkpoints(name, i) if c["done"]}
        if not all(str(s) in done for s in range(total)):
            return None
        left: list[dict[str, Any]] = []
        for failure in ledger.failures(name, i):
            if stop.is_set():
                return None
            if options.resolve and isinstance(worker, Rekeyer):
                status, reason = worker.resolve(failure["key"], options.resolve)
            else:
                status, reason = worker.retry(failure["key"], tally=counter)
            if status == "ok":
                ledger.clear_failure(failure["sk"])
            elif status == "stopped":
                return None
            else:
                left.append({**failure, "reason": reason})
        if left:
            ledger.record_failures(name, i, [(f["key"], f["reason"]) for f in left])
        return left
