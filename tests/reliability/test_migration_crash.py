"""A migration killed with SIGKILL at random moments, or stopped with SIGINT/SIGTERM, then finished:
nothing lost or duplicated."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from click.testing import CliRunner

from dynorm.migrations.executor import MigrateOptions
from dynorm.migrations.ledger import MigrationLocked
from tests.faults import Hook, fake_response
from tests.migproject import REPO, V2, Project, body, load_v1, scan_all, widgets


@pytest.mark.slow(reason="SIGKILLs real migrate processes at random moments (21 s)")
def test_kill_minus_9_at_random_moments_then_finish(project: Project) -> None:
    load_v1(project, 5000)
    before = {i["widget_id"]["S"]: body(i) for i in widgets(project.table)}
    project.write_models(**V2)
    project.makemigrations()
    cfg = project.config()
    env = {**os.environ, "PYTHONPATH": f"{project.root}{os.pathsep}{REPO}"}
    cmd = [sys.executable, "-m", "dynorm", "--config", str(cfg), "migrate", "--segments", "4"]
    rng = random.Random(11)
    kills = 0
    for _ in range(8):
        proc = subprocess.Popen(cmd + ["--force-unlock"], env=env, cwd=project.root, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.5, 1.0))  # start-up takes ~0.3 s; a full run several seconds
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        if kills >= 5:
            break
    assert kills >= 5
    partial = widgets(project.table)
    assert any(i["PK"]["S"].startswith("v1#") for i in partial), "killed runs should leave work to resume"
    assert len(partial) == 5000  # a kill between Put and Delete cannot happen: they are one transaction
    # the lock of a killed run stays until it expires: clear it as an operator would
    finish = subprocess.run([*cmd, "--force-unlock"], env=env, cwd=project.root, capture_output=True, text=True,
                            timeout=300)
    assert finish.returncode == 0, finish.stderr + finish.stdout
    after = widgets(project.table)
    assert len(after) == 5000 and all(i["PK"]["S"].startswith("v2#") for i in after)  # 0 lost, 0 duplicated
    assert {i["widget_id"]["S"]: body(i) for i in after} == before
    applied = [i for i in scan_all(project.table) if i["PK"]["S"] == "dynorm#migrations"
               and i["SK"]["S"].startswith("applied#0002")]
    assert len(applied) == 1


@pytest.mark.slow(reason="signals real migrate processes, paced (15-18 s per case)")
@pytest.mark.parametrize("signum, code, pace", [(signal.SIGINT, 130, ["--max-wcu", "3000"]),
                                                (signal.SIGTERM, 143, [])])
def test_sigint_and_sigterm_stop_at_a_checkpoint_release_the_lock_and_resume(
        project: Project, signum: int, code: int, pace: list[str]) -> None:
    load_v1(project, 4000)
    before = {i["widget_id"]["S"]: body(i) for i in widgets(project.table)}
    project.write_models(**V2)
    project.makemigrations()
    cfg = project.config()
    env = {**os.environ, "PYTHONPATH": f"{project.root}{os.pathsep}{REPO}"}
    cmd = [sys.executable, "-m", "dynorm", "--config", str(cfg), "migrate", "--segments", "4", "--json", *pace]
    proc = subprocess.Popen(cmd, env=env, cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None
    for line in proc.stderr:  # the first progress line: the rekey is under way
        if '"event": "progress"' in line:
            break
    sent = time.monotonic()
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    stopped_after = time.monotonic() - sent
    assert proc.returncode == code, err
    assert stopped_after < 10, stopped_after  # ~0.2-0.5 s measured here; generous for a loaded machine
    assert "progress is saved and the lock released" in err and "Resume with:" in err
    resume = err.split("Resume with:")[1].strip().splitlines()[0]
    assert resume.startswith("dynorm --config") and "migrate --segments 4" in resume
    ledger = [i for i in scan_all(project.table) if i["PK"]["S"] == "dynorm#migrations"]
    assert not any(i["SK"]["S"].startswith("lock#") for i in ledger)  # released
    assert not any(i["SK"]["S"] == "applied#0002_widget_v2" for i in ledger)
    assert any(i["SK"]["S"].startswith("checkpoint#0002_widget_v2#0#") for i in ledger)  # progress recorded
    partial = widgets(project.table)
    assert len(partial) == 4000 and any(i["PK"]["S"].startswith("v1#") for i in partial)
    shown = subprocess.run([sys.executable, "-m", "dynorm", "--config", str(cfg), "showmigrations"], env=env,
                           cwd=project.root, capture_output=True, text=True, timeout=120)
    assert "[~] 0002_widget_v2 (interrupted" in shown.stdout, shown.stdout
    finish = subprocess.run([sys.executable, "-m", *resume.split()], env=env,
                            cwd=project.root, capture_output=True, text=True, timeout=300)
    assert finish.returncode == 0, finish.stderr + finish.stdout
    after = widgets(project.table)
    assert len(after) == 4000 and all(i["PK"]["S"].startswith("v2#") for i in after)
    assert {i["widget_id"]["S"]: body(i) for i in after} == before


# -- an interrupted reverse; a failed heartbeat and the lock ------------------------------------
def test_an_interrupted_reverse_is_not_shown_applied_nor_no_op_forwards(project: Project) -> None:
    """Ctrl-C during `migrate 0001`: part of the items are back at v1. `showmigrations` still says
    [X] 0002 and a forward `migrate` says "No migrations to apply", leaving them at v1 for good
    (unless the operator happens to re-run the reverse)."""
    import threading

    from dynorm.cli import cli
    from dynorm.migrations.executor import MigrationInterrupted

    load_v1(project, 400)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    stop = threading.Event()
    sent = {"n": 0}

    def stop_after_two(**kwargs: Any) -> None:
        sent["n"] += 1
        if sent["n"] == 2:
            stop.set()

    with Hook("after-call.dynamodb.TransactWriteItems", stop_after_two):
        with pytest.raises(MigrationInterrupted):
            project.executor().migrate(MigrateOptions(target="0001", segments=1, stop=stop))
    at_v1 = sum(i["PK"]["S"].startswith("v1#") for i in widgets(project.table))
    assert 0 < at_v1 < 400
    cfg = str(project.config())
    shown = CliRunner().invoke(cli, ["--config", cfg, "showmigrations"])
    assert "[X] 0002_widget_v2" not in shown.output, shown.output
    forward = CliRunner().invoke(cli, ["--config", cfg, "migrate"])
    after = widgets(project.table)
    assert "No migrations to apply" not in forward.output and all(i["PK"]["S"].startswith("v2#") for i in after), \
        (forward.output, sum(i["PK"]["S"].startswith("v1#") for i in after))


def test_one_failed_heartbeat_does_not_let_a_second_run_take_the_lock(project: Project) -> None:
    """The lock heartbeat thread returns for good on its first error (one throttled or failed
    UpdateItem), while the migration goes on: the lock expires and a second `migrate` runs at the
    same time on the same table."""
    import threading
    import time

    load_v1(project, 60)
    project.write_models(**V2)
    project.makemigrations()
    failed = {"n": 0}

    def fail_first_heartbeat(request: Any, **kwargs: Any) -> Any:
        if failed["n"] == 0 and b"lock#" in request.body and b"expires_at" in request.body:
            failed["n"] = 1
            return fake_response(400, {"__type": "com.amazonaws.dynamodb.v20120810#ValidationException",
                                       "Message": "injected: one failed heartbeat"})
        return None

    outcome: dict[str, Any] = {}

    def second_run() -> None:
        time.sleep(4.0)  # the first run is still pacing its writes; its lock (ttl 1.5 s) must still be held
        try:
            outcome["report"] = project.executor().migrate(MigrateOptions(segments=1, lock_ttl=1.5))
        except MigrationLocked as exc:
            outcome["locked"] = exc

    t = threading.Thread(target=second_run)
    with Hook("before-send.dynamodb.UpdateItem", fail_first_heartbeat):
        t.start()
        first = project.executor().migrate(MigrateOptions(segments=1, lock_ttl=1.5, max_wcu=40))
    t.join(60)
    assert failed["n"] == 1 and first.applied == ["0002_widget_v2"]
    assert "locked" in outcome, outcome  # actual: the second run acquired the lock and ran
