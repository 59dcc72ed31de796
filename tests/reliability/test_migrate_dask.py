"""``dynorm migrate --executor dask``: a LocalCluster of 3 worker processes (one thread each), one
worker SIGKILLed mid-run, Ctrl-C, the shared --max-wcu budget and ``--verify``.

Every test closes its cluster (context managers), so no worker process outlives it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from dynorm import backend
from dynorm.cli import cli
from dynorm.migrations.executor import MigrateOptions, MigrationInterrupted, SegmentJob
from dynorm.migrations.ledger import Ledger
from dynorm.migrations.loader import load_migrations
from dynorm.migrations.verify import verify
from tests.migproject import REPO, V2, Project, body, load_v1, scan_all, widgets

distributed = pytest.importorskip("distributed")
from dynorm.migrations.dask_executor import DaskExecutor, _segment_task, scheduler_address, task_setup  # noqa: E402
from tests.faults import Hook  # noqa: E402

pytestmark = pytest.mark.dynamodb_local_only("migrations need DynamoDB Local")


@pytest.fixture
def client() -> Iterator[Any]:
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0", silence_logs=40) as cluster, \
            distributed.Client(cluster, timeout=60) as c:
        c.wait_for_workers(3, timeout=120)
        yield c


def _applied(project: Project, name: str) -> list[dict[str, Any]]:
    return [i for i in scan_all(project.table) if i["PK"]["S"] == "dynorm#migrations"
            and i["SK"]["S"] == f"applied#{name}"]


def _kill_one_worker_mid_run(project: Project, client: Any, n: int, segments: int) -> None:
    load_v1(project, n)
    before = {i["widget_id"]["S"]: body(i) for i in widgets(project.table)}
    project.write_models(**V2)
    project.makemigrations()
    pids_before = client.run(os.getpid)
    killed: dict[str, Any] = {}

    def reporter(label: str, counts: dict[str, int], seconds: float, final: bool) -> None:
        # mid-run: some items moved, most not; kill a worker that is running a segment right now
        if killed or final or counts["rewritten"] < n // 10:
            return
        busy = [addr for addr, keys in client.processing().items() if keys and addr in pids_before]
        if busy:
            killed["rewritten"] = counts["rewritten"]
            killed["pid"] = pids_before[busy[0]]
            os.kill(killed["pid"], signal.SIGKILL)

    executor = DaskExecutor(load_migrations(project.migrations), reporter=reporter, client=client)
    report = executor.migrate(MigrateOptions(segments=segments))
    assert killed and killed["rewritten"] < n, killed  # the worker died mid-run
    assert killed["pid"] not in client.run(os.getpid).values()
    assert report.applied == ["0002_widget_v2"] and not report.partial
    assert set(executor.ledger().key_versions()["WIDGET"].retired) == {"v1"}  # recorded by the driver, as threads do
    after = widgets(project.table)
    assert len(after) == n  # 0 lost, 0 duplicated
    assert len({(i["PK"]["S"], i["SK"]["S"]) for i in after}) == n and all(i["PK"]["S"].startswith("v2#")
                                                                           for i in after)
    assert {i["widget_id"]["S"]: body(i) for i in after} == before  # every attribute kept (also `legacy`)
    assert len(_applied(project, "0002_widget_v2")) == 1
    ok, rows = verify(project.executor(), "0002")
    assert ok and [(r.entity_type, r.old, r.new) for r in rows] == [("WIDGET", 0, n)]


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(project: Project, client: Any) -> None:
    _kill_one_worker_mid_run(project, client, 3000, 12)


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_ctrl_c_stops_every_task_and_the_run_resumes(project: Project, client: Any) -> None:
    load_v1(project, 3000)
    before = {i["widget_id"]["S"]: body(i) for i in widgets(project.table)}
    project.write_models(**V2)
    project.makemigrations()
    stop = threading.Event()

    def reporter(label: str, counts: dict[str, int], seconds: float, final: bool) -> None:
        if counts["rewritten"] >= 300:
            stop.set()  # as the CLI's SIGINT handler does

    executor = DaskExecutor(load_migrations(project.migrations), reporter=reporter, client=client)
    with pytest.raises(MigrationInterrupted):
        executor.migrate(MigrateOptions(segments=12, stop=stop))
    ledger = [i for i in scan_all(project.table) if i["PK"]["S"] == "dynorm#migrations"]
    assert not any(i["SK"]["S"].startswith("lock#") for i in ledger)  # released
    assert not _applied(project, "0002_widget_v2")
    moved = sum(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))
    time.sleep(1.0)
    # no task writes after the driver returned
    assert sum(i["PK"]["S"].startswith("v2#") for i in widgets(project.table)) == moved and 0 < moved < 3000
    assert not any(client.processing().values())
    ok, rows = verify(project.executor(), "0002")
    assert not ok and rows[0].old == 3000 - moved and rows[0].new == moved
    report = DaskExecutor(load_migrations(project.migrations), client=client).migrate(MigrateOptions(segments=12))
    assert report.applied == ["0002_widget_v2"]
    after = widgets(project.table)
    assert len(after) == 3000 and {i["widget_id"]["S"]: body(i) for i in after} == before


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_max_wcu_is_shared_by_the_worker_processes(project: Project, client: Any) -> None:
    """Each of the 3 processes paces at a third of the budget: together they stay under it."""
    load_v1(project, 600)
    project.write_models(**V2)
    project.makemigrations()
    budget = 1200.0  # ~6 WCU per moved item (2 x 2 for Put + Delete, 1 per GSI entry): ~3600 WCU in all
    executor = DaskExecutor(load_migrations(project.migrations), client=client)
    report = executor.migrate(MigrateOptions(segments=12, max_wcu=budget))
    rekey = [op for op in report.operations if op.description.startswith("rekey")][0]
    assert report.applied == ["0002_widget_v2"] and report.write_units >= 600 * 6
    # one second of burst in all (a third per process) on top of the rate
    assert report.write_units <= budget * (rekey.seconds + 1), (report.write_units, rekey.seconds)


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_cli_executor_dask_then_verify(project: Project) -> None:
    load_v1(project, 500)
    project.write_models(**V2)
    project.makemigrations()
    cfg = str(project.config())
    runner = CliRunner()
    early = runner.invoke(cli, ["--config", cfg, "migrate", "--verify", "0002"])
    assert early.exit_code == 1 and "500 item(s) at v1, 0 at v2: MISMATCH" in early.output, early.output
    assert "is not applied" in early.output
    env = {**os.environ, "PYTHONPATH": f"{project.root}{os.pathsep}{REPO}"}
    done = subprocess.run([sys.executable, "-m", "dynorm", "--config", cfg, "migrate", "--executor", "dask",
                           "--dask-workers", "2", "--json"], env=env, cwd=project.root, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout
    assert '"applied": [\n    "0002_widget_v2"' in done.stdout
    assert '"event": "progress"' in done.stderr or '"event": "done"' in done.stderr
    clean = runner.invoke(cli, ["--config", cfg, "migrate", "--verify", "0002_widget_v2"])
    assert clean.exit_code == 0 and "0 item(s) at v1, 500 at v2: ok" in clean.output, clean.output
    copy = runner.invoke(cli, ["--config", cfg, "migrate", "--verify", "0002", "--mode", "copy", "--json"])
    assert copy.exit_code == 0 and '"ok": true' in copy.output, copy.output
    bad = runner.invoke(cli, ["--config", cfg, "migrate", "--scheduler", "tcp://127.0.0.1:1"])
    assert bad.exit_code == 2 and "--scheduler needs --executor dask" in bad.output


def _group_alive(pgid: int) -> list[str]:
    out = subprocess.run(["ps", "-o", "pid=,pgid=,args=", "-e"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.split()[1] == str(pgid)]


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_ctrl_c_in_a_terminal_stops_the_driver_and_its_local_cluster(project: Project) -> None:
    """SIGINT to the whole process group (what Ctrl-C in a terminal does): driver, nannies and workers."""
    load_v1(project, 3000)
    before = {i["widget_id"]["S"]: body(i) for i in widgets(project.table)}
    project.write_models(**V2)
    project.makemigrations()
    cfg = str(project.config())
    env = {**os.environ, "PYTHONPATH": f"{project.root}{os.pathsep}{REPO}"}
    cmd = [sys.executable, "-m", "dynorm", "--config", cfg, "migrate", "--executor", "dask", "--dask-workers", "2",
           "--json"]
    proc = subprocess.Popen(cmd, env=env, cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # the rekey is under way
            if '"event": "progress"' in line and '"rewritten": 0' not in line:
                break
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err[-3000:]
    assert "Resume with:" in err and "--executor dask" in err.split("Resume with:")[1]
    deadline = time.monotonic() + 30
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _group_alive(proc.pid)  # no worker process left behind
    ledger = [i for i in scan_all(project.table) if i["PK"]["S"] == "dynorm#migrations"]
    assert not any(i["SK"]["S"].startswith("lock#") for i in ledger)
    moved = sum(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))
    assert 0 < moved < 3000
    resume = err.split("Resume with:")[1].strip().splitlines()[0]
    finish = subprocess.run([sys.executable, "-m", *resume.split()], env=env, cwd=project.root, capture_output=True,
                            text=True, timeout=300)
    assert finish.returncode == 0, finish.stderr[-3000:]
    after = widgets(project.table)
    assert len(after) == 3000 and {i["widget_id"]["S"]: body(i) for i in after} == before


class _WorkerDied(BaseException):
    """Raised from a botocore hook: the process 'dies' right after a transaction committed."""


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_a_retried_segment_task_after_a_death_between_commit_and_checkpoint_is_idempotent(project: Project) -> None:
    """The worst moment to die: transactions of a page committed, its checkpoint not saved. The retry
    reads the page again; the moved items are gone from v1 and every Delete was conditional on the
    old item's _dynorm_rev, so nothing is moved twice and nothing is lost. In-process: the task
    function itself, as the scheduler would run it again on another worker."""
    from dynorm.migrations.dask_executor import _segment_task, task_setup
    from dynorm.migrations.executor import SegmentJob
    from tests.faults import Hook

    load_v1(project, 600)
    before = {i["widget_id"]["S"]: body(i) for i in widgets(project.table)}
    project.write_models(**V2)
    project.makemigrations()
    executor = project.executor()
    executor.migrate(MigrateOptions(target="0001"))
    op = executor.migrations[1].operations[0]
    table = executor.final_state.tables[op.table]
    job = SegmentJob("0002_widget_v2", 0, op, table, project.table.table_name(), MigrateOptions(), False, 1,
                     executor.ledger())
    setup = task_setup(job, 1, "unused")
    sent = {"n": 0}

    def die_after_third(**kwargs: Any) -> None:
        sent["n"] += 1
        if sent["n"] == 3:
            raise _WorkerDied()

    with Hook("after-call.dynamodb.TransactWriteItems", die_after_third), pytest.raises(_WorkerDied):
        _segment_task("run-a", "0002#0", setup, 0)
    mid = widgets(project.table)
    # 3 x 49 committed (49 items and the segment's tally per transaction)
    assert len(mid) == 600 and sum(i["PK"]["S"].startswith("v2#") for i in mid) == 147
    assert not [i for i in scan_all(project.table) if i["SK"]["S"].startswith("checkpoint#0002")]  # none saved
    again = _segment_task("run-b", "0002#0", setup, 0)  # the scheduler's retry, on another worker
    assert again["rewritten"] == 453 and again["failed"] == 0 and not again["errors"]
    assert executor.ledger().tally("0002_widget_v2", 0) == 600  # each item counted once, with its move
    after = widgets(project.table)
    assert len(after) == 600 and len({i["PK"]["S"] for i in after}) == 600
    assert all(i["PK"]["S"].startswith("v2#") for i in after)
    assert {i["widget_id"]["S"]: body(i) for i in after} == before
    assert _segment_task("run-c", "0002#0", setup, 0)["scanned"] == 0  # a finished segment: a no-op


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_a_transform_in_the_migration_module_runs_on_the_workers(client: Any, project: Project) -> None:
    """The workers were started before the project existed: its path reaches them with each task."""
    load_v1(project, 200)
    models = project.write_models(**V2)
    path = project.makemigrations().path
    text = path.read_text().replace("    ops.RekeyEntity(\n", "    ops.RekeyEntity(\n        transform=reshape,\n", 1)
    text = text.replace("operations = [", "def reshape(item):\n    item['maker'] = item['maker'].upper()\n"
                        "    item['migrated'] = True\n    return item\n\n\noperations = [", 1)
    path.write_text(text)
    assert project.pkg not in str(client.run(lambda: [m for m in __import__("sys").modules if "migproj" in m]))
    report = DaskExecutor(load_migrations(project.migrations), client=client).migrate(MigrateOptions(segments=6))
    assert report.applied == ["0002_widget_v2"] and report.totals()["rewritten"] == 200
    assert models.Widget.objects.get(widget_id="w00003").maker == "M3"
    after = widgets(project.table)
    assert len(after) == 200 and all(i["migrated"] == {"BOOL": True} for i in after)


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_a_task_whose_driver_lost_the_lock_writes_nothing(project: Project) -> None:
    """A driver killed with -9 leaves its tasks on a remote cluster: once its lock is gone (or expired),
    they must stop, since another run may take the table."""
    from dynorm.migrations.dask_executor import _segment_task, task_setup
    from dynorm.migrations.executor import SegmentJob

    load_v1(project, 400)
    project.write_models(**V2)
    project.makemigrations()
    executor = project.executor()
    op = executor.migrations[1].operations[0]
    ledger = executor.ledger()
    ledger.acquire("all", ttl=30)
    try:
        job = SegmentJob("0002_widget_v2", 0, op, executor.final_state.tables[op.table], project.table.table_name(),
                         MigrateOptions(), False, 2, ledger)
        setup = task_setup(job, 1, "unused")
        assert setup["lock_owner"] == ledger.owner
        first = _segment_task("run-l1", "0002#0", setup, 0)  # the lock is held: segment 0 runs
    finally:
        ledger.release()
    assert first["rewritten"] > 0 and not first["stopped"]
    second = _segment_task("run-l2", "0002#0", setup, 1)  # the driver is gone: segment 1 does not start
    assert second["stopped"] and second["rewritten"] == 0 and second["scanned"] == 0
    moved = sum(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))
    assert moved == first["rewritten"] < 400


def test_an_unreachable_scheduler_is_a_clear_error_before_any_write(project: Project) -> None:
    from dynorm.exceptions import ConfigurationError

    load_v1(project, 20)
    project.write_models(**V2)
    project.makemigrations()
    executor = DaskExecutor(load_migrations(project.migrations), scheduler="tcp://127.0.0.1:1", connect_timeout=2)
    with pytest.raises(ConfigurationError, match=r"cannot reach the Dask scheduler at tcp://127.0.0.1:1"):
        executor.migrate(MigrateOptions())
    assert all(i["PK"]["S"].startswith("v1#") for i in widgets(project.table))
    assert not [i for i in scan_all(project.table) if i["PK"]["S"] == "dynorm#migrations"
                and ("0002" in i["SK"]["S"] or i["SK"]["S"].startswith("lock#"))]


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_a_sigkilled_driver_leaves_no_worker_process_and_resumes(project: Project) -> None:
    load_v1(project, 3000)
    before = {i["widget_id"]["S"]: body(i) for i in widgets(project.table)}
    project.write_models(**V2)
    project.makemigrations()
    cfg = str(project.config())
    env = {**os.environ, "PYTHONPATH": f"{project.root}{os.pathsep}{REPO}"}
    cmd = [sys.executable, "-m", "dynorm", "--config", cfg, "migrate", "--executor", "dask", "--dask-workers", "2",
           "--json"]
    proc = subprocess.Popen(cmd, env=env, cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if '"event": "progress"' in line and '"rewritten": 0' not in line:
                break
        proc.kill()  # the driver only: its workers are orphaned
        proc.wait(timeout=30)
        deadline = time.monotonic() + 60
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = _group_alive(proc.pid)
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    assert not left, left
    finish = subprocess.run([*cmd, "--force-unlock"], env=env, cwd=project.root, capture_output=True, text=True,
                            timeout=300)
    assert finish.returncode == 0, finish.stderr[-3000:]
    after = widgets(project.table)
    assert len(after) == 3000 and {i["widget_id"]["S"]: body(i) for i in after} == before
    assert len(_applied(project, "0002_widget_v2")) == 1


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_verify_counts_with_parallel_select_count_scans(project: Project) -> None:
    import dynorm

    load_v1(project, 300)
    project.write_models(**V2)
    project.makemigrations()
    executor = project.executor()
    executor.migrate(MigrateOptions(segments=2, worker=(0, 2)))  # half the segments: a partial move
    with dynorm.capture() as c:
        ok, rows = verify(project.executor(), "0002", segments=3)
    moved = sum(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))
    assert not ok and (rows[0].old, rows[0].new) == (300 - moved, moved) and 0 < moved < 300
    scans = [r for r in c.requests if r.operation == "Scan"]
    assert c.operations.count("Scan") == len(scans) == 6 and set(c.operations) == {"DescribeTable", "Query", "Scan"}
    assert all(r.params["Select"] == "COUNT" and r.params["ConsistentRead"] and "Limit" not in r.params
               for r in scans)
    assert sorted(r.params["Segment"] for r in scans) == [0, 0, 1, 1, 2, 2]
    assert verify(project.executor(), "0002", mode="copy")[0] is False  # not applied yet
    project.executor().migrate(MigrateOptions(segments=2, worker=(1, 2)))
    ok, rows = verify(project.executor(), "0002")
    assert ok and (rows[0].old, rows[0].new) == (0, 300)
    with pytest.raises(Exception, match="no migration"):
        verify(project.executor(), "0009")


# -- per-run settings on shared workers, a dead driver's tasks, verify, scheduler addresses, counts --
@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_two_runs_on_one_worker_process_do_not_swap_endpoints(project: Project) -> None:
    """A task reconfigures its *process-wide* settings (`conf.configure(endpoint=...)`) when they differ
    from its driver's. Two drivers sharing one cluster (the code keeps one progress topic per run for
    that) whose workers have 2+ threads: run B's task switches the endpoint under run A's running task,
    whose next pages, writes and checkpoints go to B's database (e.g. staging vs prod, or two regions
    with the same table name). Simulated here: two tasks in one process, as two threads of a worker."""
    from dynorm import conf
    from dynorm.local import LocalDynamoDB

    n = 300
    load_v1(project, n)
    project.write_models(**V2)
    project.makemigrations()
    executor = project.executor()
    executor.migrate(MigrateOptions(target="0001"))
    op = executor.migrations[1].operations[0]
    table = executor.final_state.tables[op.table]
    physical = project.table.table_name()
    items_a = [i for i in widgets(project.table)]

    def job(ledger: Any) -> SegmentJob:
        return SegmentJob("0002_widget_v2", 0, op, table, physical, MigrateOptions(max_wcu=240), False, 1, ledger)

    setup_a = task_setup(job(executor.ledger()), 1, "unused")
    first = conf.get_settings().endpoint
    with LocalDynamoDB() as other:
        try:
            conf.configure(endpoint=other.endpoint)  # driver B: same app, same table name, another database
            project.table.create_table(wait=True)
            for item in items_a[:50]:
                backend.call("PutItem", {"TableName": physical, "Item": item})
            setup_b = task_setup(job(project.executor().ledger()), 1, "unused")
            conf.configure(endpoint=first)
            out: dict[str, Any] = {}
            a = threading.Thread(target=lambda: out.update(a=_segment_task("run-a", "0002#0", setup_a, 0)))
            a.start()
            time.sleep(2.0)  # A is mid-segment (paced) when B's task starts in the same process
            out["b"] = _segment_task("run-b", "0002#0", setup_b, 0)
            a.join(timeout=120)
        finally:
            conf.configure(endpoint=first)
    left_a = [i for i in widgets(project.table) if i["PK"]["S"].startswith("v1#")]
    assert out["a"]["failed"] == 0 and not out["a"]["stopped"]
    assert left_a == [], f"run A reported done, {len(left_a)} of its {n} items are still at v1 in its own database"


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_a_dask_task_of_a_dead_driver_stops_before_its_lock_expires(project: Project) -> None:
    """docs/migrations.md: a run stops "before another run could take the expired lock: there are never
    two writers". The threads engine stops 1/6 TTL *before* expiry; a Dask task of a driver killed with
    -9 (remote --scheduler) only stops once it sees the lock *expired* (checked every TTL/6), so a new
    run that takes the expired lock writes alongside it for up to TTL/6 (10 s with the default TTL)."""
    load_v1(project, 600)
    project.write_models(**V2)
    project.makemigrations()
    executor = project.executor()
    executor.migrate(MigrateOptions(target="0001"))
    op = executor.migrations[1].operations[0]
    ttl = 30.0  # the task checks the lock every ttl/6 = 5 s
    ledger = executor.ledger()
    ledger.acquire("all", ttl=ttl)
    expires_at = time.time() + ttl
    job = SegmentJob("0002_widget_v2", 0, op, executor.final_state.tables[op.table], project.table.table_name(),
                     MigrateOptions(lock_ttl=ttl, max_wcu=60), False, 1, ledger)
    setup = task_setup(job, 1, "unused")
    ledger._stop.set()  # the driver is SIGKILLed: no more heartbeats, the lock is not released
    ledger._heartbeat.join()
    started: list[float] = []
    # the driver dies at an arbitrary moment: here the task starts 3 s before its stop deadline (the
    # lock's expiry minus ttl/6), time for its first writes: a paced task's bucket starts empty, so
    # its first transaction waits up to a second (60 WCU/s)
    time.sleep(max(0.0, expires_at - 3.0 - ttl / 6 - time.time()))
    with Hook("before-call.dynamodb.TransactWriteItems", lambda **kw: started.append(time.time())):
        out: dict[str, Any] = {}

        def run_task() -> None:
            out.update(_segment_task("zombie", "0002#0", setup, 0))
            out["end"] = time.time()

        task = threading.Thread(target=run_task, daemon=True)
        task.start()
        other = Ledger(ledger.table, ledger.name)
        while True:  # the next run takes the lock the moment it expires
            time.sleep(0.05)
            if time.time() > expires_at + 0.05:
                try:
                    other.acquire("all", ttl=60)
                    break
                except Exception:  # noqa: BLE001 - not expired yet
                    continue
        taken = time.time()
        task.join(timeout=60)
        other.release()
    assert started and started[0] < taken  # the task was writing before
    after = [t for t in started if t > taken]
    assert after == [], f"{len(after)} transaction(s) sent by the dead driver's task after another run took the lock"


_SK_VERSION_SRC = '''
from dynorm import Entity, fields
from {pkg}.tables import MigShop

class Widget(Entity):
    widget_id = fields.String()
    maker = fields.String()

    class Meta:
        table = MigShop
        entity_type = "WIDGET"
        key_version = "{version}"
        pk = {pk!r}
        sk = {sk!r}
'''


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
@pytest.mark.parametrize("pk,sk", [("W#{widget_id}", "{version}#METADATA"), ("W#{widget_id}#{version}", "METADATA")])
def test_verify_is_not_ok_when_items_are_left_at_the_old_version_outside_the_pk_prefix(
        project: Project, pk: str, sk: str) -> None:
    """docs: "In move mode no item may be left at the old version" / exit 1 on a mismatch. When the key
    version is not in the partition key's constant prefix (in the SK, or after a variable), --verify
    counts every item twice, adds a note and answers ok (exit 0) even with items left at v1."""
    models = project.write_models_source(_SK_VERSION_SRC.format(pkg=project.pkg, version="v1", pk=pk, sk=sk))
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i}", maker="x") for i in range(20)])
    project.write_models_source(_SK_VERSION_SRC.format(pkg=project.pkg, version="v2", pk=pk, sk=sk))
    name = project.makemigrations().name
    project.executor().migrate(MigrateOptions())
    # an application instance still at v1 creates 3 items at the old keys after the move
    for i in range(3):
        key = {"PK": {"S": pk.format(widget_id=f"late{i}", version="v1")}, "SK": {"S": sk.format(version="v1")}}
        backend.call("PutItem", {"TableName": project.table.table_name(), "Item": {
            **key, "entityType": {"S": "WIDGET"}, "widget_id": {"S": f"late{i}"}, "maker": {"S": "x"}}})
    left = [i for i in widgets(project.table) if "v1" in i["PK"]["S"] + i["SK"]["S"]]
    assert len(left) == 3
    ok, rows = verify(project.executor(), name)
    assert not ok, rows


def test_a_scheduler_address_that_is_not_a_dask_scheduler_is_a_configuration_error(project: Project) -> None:
    """--scheduler pointing at another server (here DynamoDB Local's own port, an HTTP server) fails as
    "Error: unexpected MemoryError:" (msgpack reading an HTTP answer as a frame length). Expected: the
    same clear ConfigurationError as an unreachable scheduler, naming the address."""
    from dynorm import conf
    from dynorm.exceptions import ConfigurationError
    from dynorm.migrations.dask_executor import DaskExecutor
    from dynorm.migrations.loader import load_migrations

    load_v1(project, 10)
    project.write_models(**V2)
    project.makemigrations()
    endpoint = conf.get_settings().endpoint  # http://127.0.0.1:<port>
    address = "tcp://" + endpoint.split("://", 1)[1]
    executor = DaskExecutor(load_migrations(project.migrations), scheduler=address, connect_timeout=10)
    with pytest.raises(ConfigurationError, match="scheduler"):
        executor.migrate(MigrateOptions())
    assert all(i["PK"]["S"].startswith("v1#") for i in widgets(project.table))


@pytest.mark.parametrize("address", ["", "http://", "http://127.0.0.1:8786", "tcp://127.0.0.1", "tcp://127.0.0.1:0",
                                     "tcp://127.0.0.1:70000", "tcp://host name:8786", "tcp://127.0.0.1:8786/x"])
def test_a_malformed_scheduler_address_is_refused_without_connecting(address: str) -> None:
    from dynorm.exceptions import ConfigurationError

    with pytest.raises(ConfigurationError, match="not a Dask scheduler address"):
        scheduler_address(address)
    assert scheduler_address("10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    assert scheduler_address("tls://[::1]:8786") == "tls://[::1]:8786"


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_the_report_counts_every_item_moved_once_when_a_worker_is_killed(project: Project) -> None:
    """A worker SIGKILLed mid-segment: the items it moved after its last progress event (sent every
    0.5 s) are moved (gone from v1, so the retry does not count them again) but never counted. The
    report and the ledger's applied record then say fewer items were rewritten than were moved."""
    import os
    import signal

    from dynorm.migrations.dask_executor import DaskExecutor
    from dynorm.migrations.loader import load_migrations

    n = 3000
    load_v1(project, n)
    project.write_models(**V2)
    project.makemigrations()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0", silence_logs=40) as cluster, \
            distributed.Client(cluster, timeout=60) as client:
        client.wait_for_workers(2, timeout=120)
        pids = client.run(os.getpid)
        killed: dict[str, Any] = {}

        def reporter(label: str, counts: dict[str, int], seconds: float, final: bool) -> None:
            if killed or final or counts["rewritten"] < n // 5:
                return
            busy = [addr for addr, keys in client.processing().items() if keys and addr in pids]
            if busy:
                time.sleep(0.3)  # between two progress events of that worker's task
                killed["pid"] = pids[busy[0]]
                os.kill(killed["pid"], signal.SIGKILL)

        report = DaskExecutor(load_migrations(project.migrations), reporter=reporter, client=client).migrate(
            MigrateOptions(segments=8))
    assert killed and report.applied == ["0002_widget_v2"]
    after = widgets(project.table)
    assert len(after) == n and all(i["PK"]["S"].startswith("v2#") for i in after)  # 0 lost, 0 duplicated
    assert report.totals()["rewritten"] == n, report.totals()


def _count_v2(project: Project) -> int:
    n, params = 0, {"TableName": project.table.table_name(), "Select": "COUNT", "ConsistentRead": True,
                    "FilterExpression": "begins_with(PK, :p)", "ExpressionAttributeValues": {":p": {"S": "v2#W#"}}}
    while True:
        resp = backend.call("Scan", params)
        n += resp["Count"]
        if "LastEvaluatedKey" not in resp:
            return n
        params["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_max_wcu_holds_when_the_schedulers_workers_join_after_the_start(project: Project) -> None:
    """`--scheduler` of a cluster that is still starting (no worker registered yet, as with a fresh
    FargateCluster), fixed size 3: the driver counts max(1, 0) = 1 worker, so each of the 3 workers that
    then join paces at the whole budget. Measured with the CLI: --max-wcu 600 moved 1,500 items
    (~9,000 WCU) in ~8 s (~1,100 WCU/s, 1-s peaks ~1,700). Here: 600 items (~3,600 WCU) at --max-wcu 120
    must take >= 28 s."""
    from dynorm.migrations.dask_executor import DaskExecutor
    from dynorm.migrations.loader import load_migrations

    n, budget = 600, 120.0
    load_v1(project, n)
    project.write_models(**V2)
    project.makemigrations()
    with distributed.LocalCluster(n_workers=0, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0", silence_logs=40) as cluster:
        executor = DaskExecutor(load_migrations(project.migrations), scheduler=cluster.scheduler_address,
                                segments_per_worker=4)
        result: dict[str, Any] = {}
        run = threading.Thread(target=lambda: result.update(report=executor.migrate(MigrateOptions(max_wcu=budget))))
        run.start()
        time.sleep(2.0)
        cluster.scale(3)  # the cluster's fixed size; its workers register after the run started
        samples = []
        deadline = time.monotonic() + 240
        while run.is_alive() and time.monotonic() < deadline:
            samples.append((time.monotonic(), _count_v2(project)))
            time.sleep(0.5)
        run.join(timeout=60)
    samples.append((time.monotonic(), _count_v2(project)))
    assert result["report"].applied == ["0002_widget_v2"] and samples[-1][1] == n
    first = next(t for t, c in samples if c > 0)
    last = next(t for t, c in samples if c == n)
    # n items x 6 WCU at `budget` per second, one second of burst
    assert last - first >= (n * 6 - budget) / budget - 1.0, f"moved {n} items in {last - first:.1f} s"
