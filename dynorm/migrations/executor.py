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

The executor never switches on an operation's type: it hands each operation an
:class:`~dynorm.migrations.context.OperationRun` and calls its ``database_forwards`` (or
``database_backwards``); the operations ask that context for the shared mechanisms (the segmented
scan of :mod:`dynorm.migrations.scan`, table creation, user code). A migration is recorded applied
in one place (:meth:`Executor._forwards`) and un-recorded in one (:meth:`Executor._backwards`).
"""

from __future__ import annotations

import signal
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from .. import backend, conf
from ..exceptions import DynormError, ServiceError
from ..keyversions import KeyVersionChange
from ..schema import create_params, create_table
from .context import OperationRun, Planning, physical
from .cost import OperationCost, Pacer
from .errors import MigrationError
from .ledger import Ledger
from .loader import Migration, build_state
from .operations import Operation, RekeyEntity
from .reports import MigrateOptions, MigrateReport, OpReport
from .scan import CATCH_UP_PASSES, Reporter, SegmentJob, consistent_for, make_worker, parallel, run_segment
from .state import ProjectState, TableState

if TYPE_CHECKING:  # pragma: no cover
    from ..tables import Table

__all__ = ["MigrateOptions", "MigrateReport", "OpReport", "Executor", "MigrationContext", "MigrationInterrupted",
           "UnknownMigrationsApplied", "OperationFailed", "check_ledger_without_migrations",
           "check_lock_ttl", "MIN_LOCK_TTL", "MAX_LOCK_TTL", "CATCH_UP_PASSES", "SegmentJob", "run_segment",
           "make_worker"]

#: bounds of ``--lock-ttl``: below 1 s the heartbeat (every third of it) would be a request every
#: 0.3 s; above an hour a dead run would keep the table locked for longer than anyone waits
#: (``--force-unlock`` aside).
MIN_LOCK_TTL = 1.0
MAX_LOCK_TTL = 3600.0


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
        ledger = Ledger(frozen, physical(frozen.name))
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
                name = op.created_table()
                if name is not None:
                    return self.final_state.tables[name]
        raise MigrationError("no migration creates a table; the first migration must (the ledger lives there).")

    def ledger(self) -> Ledger:
        """The :class:`Ledger` of this project."""
        table = self.ledger_table()
        return Ledger(table, physical(table.name))

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
        return consistent_for(op, options)

    def estimate(self, op: Operation, options: MigrateOptions) -> OperationCost | None:
        """Estimate the requests and capacity of an operation (:meth:`Operation.estimate`; DescribeTable).

        Returns:
            An :class:`~dynorm.migrations.cost.OperationCost` (upper bounds of requests, RCU and WCU:
            it assumes every item of the table is of the operation's entity type, and uses the table's
            total size rather than the average item size), or ``None`` for operations that do not scan
            or a table that does not exist yet.
        """
        position = next((n for n, m in enumerate(self.migrations) if any(o is op for o in m.operations)),
                        len(self.migrations) - 1)
        return op.estimate(Planning(self, options, position))

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
        self._check_options(options)
        self._stop = options.stop or threading.Event()
        self._pacer = Pacer(options.max_rcu, options.max_wcu, options.worker[1], self._stop)
        # the plan read before the lock: validates the target and reversibility early, runs a dry
        # run, and is what the caller saw; a real run plans again from the ledger read under the lock
        backwards = self.backwards_plan(options.target, fake=options.fake)
        pending = [] if backwards else self.plan(options.target)
        if options.confirmed is not None:  # what the operator saw: compared with the plan under the lock
            by_name = {m.name: m for m in self.migrations}
            backwards = [by_name[n] for n in options.confirmed[0] if n in by_name]
            pending = [by_name[n] for n in options.confirmed[1] if n in by_name]
        report.fake = options.fake
        if options.worker[1] > 1 and not options.dry_run and not options.fake:
            self._refuse_split_run_python(backwards, pending, options)
        try:
            if options.dry_run:
                if not options.fake:  # a fake run writes no item: nothing to measure
                    for m in backwards:
                        self._run(m, options, report, None, reverse=True)
                    for m in pending:
                        self._run(m, options, report, None)
                return report
            self._locked(options, report, backwards, pending)
        finally:
            report.seconds = time.monotonic() - started
            report.read_units = self._pacer.read_units
            report.write_units = self._pacer.write_units
        return report

    @staticmethod
    def _check_options(options: MigrateOptions) -> None:
        """Refuse options out of range before any request.

        Raises:
            MigrationError: naming the option and what it accepts.
        """
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

    def _locked(self, options: MigrateOptions, report: MigrateReport, backwards: list[Migration],
                pending: list[Migration]) -> None:
        """Take the lock (creating the ledger's table first if needed), plan again, run, release the lock.

        Raises:
            MigrationInterrupted: a stop, or a lock that could not be renewed (``lost_lease``).
        """
        ledger = self.ledger()
        if not ledger.exists():
            self._create_table(self.ledger_table())
        worker = "all" if options.worker[1] == 1 else f"w{options.worker[0]}of{options.worker[1]}"
        ledger.on_lost = self._stop.set  # a lock that cannot be renewed stops every segment
        ledger.acquire(worker, ttl=options.lock_ttl)
        self._pacer.lease = ledger.holds  # no write once the lock may have expired (a hung renewal)
        # once stopped (a signal, a lost lease), no request is retried: a silent endpoint must not
        # hold the stop for max_attempts x read_timeout per request; nor once the lease is (nearly) out,
        # before the heartbeat gives up: a retried write must not land after another run took the lock
        with backend.no_retries_after(self._stop, also=lambda: not ledger.holds()):
            try:
                backwards, pending = self._replan(options.target, backwards, pending, report, options.fake)
                self._refuse_unconfirmed(options, backwards, pending)
                if self._backwards(ledger, backwards, options, report):
                    self._forwards(ledger, pending, options, report)
            except BaseException as exc:
                interrupted = self._interruption(exc, ledger, report)
                self._give_back(ledger, report, quick=interrupted is not None)
                if interrupted is None or interrupted is exc:
                    raise
                raise interrupted from exc
            else:
                self._give_back(ledger, report, quick=False)

    @staticmethod
    def _refuse_unconfirmed(options: MigrateOptions, backwards: list[Migration], pending: list[Migration]) -> None:
        """Refuse a plan under the lock that holds a migration the operator was not shown
        (``options.confirmed``): another run changed the ledger between the prompt and the lock.

        Raises:
            MigrationError: naming what would also run; nothing was done (the lock is released).
        """
        if options.confirmed is None:
            return
        extra = [f"reverse {m.name}" for m in backwards if m.name not in options.confirmed[0]]
        extra += [f"apply {m.name}" for m in pending if m.name not in options.confirmed[1]]
        if extra:
            raise MigrationError(
                f"the plan changed after it was shown: another run changed the ledger meanwhile, and this run "
                f"would now also {', '.join(extra)}, which was not confirmed. Nothing was done; run the command "
                "again to see the plan as it is now.")

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

    def _backwards(self, ledger: Ledger, backwards: list[Migration], options: MigrateOptions,
                   report: MigrateReport) -> bool:
        """Reverse ``backwards`` newest first (with ``fake``, only un-record them); False when one stopped short."""
        for m in backwards:
            if not options.fake:  # Django's --fake: only the record changes; the items stay as they are
                # from here on the migration is no longer applied: its forward records are void
                # (a forward run starts it again) and an interruption leaves it partial
                ledger.unrecord_applied(m.name, self.key_changes(m, options.mode))
                ledger.clear(m.name)
                status = self._run(m, options, report, ledger, reverse=True)
                if status == "partial":
                    report.partial[m.name] = self._totals(report, f"{m.name}~reverse").get("failed", 0)
                if status != "done":
                    return False
            # a finished reversal (not a fake one) makes the newer version the retired one
            ledger.forget(m.name, self.key_changes(m, options.mode), reversed_done=not options.fake)
            report.unapplied.append(m.name)
        return True

    def _forwards(self, ledger: Ledger, pending: list[Migration], options: MigrateOptions,
                  report: MigrateReport) -> None:
        """Apply ``pending`` in order (with ``fake``, only record them); stop at one left waiting or partial."""
        for m in pending:
            if not options.fake:
                ledger.clear(f"{m.name}~reverse")  # a partial reversal is void once it moves forward
                status = self._run(m, options, report, ledger)
                if status == "waiting":
                    break  # other workers still own segments of this migration
                if status == "partial":
                    report.partial[m.name] = self._totals(report, m.name).get("failed", 0)
                    break  # later migrations may rely on this one: stop here
            counts = {} if options.fake else self._totals(report, m.name)
            ledger.record_applied(m.name, counts, fake=options.fake, key_changes=self.key_changes(m, options.mode))
            report.applied.append(m.name)

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
                    if step is None or step.worker_safe:
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

    def key_changes(self, m: Migration, mode: str) -> list[KeyVersionChange]:
        """What recording ``m`` does to the key-version records (:mod:`dynorm.keyversions`); no I/O.

        Args:
            m: one of this executor's migrations; mode: the run's ``--mode`` (``"move"``/``"copy"``).

        Returns:
            one :class:`~dynorm.keyversions.KeyVersionChange` per entity type its operations rekey or
            delete a version of, in operation order (physical table names, ``before``: the migration
            before ``m``, for messages).
        """
        names = [x.name for x in self.migrations]
        position = names.index(m.name)
        before = names[position - 1] if position else None
        out = []
        for op in m.operations:
            for table, entity_type, old, new, retires in op.key_versions(mode):
                frozen = self.final_state.tables[table]
                out.append(KeyVersionChange(physical(table), frozen.pk_attribute, frozen.sk_attribute, entity_type,
                                            old, new, retires, before))
        return out

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
        """Run one migration's operations (``database_forwards``, or backwards their ``database_backwards``
        newest first); return ``done``, ``waiting`` or ``partial``.

        Raises:
            MigrationInterrupted: the stop event was set.
        """
        position = [x.name for x in self.migrations].index(m.name)
        state = build_state(self.migrations[: position + 1 if reverse else position])
        label = f"{m.name}~reverse" if reverse else m.name
        steps = [(i, op, op.inverse() if reverse else op) for i, op in enumerate(m.operations)]
        outcome = "done"
        for i, op, step in reversed(steps) if reverse else steps:
            if step is None or step.state_only:
                continue
            if self._stop.is_set():
                raise MigrationInterrupted(f"stopped before {m.name} [{i}] {step.describe()}", report)
            if ledger is not None:
                marker = ledger.checkpoint(label, i, "op")
                if marker and marker["done"]:
                    continue
            rep = OpReport(label, i, step.describe())
            ctx = OperationRun(self, position, m.name, label, i, options, ledger, state, rep, self._stop)
            t0 = time.monotonic()
            status = op.database_backwards(ctx) if reverse else op.database_forwards(ctx)
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

    def _run_python(self, ctx: OperationRun, op: Operation, fn: Callable[[Any], Any]) -> None:
        """Call a RunPython function with a :class:`MigrationContext` (the state before the migration).

        Raises:
            OperationFailed: the function raised (anything but a signal's stop), naming ``op``.
        """
        try:
            fn(MigrationContext(ctx.state, ctx.migration))
        except BaseException as exc:  # noqa: BLE001 - user code: any error is reported with its context
            if self._from_signal(exc):
                raise
            ctx.report.status = f"failed: {type(exc).__name__}"
            raise self._failed(ctx.label, ctx.index, op, exc, ctx.ledger is not None) from exc

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
        name = physical(table.name)
        # one created meanwhile by another run is waited for and its TTL turned on, not this run's
        if create_table(create_params(table.options(), name, table.attribute_types),
                        ttl_attribute=table.ttl_attribute, exist_ok=True):
            self._created.add(name)

    def copies_chain(self, op: Any, position: int) -> RekeyEntity | None:
        """The RekeyEntity from ``op``'s version to the entity's current one (after migration ``position``);
        ``None`` when the entity is no longer declared. Picklable (cloudpickle: its transform is a closure).

        The old layout and the transforms come from the operations that led from ``op.version`` to the
        current version (:meth:`Operation.key_change`; the current layout when there are none).

        Args:
            op: a DeleteVersion (``table``, ``entity_type``, ``version``); position: a migration's index.
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
                change = step.key_change(op.table, op.entity_type, version)
                if change is not None:
                    old = old or change.old
                    if change.transform is not None:
                        transforms.append(change.transform)
                    version = change.to_version

        def part(e: Any) -> dict[str, Any]:
            return {"keys": e.keys, "fields": e.fields, "version_attribute": e.version_attribute}

        def transform(item: dict[str, Any]) -> dict[str, Any]:
            for fn in transforms:
                item = fn(item)
            return item

        return RekeyEntity(op.table, op.entity_type, op.version, current.key_version, old=part(old or current),
                           new=part(current), transform=transform if transforms else None)

    def _run_segments(self, job: SegmentJob, worker: Any, mine: list[int]) -> None:
        """Run the scan segments ``mine`` of one operation, one thread each (:func:`run_segment`).

        The seam another engine replaces (:mod:`dynorm.migrations.dask_executor` runs each segment
        as a Dask task). Returns when every segment finished or stopped; re-raises the first error
        after stopping the other segments at their next checkpoint.
        """
        parallel(mine, lambda seg: run_segment(worker, job.ledger, job.name, job.index, seg, job.total),
                 len(mine), self._stop)
