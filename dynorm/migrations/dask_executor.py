"""``dynorm migrate --executor dask``: each Scan segment of a RekeyEntity/DeleteVersion is a Dask task.

Only the engine changes. Planning, the lock, the ledger, the failed-item retry and the "applied"
record stay on the driver, in :class:`~dynorm.migrations.executor.Executor`. This class replaces its
:meth:`~dynorm.migrations.executor.Executor._run_segments` seam, so a task runs one segment through
the same :func:`~dynorm.migrations.executor.run_segment` the threads use, and resumes from that
segment's ledger checkpoint.

* **Worker death.** The scheduler runs the tasks of a dead worker again on another worker. The
  segment resumes from its last checkpoint. Items already moved from the page in flight are gone
  from the old version, and a move is one TransactWriteItems whose Delete is conditional on the
  old item's revision token, so the move happens at most once: nothing is lost and nothing is
  duplicated. ``tests/reliability/test_migrate_dask.py`` SIGKILLs a worker mid-run and checks this.
* **Rate limit.** In a paced run (``--max-wcu`` / ``--max-rcu``) the driver keeps at most K
  tasks running, each with its own :class:`~dynorm.migrations.cost.Pacer` at ``budget / K``. K is
  fixed by the driver when the operation starts (the workers registered then, at least one), so
  workers that register later cannot push the run over the budget. docs/migrations.md compares
  this with a bucket shared through the scheduler.
* **Progress.** Every task sends its counters to the driver every 0.5 s (``Worker.log_event``).
  The driver adds up the latest figures of each attempt. The number of items moved is then taken
  from the ledger: each move transaction adds its item count to its segment's tally
  (:meth:`~dynorm.migrations.ledger.Ledger.tally_action`), so an attempt killed right after a
  transaction is counted exactly once.
* **Isolation.** A task's connection settings apply to its own threads
  (:func:`dynorm.conf.overridden`), and it stops before each write once the driver's lock is
  within TTL/6 of expiring (the threads engine's margin).
* **Stop (Ctrl-C / SIGTERM / lost lock).** The driver cancels the queued tasks and sets a stop
  flag in every worker process (``Client.run``). The running segments end at their next
  checkpoint, and :class:`~dynorm.migrations.executor.MigrationInterrupted` is raised as usual. The
  migration stays resumable, with either engine.

Needs the ``dask`` extra (``pip install 'dynorm[dask]'``). ``import dynorm`` does not import it.
"""

from __future__ import annotations

import contextvars
import dataclasses
import sys
import threading
import time
import uuid
from contextlib import ExitStack
from typing import Any

from .. import conf
from ..exceptions import ConfigurationError, DynormError
from .cost import Pacer
from .executor import Executor, MigrateOptions, MigrateReport, Reporter, SegmentJob, make_worker, run_segment
from .ledger import Ledger
from .loader import Migration
from .operations import MigrationError
from .rekey import Counts

__all__ = ["DaskExecutor", "TOPIC"]

#: the log-event topic tasks report their counters on (``<TOPIC>-<run id>``)
TOPIC = "dynorm-migrate-progress"
_FIELDS = ("scanned", "evaluated", "rewritten", "skipped", "conflicts", "failed")
_CONNECTION = ("region", "endpoint", "table_prefix", "max_attempts", "connect_timeout", "read_timeout")


def _require_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - the extra is installed in the test environment
        raise ConfigurationError("--executor dask needs Dask distributed: pip install 'dynorm[dask]'.") from exc
    return distributed


