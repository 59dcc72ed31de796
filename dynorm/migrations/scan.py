"""The segmented scan every scan operation runs on (RekeyEntity, DeleteVersion): one mechanism.

An operation's ``database_forwards`` asks its context to scan (:meth:`ScanRun.run`): the scan
segments run from their ledger checkpoints (threads, or Dask tasks through the executor's
``_run_segments`` seam), failed items recorded in the ledger are retried once every segment is
done, and catch-up passes look for items written at the old version meanwhile. What differs
between operations is theirs: the worker that rewrites a page (``op.make_worker``), a check
before anything is written (DeleteVersion's copies), whether it catches up.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .cost import Pacer
from .errors import MigrationError
from .ledger import Ledger
from .operations.base import Operation
from .rekey import Counts, Rekeyer, VersionDeleter
from .reports import MigrateOptions
from .state import TableState

if TYPE_CHECKING:  # pragma: no cover
    from .operations.base import RunContext

__all__ = ["SegmentJob", "make_worker", "run_segment", "parallel", "consistent_for", "ScanRun", "CATCH_UP_PASSES"]

Reporter = Callable[[str, dict[str, int], float, bool], None]

#: catch-up passes after a move before it is recorded applied: each re-scans for old-version items
#: (written meanwhile by an application still on the old key version) and moves them; when the last
#: one still finds some, the migration stays partial (old-version writers are still running).
CATCH_UP_PASSES = 3


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
    op: Operation
    table: TableState
    physical: str
    options: MigrateOptions
    consistent: bool
    total: int
    ledger: Ledger | None
    copies: Operation | None = None


def make_worker(job: SegmentJob, counts: Counts, pacer: Pacer) -> Rekeyer | VersionDeleter:
    """The worker that rewrites (or deletes) the items of ``job``: the one builder of every engine.

    The operation builds it (:meth:`~dynorm.migrations.operations.Operation.make_worker`): a
    DeleteVersion's :class:`~dynorm.migrations.rekey.VersionDeleter` gets its copy-mode
    :class:`~dynorm.migrations.rekey.Rekeyer` from ``job.copies`` (with its own counters and this
    ``pacer``), so it deletes only items at the deleted version that have a current copy, on
    whichever engine (thread or Dask task) it runs.

    Args:
        job: the operation; counts: the counters to add to; pacer: the rate limits to take from.
    """
    worker: Rekeyer | VersionDeleter = job.op.make_worker(job, counts, pacer)
    return worker


def consistent_for(op: Operation, options: MigrateOptions) -> bool:
    """Whether ``op``'s scan reads consistently under ``options`` (see :class:`MigrateOptions`)."""
    if options.consistent_read is not None:
        return options.consistent_read
    return op.reads_consistently(options)


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
        worker.always_tally or tally) else None
    for items, lek in worker.pages(op_name, params, start):
        result = worker.process(items, tally=counter) if counter is not None else worker.process(items)
        if ledger is not None and result.failed:
            ledger.record_failures(name, i, result.failed)  # before the checkpoint moves past them
        if not result.complete:
            return  # stopped mid-page: the next run re-reads this page
        if ledger is not None:
            ledger.save_checkpoint(name, i, seg, lek, lek is None, worker.counts.as_dict())


def parallel(segments: list[int], fn: Callable[[int], None], threads: int, stop: threading.Event) -> None:
    """Run ``fn(segment)`` on a thread pool; the first error sets ``stop`` (the others end at a checkpoint) and
    is raised.

    Raises:
        MigrationError: a segment's user code (a transform) raised a ``BaseException`` that is not an error.
    """
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


