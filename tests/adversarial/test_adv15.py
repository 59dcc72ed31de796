"""Adversarial tests for issue 15 (``dynorm migrate --executor dask`` and ``--verify``).

Each test fails on the code it was written against and passes once the bug is fixed.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from typing import Any

import pytest

from dynorm import backend
from dynorm.migrations.executor import MigrateOptions, SegmentJob
from dynorm.migrations.ledger import Ledger
from dynorm.migrations.verify import verify
from tests.faults import Hook
from tests.migproject import V2, Project, load_v1, widgets

distributed = pytest.importorskip("distributed")
from dynorm.migrations.dask_executor import _segment_task, task_setup  # noqa: E402

pytestmark = pytest.mark.dynamodb_local_only("migrations need DynamoDB Local")


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
    # the driver dies at an arbitrary moment: here its lock expires ~0.5 s after the task's first check
    # (the task checks every ttl/6 = 5 s, at 0.5 s granularity)
    time.sleep(max(0.0, expires_at - 1.0 - ttl / 6 - time.time()))
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