# -- on the workers ------------------------------------------------------------------------
class _LeaseStop(threading.Event):
    """A run's stop flag in one worker process: set by the driver, or reached by the lock's lease.

    ``is_set()`` is also True once the time passes :attr:`deadline` (the driver's lock expiry as
    last read, minus TTL/6), so a write waiting on the budget or about to be sent stops there:
    the same margin the threads engine's heartbeat keeps (:attr:`Ledger.lost`). A dead driver's
    task therefore stops before another run can take the expired lock.
    """

    def __init__(self) -> None:
        super().__init__()
        self.deadline = float("inf")  # no lock to watch (a dry run): only the driver stops it

    def extend(self, deadline: float) -> None:
        """Move the deadline to ``deadline`` (epoch seconds) if that is later."""
        if self.deadline == float("inf") or deadline > self.deadline:
            self.deadline = deadline

    def expired(self) -> bool:
        """True when the lease deadline has passed."""
        return time.time() >= self.deadline

    def is_set(self) -> bool:
        return super().is_set() or self.expired()

    def wait(self, timeout: float | None = None) -> bool:
        left = self.deadline - time.time()
        if timeout is None or left < timeout:
            if left <= 0:
                return True
            if super().wait(left):
                return True
            return self.is_set()
        return super().wait(timeout) or self.expired()


# One entry per migrate run in each worker process: the stop flag the driver sets with Client.run.
_RUNS: dict[str, _LeaseStop] = {}
_RUNS_LOCK = threading.Lock()


def _run_state(run: str) -> _LeaseStop:
    with _RUNS_LOCK:
        if run not in _RUNS:
            _RUNS[run] = _LeaseStop()
        return _RUNS[run]


def _stop_run(run: str) -> None:
    """Set the stop flag of ``run`` in this process (sent to every worker by ``Client.run``)."""
    _run_state(run).set()  # tasks that start later in this process see the flag already set


def _forget_run(run: str) -> None:
    """Drop this process's state of ``run``."""
    with _RUNS_LOCK:
        _RUNS.pop(run, None)


def _lock_expiry(ledger: Ledger, owner: str) -> float | None:
    """When the driver's lock expires (epoch seconds; 0 when not held by ``owner``); ``None`` on a read error.

    DynamoDB: one Query of the lock items.
    """
    try:
        items = ledger._query_prefix("lock#")
    except DynormError:
        return None  # throttled or a network blip: the next check decides
    return max((float(i.get("expires_at", {}).get("N", "0")) for i in items if i.get("owner", {}).get("S") == owner),
               default=0.0)


def _segment_task(run: str, attempt_prefix: str, setup: dict[str, Any], seg: int) -> dict[str, Any]:
    """Run one scan segment on a Dask worker; return its counters and first errors.

    ``setup`` carries what the driver planned: connection settings, ``sys.path`` entries the
    operation's module needs, and the operation with its table and ledger (see :class:`DaskExecutor`).
    The connection settings apply to this task's threads only (:func:`dynorm.conf.overridden`):
    tasks of two runs in one worker process each talk to their own database.
    """
    for path in reversed(setup["sys_path"]):
        if path not in sys.path:
            sys.path.insert(0, path)
    with conf.overridden(**setup["settings"]):
        return contextvars.copy_context().run(_segment_body, run, attempt_prefix, setup, seg)