class ScanRun:
    """One scan operation run by one process: its segments, failed-item retries, catch-up passes and report.

    Args:
        ctx: the operation's run context (label, index, options, ledger, report, stop).
        op: the operation; copies: a DeleteVersion's copy-mode chain (``None`` otherwise).
        run_segments: the engine, ``run_segments(job, worker, segments)`` (threads or Dask tasks).
        pacer: the run's rate limits; reporter: progress callback (``None``: none).
    """

    def __init__(self, ctx: RunContext, op: Operation, copies: Operation | None,
                 run_segments: Callable[[SegmentJob, Any, list[int]], None], pacer: Pacer,
                 reporter: Reporter | None) -> None:
        self.ctx, self.op, self.copies = ctx, op, copies
        self.run_segments, self.pacer, self.reporter = run_segments, pacer, reporter
        self._label, self._t0 = "", time.monotonic()
        self._figures: Callable[[], dict[str, int]] = dict

    def run(self, catch_up: bool, before: Callable[[Any, int, int], None] | None) -> str:
        """Scan, retry, catch up; fill ``ctx.report``; return ``done``, ``waiting``, ``partial`` or ``interrupted``.

        Args:
            catch_up: run the catch-up passes once nothing failed (not in a dry run).
            before: ``before(worker, segments, threads)`` runs before anything is recorded (not in a dry run).
        """
        ctx, op, options, ledger = self.ctx, self.op, self.ctx.options, self.ctx.ledger
        table_name = op.tables()[0]
        counts = Counts()
        desc = ctx.describe_table(table_name)
        if desc is None:
            ctx.report.status = "table missing: nothing to do"
            ctx.report.counts = counts.as_dict()
            return "done"
        job = SegmentJob(ctx.label, ctx.index, op, ctx.final_state.tables[table_name], ctx.physical(table_name),
                         options, consistent_for(op, options), 1, ledger, self.copies)
        worker: Any = make_worker(job, counts, self.pacer)
        operation, _ = worker.read_params(0, 1)
        total = options.segments if operation == "Scan" else 1
        meta = ledger.checkpoint(ctx.label, ctx.index, "meta") if ledger is not None else None
        if meta is not None:
            total = int(meta["counts"].get("segments", total))  # resume with the same segmentation
        mine = [s for s in range(total) if s % options.worker[1] == options.worker[0]]
        if before is not None and not options.dry_run:  # dry run: the pages count what lacks a copy
            before(worker, total, len(mine))  # before anything is recorded: a refusal leaves it pending
        if ledger is not None and meta is None:
            ledger.save_checkpoint(ctx.label, ctx.index, "meta", None, False, {"segments": total})
        items = int(desc.get("ItemCount", 0)) if operation == "Scan" else 0
        caught: tuple[str, list[str], str] = ("done", [], "")
        with self._progress(f"{ctx.label} {op.describe()}", counts, items):
            if not ctx.stop.is_set():
                job.total = total
                self.run_segments(job, worker, mine)
            remaining = self.retry_failures(worker, total)
            if remaining == [] and not options.dry_run and catch_up:
                caught = self.catch_up(worker, total, len(mine))
        if worker.always_tally and ledger is not None and not options.dry_run:
            # every delete transaction of every run (an interrupted one too) added its count to the ledger
            counts.rewritten = ledger.tally(ctx.label, ctx.index)
        return self._outcome(counts, remaining, caught)

    @staticmethod
    def _with_copied(counts: Counts, report: Any) -> dict[str, int]:
        return {**counts.as_dict(), **({"copied": report.counts["copied"]} if report.counts.get("copied") else {})}

    def _outcome(self, counts: Counts, remaining: list[dict[str, Any]] | None,
                 caught: tuple[str, list[str], str]) -> str:
        """Fill the report from the counters, the failures left and the catch-up's result; return the status."""
        ctx, rep = self.ctx, self.ctx.report
        rep.counts = self._with_copied(counts, rep)
        rep.errors = list(counts.errors)
        if self.reporter is not None:
            self.reporter(self._label, self._figures(), time.monotonic() - self._t0, True)
        if ctx.stop.is_set():
            rep.status = "interrupted"
            return "interrupted"
        if ctx.options.dry_run:
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
        rep.counts = self._with_copied(counts, rep)
        rep.errors = []
        rep.status = "done"
        return "done"

    def _progress(self, label: str, counts: Counts, table_items: int) -> Any:
        """A context manager reporting ``counts`` every 0.5 s to the reporter while the scan runs."""
        from contextlib import contextmanager

        self._label, self._t0 = label, time.monotonic()
        self._figures = lambda: {**counts.as_dict(), "evaluated": counts.evaluated, "total": table_items}

        @contextmanager
        def ticking() -> Iterator[None]:
            done = threading.Event()
            ticker = None
            if self.reporter is not None:
                reporter = self.reporter

                def tick() -> None:
                    while not done.wait(0.5):
                        reporter(label, self._figures(), time.monotonic() - self._t0, False)

                ticker = threading.Thread(target=tick, daemon=True)
                ticker.start()
            try:
                yield
            finally:
                done.set()
                if ticker is not None:
                    ticker.join()

        return ticking()

    def catch_up(self, worker: Rekeyer | VersionDeleter, total: int, threads: int) -> tuple[str, list[str], str]:
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
        name, i, ledger, rep = self.ctx.label, self.ctx.index, self.ctx.ledger, self.ctx.report
        lock = threading.Lock()
        counting = ledger is not None and worker.always_tally
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

            self.ctx.parallel(list(range(total)), segment, threads)
            moved = worker.counts.rewritten - before
            rep.catch_up_passes, rep.caught_up = n, rep.caught_up + moved
            if self.ctx.stop.is_set():
                return "interrupted", [], ""
            if failed:
                worker.counts.failed = len(failed)
                return "partial", [f"{key}: {reason}" for key, reason in failed[:20]], \
                    f"partial: {len(failed)} item(s) failed"
            if moved == 0:
                return "done", [], ""
        old_v, new_v, did = self.op.stranded(self.copies)
        errors = [f"items keep appearing at key version {old_v}: {CATCH_UP_PASSES} catch-up passes "
                  f"{did} {rep.caught_up} item(s), the last {moved}; an application still writes key version "
                  f"{old_v}. Deploy the {new_v} models everywhere (with Meta.read_versions "
                  f"= [{new_v!r}, {old_v!r}] during the rollout) or stop the "
                  f"{old_v} writers, then run `dynorm migrate` again"]
        return "partial", errors, f"partial: {worker.op.entity_type} items keep appearing at {old_v}"

    def retry_failures(self, worker: Any, total: int) -> list[dict[str, Any]] | None:
        """Retry the failed items recorded for one operation once every segment is done.

        Returns:
            The failures still left, or ``None`` when some segment is not finished yet (another
            worker's, or this one's after a stop).
        """
        ctx = self.ctx
        name, i, ledger, options, stop = ctx.label, ctx.index, ctx.ledger, ctx.options, ctx.stop
        if stop.is_set():
            return None
        if ledger is None:  # dry run: nothing is recorded
            return [{"key": e, "reason": ""} for e in worker.counts.errors]
        counter = ledger.tally_action(name, i, "retry") if worker.always_tally else None
        done = {c["segment"] for c in ledger.checkpoints(name, i) if c["done"]}
        if not all(str(s) in done for s in range(total)):
            return None
        left: list[dict[str, Any]] = []
        for failure in ledger.failures(name, i):
            if stop.is_set():
                return None
            if options.resolve and worker.can_resolve:
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
