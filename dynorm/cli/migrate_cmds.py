"""``dynorm migrate``, ``makemigrations`` and ``showmigrations``: thin wrappers over dynorm.migrations."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator, NoReturn

import click

from ._common import State, check_ledger, pass_state
from .confirm import confirm_changes, yes_option

#: ``dynorm migrate``'s exit code when the run stopped because its lock's lease could not be renewed
LOST_LEASE_EXIT = 75  # EX_TEMPFAIL: try again later


def _worker(value: str | None) -> tuple[int, int]:
    if not value:
        return (0, 1)
    try:
        i, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise click.BadParameter("use i/N, e.g. 0/4") from None
    return i, n


def _lock_ttl(ctx: click.Context, param: click.Parameter, value: float) -> float:
    from dynorm.migrations.executor import check_lock_ttl
    from dynorm.migrations.operations import MigrationError

    try:
        return check_lock_ttl(value)
    except MigrationError as exc:
        raise click.BadParameter(str(exc).removeprefix("--lock-ttl ")) from None


def _rate_eta(counts: dict[str, int], seconds: float) -> tuple[float, float | None, float | None]:
    """Items read per second, percent of the table read, and seconds left (from DescribeTable's ItemCount)."""
    evaluated, total = counts.get("evaluated", 0), counts.get("total", 0)
    rate = evaluated / seconds if seconds > 0 else 0.0
    if not total:
        return rate, None, None
    percent = min(100.0, 100.0 * evaluated / total)
    eta = max(0.0, total - evaluated) / rate if rate > 0 else None
    return rate, percent, eta


class _Bar:
    """One self-rewriting progress line on stderr (only when stderr is a terminal).

    Shows the percentage of the table read (of DescribeTable's ItemCount, refreshed by DynamoDB
    about every 6 hours, so an estimate), the rate and the time left.
    """

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()

    def __call__(self, label: str, counts: dict[str, int], seconds: float, final: bool) -> None:
        if not self.enabled:
            return
        rate, percent, eta = _rate_eta(counts, seconds)
        share = f"{percent:5.1f}% of ~{counts['total']} " if percent is not None else ""
        left = f", ETA {eta:.0f} s" if eta is not None and not final else ""
        line = (f"\r{label}: {share}read {counts.get('evaluated', 0)}  scanned {counts['scanned']}  rewritten "
                f"{counts['rewritten']}  skipped {counts['skipped']}  conflicts {counts['conflicts']}  failed "
                f"{counts['failed']}  ({rate:.0f} items/s{left})")
        click.echo(line + "\x1b[K" + ("\n" if final else ""), err=True, nl=False)  # clear what a longer line left


class _JsonProgress:
    """``--json``: one JSON object per line on stderr every 0.5 s per running operation (stdout keeps the summary)."""

    def __call__(self, label: str, counts: dict[str, int], seconds: float, final: bool) -> None:
        rate, percent, eta = _rate_eta(counts, seconds)
        click.echo(json.dumps({"event": "done" if final else "progress", "operation": label, **counts,
                               "seconds": round(seconds, 3), "items_per_s": round(rate, 1),
                               "percent": None if percent is None else round(percent, 2),
                               "eta_s": None if eta is None else round(eta, 1)}), err=True)


class RequestInterrupted(BaseException):
    """Raised in the main thread by the first SIGINT/SIGTERM when it arrives during a request.

    A BaseException, as KeyboardInterrupt is: botocore turns any Exception raised while it sends
    into a retried HTTPClientError, which would send the request again.
    """


def _in_request(frame: Any) -> bool:
    """Whether ``frame`` (where a signal found the main thread) is inside an HTTP request."""
    while frame is not None:
        name = frame.f_code.co_filename.replace("\\", "/")
        if "/botocore/" in name or "/urllib3/" in name:
            return True
        frame = frame.f_back
    return False


@contextmanager
def _stop_on_signals(resume: str = "", lock_ttl: float = 60.0,
                     read_timeout: float = 5.0) -> Iterator[tuple[threading.Event, list[int], list[float]]]:
    """Turn SIGINT and SIGTERM into a stop event for the migration (restored afterwards).

    The first signal stops every segment at its next checkpoint: from then on no request is retried
    (:func:`dynorm.backend.no_retries_after`), a request the main thread waits for ends at once, one
    in flight in a scan segment within ``read_timeout`` seconds; the lock is given back with one short
    attempt. A second one stops at once: it prints the resume line and exits ``128 + signal``
    without waiting (the lock then lasts until its lease ends, or ``--force-unlock``).
    """
    stop = threading.Event()
    caught: list[int] = []
    received: list[float] = []

    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if caught:
            # the second signal: stop now, whatever is in flight (as kill -9 would; the run is resumable)
            sys.stderr.write(f"\n{name} again: stopped at once. Progress is saved up to the last checkpoint; the "
                             f"lock stays until its lease ends (<= {lock_ttl:g} s; or run with --force-unlock once "
                             f"this process is gone). Resume with:\n  {resume}\n")
            sys.stderr.flush()
            os._exit(128 + signum)
        received.append(time.monotonic())
        click.echo(f"\n{name}: stopping at the next checkpoint; no request is retried now, one in flight ends "
                   f"within {read_timeout:g} s (connection.read_timeout); {name} again stops at once...", err=True)
        caught.append(signum)
        stop.set()
        if _in_request(frame):
            # this thread waits for an answer (taking the lock, recording the ledger): a silent endpoint
            # would hold it for the whole read timeout and retries; end the wait now
            raise RequestInterrupted(f"{name} arrived while a request was waiting for DynamoDB's answer")

    if threading.current_thread() is not threading.main_thread():  # signals can only be handled there
        yield stop, caught, received
        return
    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop, caught, received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _lock_note(report: Any) -> str:
    """Whether the run gave its lock back and, when not, until when it stays and how to remove it sooner."""
    if report.lock_expires_by is None:
        return "the lock is released"
    left = report.lock_expires_by - time.time()
    when = time.strftime("%H:%M:%S", time.localtime(report.lock_expires_by))
    return (f"the lock could NOT be released ({report.lock_error}): its lease ends by {when} "
            f"({f'in {left:.0f} s' if left > 0 else 'already over'}), when another run can take it; to remove it "
            "sooner, once this process is gone and no other migrate runs, add --force-unlock to the resume command")


def _sync_models(state: State, plan_only: bool) -> None:
    tables = state.load_models()
    total = 0
    for table in tables:
        actions = table.sync(wait=True, dry_run=plan_only)
        total += len(actions)
        if not actions:
            click.echo(f"  {table.table_name()}: up to date")
        for line in actions:
            click.echo(f"  {'would ' if plan_only else ''}{line}")
    click.echo(f"{total} action(s) {'planned; nothing was changed' if plan_only else 'applied'}.")


def _resume_command(state: State, target: str | None, args: dict[str, Any]) -> str:
    """The command line that resumes an interrupted run with the same options."""
    words = ["dynorm"] + (["--config", state.config] if state.config else []) + ["migrate"]
    if target:
        words.append(target)
    for flag, value in args.items():
        if value is True:
            words.append(flag)
        elif value not in (None, False):
            words += [flag, str(value)]
    return " ".join(shlex.quote(w) for w in words)


def _print_plan(executor: Any, backwards: list[Any], pending: list[Any], options: Any) -> None:
    if not pending and not backwards:
        click.echo("No migrations to apply.")
    if options.fake:  # only the ledger changes: no operation runs, no item is read or written
        for m in backwards:
            click.echo(f"{m.name}: --fake: would be recorded as not applied; no operation runs, no item is written")
        for m in pending:
            click.echo(f"{m.name}: --fake: would be recorded as applied; no operation runs, no item is written")
        return
    for m, reverse in [(b, True) for b in backwards] + [(p, False) for p in pending]:
        click.echo(f"{m.name}{' (reverse)' if reverse else ''}:")
        for op in (reversed(m.operations) if reverse else m.operations):
            step = op.inverse() if reverse else op
            if step is None:
                continue
            click.echo(f"  {'(state) ' if step.state_only else ''}{step.describe()}")
            cost = executor.estimate(step, options)
            if cost is None:
                continue
            reads = "consistent" if executor.consistent_for(step, options) else "eventually consistent"
            click.echo(f"    table: ~{cost.items} item(s), ~{cost.avg_size:.0f} B on average (DescribeTable)")
            click.echo(f"    reads:  <= {cost.read_requests} request(s), <= {cost.rcu:.1f} RCU ({reads} Scan/Query"
                       f"{step.plan_reads_note(options)})")
            if cost.catch_up_rcu:
                click.echo(f"            each further catch-up pass (only if old-version items appear meanwhile): "
                           f"<= {cost.catch_up_rcu:.1f} RCU")
            click.echo(f"    writes: <= {cost.write_requests} write request(s), <= {cost.wcu:.0f} WCU "
                       f"(if every item is a {getattr(step, 'entity_type', '?')})")
            if options.max_wcu or options.max_rcu:
                secs = max(cost.wcu / options.max_wcu if options.max_wcu else 0.0,
                           cost.rcu / options.max_rcu if options.max_rcu else 0.0)
                click.echo(f"    at the limits given: >= {secs:.0f} s")
    if pending or backwards:
        click.echo("Assumed: a Scan reads every item of the table (1 RCU per 4 KB per page, half when eventually "
                   "consistent); a transactional write costs 2 WCU per KB of each item written (Put, and in move "
                   "mode the Delete), each GSI entry 1 WCU per KB. The figures are upper bounds whatever the item "
                   "sizes: they use the table's total size (each page or item costs at most its size / 4 KB "
                   "(reads) or / 1 KB (writes) plus one unit), not the average. `--dry-run` counts the entity's "
                   "items exactly.")


@click.command()
@click.argument("target", required=False)
@click.option("--plan", "plan_only", is_flag=True,
              help="List the operations that would run with their estimated requests and RCU/WCU; change nothing.")
@click.option("--dry-run", is_flag=True, help="Scan and count what each operation would rewrite; write nothing.")
@click.option("--fake", is_flag=True, help="Only change the ledger: record pending migrations as applied (or, "
              "with an older TARGET, later ones as not applied) without running any operation or writing any item.")
@click.option("--segments", type=click.IntRange(1, 64), default=None,
              help="Parallel Scan segments for RekeyEntity/DeleteVersion [default: 4; --executor dask: 4 per worker].")
@click.option("--mode", type=click.Choice(["move", "copy"]), default="move", show_default=True,
              help="move: delete old items in the same transaction; copy: keep them (expand/contract).")
@click.option("--worker", default=None, metavar="i/N", help="Run only share i of N of the scan segments.")
@click.option("--max-wcu", type=click.FloatRange(min=0, min_open=True), default=None, metavar="N",
              help="At most N write capacity units per second, for all segments and all --worker processes.")
@click.option("--max-rcu", type=click.FloatRange(min=0, min_open=True), default=None, metavar="N",
              help="At most N read capacity units per second, for all segments and all --worker processes.")
@click.option("--consistent-read", is_flag=True,
              help="Strongly consistent scans (twice the RCU); default: eventually consistent (copy mode: consistent).")
@click.option("--lock-ttl", type=float, default=60.0, show_default=True, metavar="SECONDS", callback=_lock_ttl,
              help="The lock's lease (1 to 3600 s): a heartbeat renews it every third of it; a dead run's lock "
                   "frees the table after it.")
@click.option("--force-unlock", is_flag=True, help="Remove a lock left by a dead run (with a warning) first.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (progress as JSON lines on stderr).")
@click.option("--executor", "engine", type=click.Choice(["threads", "dask"]), default="threads", show_default=True,
              help="Run scan segments on threads of this process, or as tasks on a Dask cluster (dynorm[dask]).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="--executor dask: the Dask scheduler (tcp://host:8786); default: a local cluster for the run.")
@click.option("--dask-workers", type=click.IntRange(1, 64), default=2, show_default=True,
              help="--executor dask without --scheduler: worker processes of the local cluster.")
@click.option("--verify", "verify_name", default=None, metavar="NAME",
              help="Write nothing: count the rekeyed entities' items at the old and new key version "
                   "(exit 1 on a mismatch: move: any left at the old; copy: fewer at the new); for a rekey that "
                   "keeps its key version, check every item's index keys against the new layout (exit 1 if any "
                   "differ).")
@click.option("--resolve", type=click.Choice(["keep-new", "keep-old"]), default=None,
              help="Finish a partial rekey whose failed items conflict with a different item at their new key: "
                   "keep-new keeps that item (the old one is deleted in move mode); keep-old replaces it.")
@yes_option
@pass_state
def migrate(state: State, target: str | None, plan_only: bool, dry_run: bool, fake: bool, segments: int | None,
            mode: str, worker: str | None, max_wcu: float | None, max_rcu: float | None, consistent_read: bool,
            lock_ttl: float, force_unlock: bool, as_json: bool, engine: str, scheduler: str | None,
            dask_workers: int, verify_name: str | None, resolve: str | None, yes: bool) -> None:
    """Apply pending migrations, or reverse later ones when TARGET is older (or, with no migrations package
    configured, create missing tables and GSIs).

    Against a non-local endpoint it first shows endpoint, account, region and tables and asks (--yes skips).
    SIGINT (Ctrl-C) and SIGTERM stop every segment at its next checkpoint, release the lock and exit
    130 / 143; the same command resumes. Items that fail leave the migration partial (exit 1); a
    re-run retries exactly those.
    """
    settings = state.settings()
    if not settings.migrations:
        _sync_without_migrations(state, settings, plan_only, yes)
        return
    from dynorm.migrations.executor import MigrateOptions

    migrations = _load_checked(state, settings.migrations)
    reporter = _JsonProgress() if as_json else _Bar()
    if verify_name is not None:
        from dynorm.migrations.executor import Executor

        _verify(Executor(migrations), verify_name, mode, segments or 4, as_json)
        return
    executor = _executor(migrations, reporter, engine, scheduler, dask_workers, segments)
    if force_unlock:
        _force_unlock(executor, settings, yes)
    options = MigrateOptions(target=target, mode=mode, segments=segments or 4, worker=_worker(worker), dry_run=dry_run,
                             fake=fake, consistent_read=True if consistent_read else None, max_rcu=max_rcu,
                             max_wcu=max_wcu, lock_ttl=lock_ttl, resolve=resolve)
    backwards = executor.backwards_plan(target, fake=fake)
    pending = [] if backwards else executor.plan(target)
    if plan_only:
        _print_plan(executor, backwards, pending, options)
        return
    if not pending and not backwards:
        click.echo(json.dumps({"applied": [], "totals": {}}) if as_json else "No migrations to apply.")
        return
    if not dry_run:
        _confirm_run(settings, backwards, pending, fake, yes)
    # what was shown (and confirmed) is what may run: the executor compares it with the plan under the lock
    options.confirmed = (tuple(m.name for m in backwards), tuple(m.name for m in pending))
    resume = _resume_command(state, target, {"--segments": segments, "--mode": mode, "--worker": worker,
                                             "--max-wcu": max_wcu, "--max-rcu": max_rcu,
                                             "--consistent-read": consistent_read, "--resolve": resolve,
                                             "--lock-ttl": None if lock_ttl == 60.0 else lock_ttl,
                                             "--executor": None if engine == "threads" else engine,
                                             "--scheduler": scheduler,
                                             "--dask-workers": dask_workers if engine == "dask" and not scheduler
                                             else None})
    report = _run(executor, options, resume, settings.read_timeout, as_json)
    _print_report(report, as_json, dry_run)
    _fail_if_partial(report, resume)


# -- the steps of `migrate` ----------------------------------------------------------------------
def _sync_without_migrations(state: State, settings: Any, plan_only: bool, yes: bool) -> None:
    """No migrations package configured: create the missing tables and GSIs of the models."""
    click.echo(f"Endpoint: {settings.endpoint or 'AWS ' + settings.region}")
    if not plan_only:
        confirm_changes(settings, "create missing tables and GSIs", [t.table_name() for t in state.load_models()], yes)
    _sync_models(state, plan_only)


def _load_checked(state: State, package: str) -> list[Any]:
    """Load the models and the migrations; refuse a ledger without migrations; warn about unmigrated changes."""
    from dynorm.migrations.executor import check_ledger_without_migrations
    from dynorm.migrations.loader import load_migrations

    model_tables = state.load_models()
    migrations = load_migrations(package)
    if not migrations:
        check_ledger_without_migrations(model_tables)
    _warn_unmigrated(migrations, model_tables)
    return migrations


def _executor(migrations: list[Any], reporter: Any, engine: str, scheduler: str | None, dask_workers: int,
              segments: int | None) -> Any:
    """The executor of ``--executor``: threads of this process, or a Dask cluster."""
    from dynorm.migrations.executor import Executor

    if scheduler and engine != "dask":
        raise click.UsageError("--scheduler needs --executor dask.")
    if engine == "dask":
        from dynorm.migrations.dask_executor import DaskExecutor

        return DaskExecutor(migrations, reporter=reporter, scheduler=scheduler, n_workers=dask_workers,
                            segments_per_worker=None if segments else 4)
    return Executor(migrations, reporter=reporter)


def _force_unlock(executor: Any, settings: Any, yes: bool) -> None:
    """``--force-unlock``: remove a lock a dead run left (after confirming), with a warning."""
    ledger = executor.ledger()
    confirm_changes(settings, "remove the migration lock", [ledger.name], yes)
    if ledger.exists():
        n = ledger.force_unlock()
        click.echo(f"WARNING: removed {n} lock(s) on {ledger.name}; make sure no other migrate is running.", err=True)


def _confirm_run(settings: Any, backwards: list[Any], pending: list[Any], fake: bool, yes: bool) -> None:
    """Say what the run will change and on which tables; ask unless the endpoint is local or ``--yes``."""
    what = (f"reverse {len(backwards)} migration(s) (rewrite or delete items)" if backwards else
            f"apply {len(pending)} migration(s) (create tables, rewrite or delete items)")
    if fake:
        what = (f"record {len(backwards)} migration(s) as not applied" if backwards else
                f"record {len(pending)} migration(s) as applied") + " (--fake: only the ledger; no item is written)"
    tables = sorted({settings.table_prefix + t for m in (pending or backwards) for t in m.tables})
    confirm_changes(settings, what, tables, yes)


def _run(executor: Any, options: Any, resume: str, read_timeout: float, as_json: bool) -> Any:
    """Run the migrations with SIGINT/SIGTERM as a stop; return the report, or exit as the stop says."""
    from dynorm.migrations.executor import MigrationInterrupted, OperationFailed

    started = time.monotonic()
    with _stop_on_signals(resume, options.lock_ttl, read_timeout) as (stop, caught, received):
        options.stop = stop
        try:
            return executor.migrate(options)
        except OperationFailed as exc:
            if not as_json:
                raise
            click.echo(json.dumps(exc.to_dict(), indent=2))
            raise click.ClickException(str(exc).split("\n", 1)[0]) from exc
        except MigrationInterrupted as exc:
            _print_report(exc.report, as_json, options.dry_run)
            _exit_interrupted(exc, caught, received, started, resume)
        except (Exception, RequestInterrupted) as exc:
            if not caught:
                raise
            # the stop came while a request was in flight: it failed (a timeout on a silent endpoint)
            # after the signal; report the interruption, with its cause, not the request's error
            signum = caught[0]
            click.echo(f"Interrupted by {signal.Signals(signum).name} after {time.monotonic() - started:.1f} s; a "
                       f"request in flight then failed ({type(exc).__name__}: {exc}). Progress is saved up to the "
                       f"last checkpoint; the lock is released, or ends with its lease (<= {options.lock_ttl:g} s). "
                       f"Resume with:\n  {resume}", err=True)
            sys.exit(128 + signum)


def _exit_interrupted(exc: Any, caught: list[int], received: list[float], started: float, resume: str) -> NoReturn:
    """A run stopped by a signal or a lost lease: say what is saved and how to resume; exit 128+signal or 75."""
    lock = _lock_note(exc.report)
    if exc.lost_lease and not caught:
        click.echo(f"Stopped after {time.monotonic() - started:.1f} s: the migration lock's lease was lost "
                   f"({exc}). Progress is saved up to the last checkpoint; {lock}. Check the network to "
                   f"DynamoDB (or who ran --force-unlock). Resume with:\n  {resume}", err=True)
        sys.exit(LOST_LEASE_EXIT)
    signum = caught[0] if caught else signal.SIGINT
    lag = time.monotonic() - received[0] if received else 0.0
    saved = ("progress is saved and the lock released" if exc.report.lock_expires_by is None else
             f"progress is saved up to the last checkpoint; {lock}")
    click.echo(f"Interrupted by {signal.Signals(signum).name} after {time.monotonic() - started:.1f} s "
               f"({exc}; stopped {lag:.2f} s after the signal); {saved}. Resume with:\n  {resume}", err=True)
    sys.exit(128 + signum)


def _fail_if_partial(report: Any, resume: str) -> None:
    """Exit 1 when a migration is left partial, naming the failed items and the command that retries them."""
    if not report.partial:
        return
    names = ", ".join(f"{n} ({c} failed)" for n, c in report.partial.items())
    first = "; ".join(report.failed_items[:5])
    if not sum(report.partial.values()):  # no failed item: the catch-up kept finding old-version items
        raise click.ClickException(f"{', '.join(report.partial)} is NOT applied (partial): {first}: `{resume}`.")
    hints = list(dict.fromkeys(o.hint for o in report.operations if o.hint and o.status.startswith("partial")))
    if hints:  # the operations know better (AddConstraint: fix the duplicates; no rekey option applies)
        raise click.ClickException(
            f"{sum(report.partial.values()) or 'some'} item(s) failed, so {names} is NOT applied (partial). First: "
            f"{first}. " + " ".join(hints))
    if any("--resolve" in item for item in report.failed_items):
        # a new key holding another item fails the same way on every plain re-run: only a rule settles it
        todo = (f"Items whose new key holds a different item fail again on a plain re-run: settle them with "
                f"`{resume} --resolve keep-new` (the item at the new key is current) or `--resolve keep-old` "
                "(the old item replaces it); docs/migrations.md, \"A partial migration that conflicts\".")
    else:
        todo = f"Fix the cause and run `{resume}` again: it retries exactly the failed items."
    raise click.ClickException(
        f"{sum(report.partial.values())} item(s) failed, so {names} is NOT applied (partial). First: {first}. "
        + todo)


def _warn_unmigrated(migrations: list[Any], tables: list[Any]) -> None:
    """Warn on stderr, as Django's ``migrate`` does, about model changes that no migration reflects.

    Only a warning: the exit code stays the command's own (``makemigrations --check`` is the CI gate).
    """
    from dynorm.migrations.api import pending_changes
    from dynorm.migrations.operations import MigrationError

    try:
        changes = pending_changes(migrations, tables)
    except MigrationError as exc:
        click.echo(f"WARNING: cannot compare the models with the migrations ({exc}); `dynorm makemigrations "
                   "--check` shows what to change.", err=True)
        return
    if not changes:
        return
    apps = ", ".join(dict.fromkeys(f"'{c.app}'" for c in changes))
    lines = [f"  {c.app}: {op.describe()}" for c in changes for op in c.operations]
    click.echo(f"WARNING: Your models in app(s) {apps} have changes that are not yet reflected in a migration, "
               "so `dynorm migrate` does not apply them:\n" + "\n".join(lines)
               + "\nRun `dynorm makemigrations` to make a migration for them, then `dynorm migrate` to apply it.",
               err=True)


def _verify(executor: Any, name: str, mode: str, segments: int, as_json: bool) -> None:
    from dynorm.migrations.verify import verify

    ok, rows = verify(executor, name, mode=mode, segments=segments)
    applied = executor._resolve(name) in executor.applied()
    if as_json:
        click.echo(json.dumps({"ok": ok, "applied": applied, "mode": mode, "entities": [vars(r) for r in rows]},
                              indent=2))
    else:
        for r in rows:
            if r.constraint:
                click.echo(f"  {r.migration} {r.entity_type} in {r.table}: unique constraint {r.constraint}: "
                           f"{r.old} item(s) holding a value, {r.new} sentinel(s): "
                           f"{'ok' if r.ok else 'MISMATCH'}")
                for line in r.problems:
                    click.echo(f"    {line}")
                continue
            note = f" ({r.note})" if r.note else ""
            counts_ok = r.old == 0 if mode == "move" else r.new >= r.old
            click.echo(f"  {r.migration} {r.entity_type} in {r.table}: {r.old} item(s) at {r.from_version}, "
                       f"{r.new} at {r.to_version}: {'ok' if counts_ok else 'MISMATCH'}{note}")
            if r.index_keys_checked is not None:
                click.echo(f"    index keys (same key version): {r.stale_index_keys} of {r.index_keys_checked} "
                           f"item(s) differ from the keys the new layout renders from their fields: "
                           f"{'ok' if not r.stale_index_keys else 'MISMATCH'}")
                for key in r.stale_examples:
                    click.echo(f"      {json.dumps(key, sort_keys=True, default=str)}")
        if not rows:
            click.echo("  (no RekeyEntity or AddConstraint in this migration: nothing to count)")
    if not applied:
        raise click.ClickException(f"migration {name} is not applied.")
    if not ok:
        stale = [r for r in rows if r.stale_index_keys]
        if stale:
            migration = next(m for m in executor.migrations if m.name == executor._resolve(name))
            before = migration.dependencies[-1] if migration.dependencies else "the migration before it"
            counts = ", ".join(f"{r.stale_index_keys} {r.entity_type} item(s)" for r in stale)
            names = [m.name for m in executor.migrations]
            recorded = executor.applied()
            later = [n for n in names[names.index(migration.name) + 1:] if n in recorded]
            again = (f"; the first also un-records the later applied migration(s) {', '.join(later)}: record them "
                     "as applied again with `dynorm migrate --fake` (they ran already)" if later else "")
            raise click.ClickException(
                f"--verify {name}: {counts} have index keys that differ from the ones the new layout renders from "
                "their fields (listed above; queries of the new code miss them): a process with the old declaration "
                "wrote them after the migration (same key version, so nothing refused it). Deploy the new "
                "declaration to every process first, then run the migration's rewrite again: "
                f"`dynorm migrate {before} --fake` and `dynorm migrate {migration.name}` (no item is written by "
                "the first; the rekey skips items whose keys are right and rewrites the others in place)"
                f"{again}; docs/migrations.md, \"Changing shards or shard_by\".")
        bad = ", ".join(r.entity_type for r in rows if not r.ok and not r.constraint)
        if bad:
            rule = "no item may be left at the old version" if mode == "move" else \
                "the new version must hold at least as many items as the old"
            raise click.ClickException(f"--verify {name}: counts do not match for {bad} ({mode} mode: {rule}); "
                                       "run `dynorm migrate` again to resume, or `dynorm showmigrations`.")
        broken = ", ".join(f"{r.entity_type} {r.constraint}" for r in rows if not r.ok)
        raise click.ClickException(
            f"--verify {name}: the sentinels of {broken} do not match the items (listed above): a process without "
            "the constraint wrote items since it was applied. Deploy the models with the constraint everywhere, "
            "then migrate back to the migration before it and forward again (its RemoveConstraint deletes the "
            "sentinels, its AddConstraint writes and checks them again); see docs/constraints.md.")
    if not as_json:
        checked = " and the index keys" if any(r.index_keys_checked is not None for r in rows) else ""
        click.echo(f"Verified {name}: the counts{checked} match ({mode} mode).")


def _print_report(report: Any, as_json: bool, dry_run: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    for rep in report.operations:
        counts = "" if not rep.counts else "  " + " ".join(f"{k}={v}" for k, v in rep.counts.items())
        click.echo(f"  {rep.migration} [{rep.index}] {rep.description}: {rep.status}{counts} ({rep.seconds:.1f} s)")
        if rep.catch_up_passes:
            click.echo(f"    catch-up: {rep.catch_up_passes} pass(es) over the old version, {rep.caught_up} item(s) "
                       "written there meanwhile moved")
        for err in rep.errors[:5]:
            click.echo(f"    failed: {err}", err=True)
    totals: dict[str, Any] = report.totals()
    if dry_run:
        click.echo(f"Dry run: nothing was written. Would rewrite {totals.get('rewritten', 0)} item(s) "
                   f"of {totals.get('scanned', 0)} scanned.")
        return
    idle = report.nothing_to_do()
    if idle is not None:  # another run did it between our first read of the ledger and our lock
        click.echo(idle[0].upper() + idle[1:] + ".")
        return
    if report.fake:
        if report.unapplied:
            click.echo(f"Recorded {len(report.unapplied)} migration(s) as not applied (--fake: their inverse "
                       f"operations were NOT run; the items are as they were): {', '.join(report.unapplied)}")
        if report.applied or not report.unapplied:
            click.echo(f"Recorded {len(report.applied)} migration(s) as applied (--fake: their operations were NOT "
                       f"run): {', '.join(report.applied) or 'none'}")
        return
    if report.unapplied:
        click.echo(f"Reversed {len(report.unapplied)} migration(s): {', '.join(report.unapplied)}")
    click.echo(f"Applied {len(report.applied)} migration(s) in {report.seconds:.1f} s: "
               + (", ".join(report.applied) or "none"))
    if totals:
        click.echo("Items: " + ", ".join(f"{k} {v}" for k, v in totals.items())
                   + f"; read {report.read_units:.1f} RCU")


@click.command()
@click.option("--name", default=None, help="Name after the number (default: suggested, e.g. product_v2).")
@click.option("--empty", is_flag=True, help="Write an empty migration (for RunPython).")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if the models have changes with no migration, the "
              "migrations package does not exist, or the ledger lists migrations that have no file.")
@pass_state
def makemigrations(state: State, name: str | None, empty: bool, check: bool) -> None:
    """Write the next migration from the differences between the migration files and the models."""
    from dynorm.exceptions import ConfigurationError
    from dynorm.migrations.api import make_migrations

    tables = state.load_models()
    settings = state.settings()
    if not settings.migrations:
        raise ConfigurationError("no migrations package configured; set `migrations:` in dynorm.yaml.")
    # the ledger must know no migration without a file (offline: a note); --check also refuses a
    # missing package, which a first makemigrations creates
    if check or _package_exists(settings.migrations):
        check_ledger(settings.migrations, tables)
    result = make_migrations(settings.migrations, tables, name=name, empty=empty, check=check)
    if not result.operations and not empty:
        click.echo("No changes detected.")
        return
    for op in result.operations:
        click.echo(f"  - {op.describe()}")
    if check:
        raise click.ClickException(f"models have changes with no migration ({len(result.operations)} operation(s)); "
                                   "run `dynorm makemigrations`.")
    click.echo(f"Wrote {result.path}")


def _package_exists(package: str) -> bool:
    """True when ``package`` can be imported (without importing it when its parent is missing)."""
    try:
        return importlib.util.find_spec(package) is not None
    except ModuleNotFoundError:
        return False


@click.command()
@pass_state
def showmigrations(state: State) -> None:
    """List migrations per table: [X] applied, [~] partial (failed items or an interrupted run), [ ] pending."""
    from dynorm.exceptions import ConfigurationError
    from dynorm.migrations.executor import Executor, check_ledger_without_migrations
    from dynorm.migrations.loader import load_migrations

    settings = state.settings()
    if not settings.migrations:
        raise ConfigurationError("no migrations package configured; set `migrations:` in dynorm.yaml.")
    model_tables = state.load_models()
    migrations = load_migrations(settings.migrations)
    _warn_unmigrated(migrations, model_tables)
    if not migrations:
        check_ledger_without_migrations(model_tables)
        click.echo("No migrations.")
        return
    executor = Executor(migrations)
    applied = executor.applied()
    ledger = executor.ledger()
    progress = ledger.progress() if ledger.exists() else {}
    tables: dict[str, list[str]] = {}
    for m in migrations:
        for t in m.tables or ["(no table)"]:
            tables.setdefault(t, []).append(m.name)
    for t, names in tables.items():
        click.echo(f"{settings.table_prefix}{t}")
        for n in names:
            mark = "[X]" if n in applied else "[ ]"
            extra = " (fake)" if applied.get(n, {}).get("fake") else ""
            p = progress.get(n)
            if n not in applied and p and p["started"]:
                mark = "[~]"
                if p.get("reverse"):
                    extra = (f" (partly reversed: {p['failed']} failed item(s), {p['done']}/{p['segments']} scan "
                             "segment(s) finished; `dynorm migrate <earlier>` finishes the reversal, "
                             "`dynorm migrate` applies it again)")
                else:
                    extra = (f" (partial: {p['failed']} failed item(s); `dynorm migrate` retries them)"
                             if p["failed"] else
                             f" (interrupted: {p['done']}/{p['segments']} scan segment(s) finished; "
                             "`dynorm migrate` resumes)")
            click.echo(f"  {mark} {n}{extra}")