def _segment_body(run: str, attempt_prefix: str, setup: dict[str, Any], seg: int) -> dict[str, Any]:
    import cloudpickle
    import distributed

    job = cloudpickle.loads(setup["job"])
    stop = _run_state(run)
    # this task's share of the budget: the driver runs at most `slots` tasks at once
    # no burst: the tasks of a run start one after another, and each new bucket's one second of
    # burst would add to the budget (12 short segments moved 3,636 WCU in 1.3 s at --max-wcu 1200)
    pacer = Pacer(setup["max_rcu"], setup["max_wcu"], setup["slots"], stop, burst=False)
    counts = Counts()
    # the same builder as the threads engine: a DeleteVersion checks every item's current copy here too
    worker: Any = make_worker(job["job"], counts, pacer)
    ledger = Ledger(job["ledger_table"], job["ledger_name"]) if job["ledger_name"] else None
    owner = setup.get("lock_owner")
    ttl = float(setup.get("lock_ttl", 60.0))
    watch = ledger is not None and bool(owner)

    def check() -> bool:
        """Read the lock; move the lease deadline (expiry - ttl/6). False on a read error."""
        assert ledger is not None and owner
        expiry = _lock_expiry(ledger, owner)
        if expiry is None:
            return False
        stop.extend(expiry - ttl / 6)
        if expiry <= time.time():
            stop.set()  # the driver is gone (or lost its lock): another run may hold the table now
        return True

    if watch:
        stop.extend(0.0)  # nothing is written before the lock was seen held
        for _ in range(5):
            if check():
                break
            time.sleep(0.5)
    attempt = f"{attempt_prefix}:{seg}:{uuid.uuid4().hex[:8]}"
    try:
        reporter: Any = distributed.get_worker()
    except ValueError:  # run outside a worker (a unit test calling the function): no progress events
        reporter = None

    def snapshot() -> dict[str, Any]:
        return {"attempt": attempt, **{k: getattr(counts, k) for k in _FIELDS}}

    done = threading.Event()

    def tick() -> None:
        checked = time.monotonic()
        every = max(1.0, ttl / 6)
        while not done.wait(0.5):
            if reporter is not None:
                reporter.log_event(setup["topic"], snapshot())
            # every ttl/6, and every 0.5 s once the lease deadline is near (a failed read is retried)
            if watch and (time.monotonic() - checked >= every or stop.deadline - time.time() < every):
                checked = time.monotonic()
                check()

    ticker = threading.Thread(target=contextvars.copy_context().run, args=(tick,), daemon=True)
    ticker.start()
    try:
        run_segment(worker, ledger, job["name"], job["index"], seg, job["total"], tally=True)
    finally:
        done.set()
        ticker.join()
    return {**snapshot(), "errors": list(counts.errors), "stopped": stop.is_set(),
            "read_units": pacer.read_units, "write_units": pacer.write_units}


# -- on the driver -------------------------------------------------------------------------
def task_setup(job: SegmentJob, slots: int, topic: str) -> dict[str, Any]:
    """What every segment task of ``job`` receives: connection settings, ``sys.path``, the pickled job.

    Args:
        job: the scan operation; slots: how many tasks share the rate limit at once (the driver
            never runs more; times ``--worker`` N); topic: the progress topic.
    """
    import cloudpickle

    settings = conf.get_settings()
    ledger = job.ledger
    return {
        "topic": topic,
        "settings": {k: getattr(settings, k) for k in _CONNECTION},
        "sys_path": [p for p in sys.path if p],
        "max_rcu": job.options.max_rcu, "max_wcu": job.options.max_wcu, "slots": slots,
        # a task stops when this lock is no longer held: a driver that died cannot leave writers behind
        "lock_owner": ledger.owner if ledger is not None and ledger._lock_sk else None,
        "lock_ttl": job.options.lock_ttl,
        # pickled here and loaded by the task after sys.path is set: a transform's module must import
        # the SegmentJob without its ledger and stop event (a lock and a thread: not picklable); the task
        # builds its worker from it with make_worker, as the threads engine does
        "job": cloudpickle.dumps({"name": job.name, "index": job.index, "op": job.op, "total": job.total,
                                  "job": dataclasses.replace(job, ledger=None, options=dataclasses.replace(
                                      job.options, stop=None)),
                                  "ledger_table": ledger.table if ledger else None,
                                  "ledger_name": ledger.name if ledger else None}),
    }


def scheduler_address(address: str) -> str:
    """Check a ``--scheduler`` address and return it as Dask takes it (``tcp://host:port``).

    Accepts ``tcp://host:port``, ``tls://host:port`` and ``host:port`` (TCP); a host is a name, an
    IPv4 address or a bracketed IPv6 address; the port is 1-65535.

    Raises:
        ConfigurationError: anything else, naming the address (no connection is attempted).
    """
    import re

    text = (address or "").strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    match = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})", rest)
    port = int(match.group(2)) if match else 0
    if scheme not in ("tcp", "tls") or match is None or not 1 <= port <= 65535:
        raise ConfigurationError(
            f"--scheduler {address!r} is not a Dask scheduler address: expected tcp://HOST:PORT or "
            "tls://HOST:PORT (e.g. tcp://10.0.0.5:8786); nothing was written.")
    return f"{scheme}://{rest}"


class DaskExecutor(Executor):
    """An :class:`~dynorm.migrations.executor.Executor` that runs each scan segment as a Dask task.

    Args:
        migrations, reporter: as for :class:`~dynorm.migrations.executor.Executor`.
        scheduler: address of a running Dask scheduler (``tcp://10.0.0.5:8786``). ``None`` (default)
            starts a local cluster of ``n_workers`` worker processes on 127.0.0.1 for the run and
            closes it afterwards.
        n_workers: worker processes of the local cluster (one thread each).
        client: an open ``distributed.Client`` to use instead (left open). Tests pass one to reach
            the workers.
        segments_per_worker: when given, ``options.segments`` becomes this many times the cluster's
            worker processes (segments >> workers, so a slow or restarted worker delays little).
        connect_timeout: seconds to wait for ``scheduler``.

    Raises:
        ConfigurationError: Dask distributed is not installed (``pip install 'dynorm[dask]'``).
    """

    def __init__(self, migrations: list[Migration], reporter: Reporter | None = None, scheduler: str | None = None,
                 n_workers: int = 2, client: Any = None, segments_per_worker: int | None = None,
                 connect_timeout: float = 30.0) -> None:
        super().__init__(migrations, reporter)
        _require_distributed()
        if n_workers < 1:
            raise ConfigurationError(f"--dask-workers must be >= 1, not {n_workers}.")
        self.scheduler = scheduler
        self.n_workers = n_workers
        self.client = client
        self.segments_per_worker = segments_per_worker
        self.connect_timeout = connect_timeout
        self._attempts: dict[str, dict[str, int]] = {}
        self._attempts_lock = threading.Lock()
        self._counts: Counts | None = None

    def migrate(self, options: MigrateOptions) -> MigrateReport:
        """Apply the pending migrations as :meth:`Executor.migrate` does, scan segments on the Dask cluster.

        The cluster (or the connection to ``scheduler``) is opened for the run and closed after it,
        also on errors and on Ctrl-C.

        Raises:
            as :meth:`Executor.migrate`; ConfigurationError: the scheduler cannot be reached.
        """
        if self.client is not None:
            return self._migrate(options)
        distributed = _require_distributed()
        with ExitStack() as stack:
            if self.scheduler is None:
                cluster = stack.enter_context(distributed.LocalCluster(
                    n_workers=self.n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                    dashboard_address="127.0.0.1:0", silence_logs=40))
                self.client = stack.enter_context(distributed.Client(cluster, timeout=60))
                self.client.wait_for_workers(self.n_workers, timeout=120)
            else:
                address = scheduler_address(self.scheduler)
                try:
                    self.client = stack.enter_context(distributed.Client(address, timeout=self.connect_timeout))
                except Exception as exc:  # noqa: BLE001 - whatever answered is not a scheduler we can use
                    raise ConfigurationError(
                        f"cannot reach the Dask scheduler at {self.scheduler} within {self.connect_timeout:g} s "
                        f"({type(exc).__name__}: {exc}); nothing was written. Check --scheduler and that the "
                        "scheduler is running.") from exc
            try:
                return self._migrate(options)
            finally:
                self.client = None
        raise AssertionError("unreachable")  # pragma: no cover - for type checkers

    def _migrate(self, options: MigrateOptions) -> MigrateReport:
        if self.segments_per_worker:
            options.segments = min(64, self.segments_per_worker * self.workers())
        return super().migrate(options)

    def workers(self) -> int:
        """Worker processes of the cluster now (``Client.scheduler_info``)."""
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def _on_event(self, event: Any) -> None:
        _, msg = event
        self._add(msg)

    def _add(self, msg: dict[str, Any]) -> None:
        # each attempt of a segment reports absolute counters: add what changed since its last report
        with self._attempts_lock:
            last = self._attempts.setdefault(msg["attempt"], dict.fromkeys(_FIELDS, 0))
            delta = {k: max(0, int(msg.get(k, 0)) - last[k]) for k in _FIELDS}
            last.update({k: last[k] + v for k, v in delta.items()})
            if self._counts is not None and any(delta.values()):
                self._counts.add(**delta)

    def _run_segments(self, job: SegmentJob, worker: Any, mine: list[int]) -> None:
        if not job.op.dask_segments:  # an operation whose segments must stay in this process
            super()._run_segments(job, worker, mine)
            return
        client = self.client
        run = uuid.uuid4().hex
        topic = f"{TOPIC}-{run}"  # one per run: two drivers may share a cluster
        paced = bool(job.options.max_wcu or job.options.max_rcu)
        # A paced run keeps at most `slots` tasks running, each at budget / slots: the budget holds
        # however many workers join later. The count is fixed here, by the driver (the workers
        # registered now, at least one); unpaced, every segment is submitted at once.
        slots = max(1, min(len(mine), self.workers())) if paced else max(1, len(mine))
        setup = task_setup(job, job.options.worker[1] * max(1, slots), topic)
        self._counts = worker.counts
        self._attempts = {}
        # the transactions count their items in the ledger (exact even when a worker dies
        # between a transaction and its next progress event): the report takes "rewritten" from there
        tallied = job.ledger is not None and not job.options.dry_run
        before = job.ledger.tally(job.name, job.index) if tallied and job.ledger is not None else 0
        client.subscribe_topic(topic, self._on_event)
        stop = self._stop
        futures: list[Any] = []
        pending = list(mine)
        try:
            failed: Any = None
            while True:  # short slices, so the main thread stays free to run signal handlers
                running = sum(1 for f in futures if not f.done())
                while pending and running < slots and not stop.is_set():
                    seg = pending.pop(0)
                    futures.append(client.submit(_segment_task, run, f"{job.name}#{job.index}", setup, seg,
                                                 key=f"dynorm-segment-{run}-{seg}", pure=False))
                    running += 1
                if not pending and all(f.done() for f in futures):
                    break
                failed = next((f for f in futures if f.status == "error"), None)
                if failed is not None or stop.is_set():
                    break
                time.sleep(0.2)
            asked = stop.is_set()  # by a signal or a lost lease
            if failed is not None or asked:
                stop.set()
                self._stop_tasks(client, run, futures)
                if not asked:
                    stop.clear()  # that stop was only ours: the failed segment's error is the run's own, not a stop
            for f in futures:
                if f.status == "finished":
                    result = f.result()
                    self._add(result)
                    self._pacer.read_units += result.get("read_units", 0.0)
                    self._pacer.write_units += result.get("write_units", 0.0)
                    for text in result["errors"]:
                        if len(worker.counts.errors) < 20:
                            worker.counts.errors.append(text)
            if tallied and job.ledger is not None:
                with self._attempts_lock:
                    self._counts = None  # no more progress events into the counts
                exact = job.ledger.tally(job.name, job.index) - before
                worker.counts.add(rewritten=exact - worker.counts.rewritten)
            if failed is not None:
                exc = failed.exception()
                if isinstance(exc, DynormError):
                    raise exc  # the segment's own error (after the other segments stopped)
                raise MigrationError(
                    f"a scan segment of {job.name} [{job.index}] failed on the Dask cluster: {exc!r}. Progress is "
                    "saved; run the same command again to resume.") from exc
        finally:
            client.unsubscribe_topic(topic)
            try:
                client.run(_forget_run, run)
            except Exception:  # noqa: BLE001 - the workers are gone (a terminal's SIGINT): nothing to forget
                pass
            client.cancel(futures)
            self._counts = None

    @staticmethod
    def _stop_tasks(client: Any, run: str, futures: list[Any], timeout: float = 30.0) -> None:
        """Stop every segment at its next checkpoint and wait for them; cancel what is left after ``timeout``.

        The flag is set in every worker process first, so queued segments that start afterwards
        return at once (one GetItem of their checkpoint) and running ones end between two writes.
        A worker process that started after the flag was sent does not have it: its segment is
        cancelled at the deadline (it may run on briefly; the lock is released only after that).
        """
        try:
            client.run(_stop_run, run)
        except Exception:  # noqa: BLE001 - workers gone (Ctrl-C in a terminal reaches them too): none to stop
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not all(f.done() for f in futures):
            time.sleep(0.1)
        client.cancel([f for f in futures if not f.done()])
