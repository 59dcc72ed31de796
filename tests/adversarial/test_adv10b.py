"""Adversarial tests for issue 10 (catch-up, DeleteVersion check, read_versions transactions): adv10b."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

import dynorm
from dynorm import backend
from dynorm.migrations.executor import MigrateOptions
from tests.faults import Hook
from tests.migproject import V1, V2, Project, load_v1, widgets

DROP_V1 = '''
from dynorm.migrations import operations as ops
dependencies = ["0002_widget_v2"]
operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="v1",
                                pk="{{version}}#W#{{widget_id}}"{extra})]
'''


def _raw(project: Project, version: str, wid: str) -> dict[str, Any] | None:
    for i in widgets(project.table):
        if i["PK"]["S"] == f"{version}#W#{wid}":
            return i
    return None


def _copy_rollout(project: Project, n: int) -> None:
    load_v1(project, n)
    project.write_models(**V2)
    project.makemigrations()
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == ["0002_widget_v2"]


def test_delete_version_drops_a_v1_update_made_after_the_copy(project: Project) -> None:
    """Copy-mode rollout; an app still on v1 updates an item (acknowledged) after its v2 copy exists.
    DeleteVersion checks only that a copy EXISTS (key projection), not that it is this revision:
    it deletes the newer v1 item and the acknowledged update is gone for good."""
    _copy_rollout(project, 10)
    v1 = project.write_models(**V1)
    v1.Widget.objects.filter(widget_id="w00003").update(maker="updated-by-v1-app")  # acknowledged
    assert _raw(project, "v1", "w00003")["maker"]["S"] == "updated-by-v1-app"
    v2 = project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1.format(extra="")))
    try:
        project.executor().migrate(MigrateOptions())
    except Exception:
        pass  # refusing would be fine
    makers = [i["maker"]["S"] for i in widgets(project.table) if i["widget_id"]["S"] == "w00003"]
    assert "updated-by-v1-app" in makers, makers
    assert v2.Widget.objects.get(widget_id="w00003").maker == "updated-by-v1-app"


def test_delete_on_a_v2_instance_during_copy_rollout_is_not_resurrected(project: Project) -> None:
    """v2 app with read_versions=[v2, v1] after a copy: get() finds the v2 copy, delete() acknowledges;
    the v1 item is still there, so get() falls back and returns the deleted item."""
    _copy_rollout(project, 10)
    v2 = project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    w = v2.Widget.objects.get(widget_id="w00005")
    w.delete()  # acknowledged
    with pytest.raises(v2.Widget.DoesNotExist):
        v2.Widget.objects.get(widget_id="w00005")


def test_a_hung_lock_heartbeat_lets_two_runs_write_at_once(project: Project) -> None:
    """--lock-ttl: the heartbeat only gives up when a renewal FAILS. A renewal request that hangs (a slow
    network, botocore's read timeout is 60 s) is never timed out against the lease: the lease expires, a
    second `migrate` takes the lock and runs, while the first one keeps writing."""
    import threading
    import time

    from dynorm.migrations.ledger import MigrationLocked

    load_v1(project, 120)
    project.write_models(**V2)
    project.makemigrations()
    sends: list[tuple[float, str]] = []
    hung = {"n": 0}

    def hang_heartbeat(request: Any, **kwargs: Any) -> None:
        if b"lock#" in request.body and b"SET #exp" in request.body and hung["n"] == 0:
            hung["n"] = 1
            time.sleep(4.0)  # the renewal request hangs (network), then goes through

    def record(request: Any, **kwargs: Any) -> None:
        sends.append((time.monotonic(), threading.current_thread().name))

    a_done: dict[str, Any] = {}

    def run_a() -> None:
        try:
            a_done["report"] = project.executor().migrate(MigrateOptions(segments=1, lock_ttl=1, max_wcu=30))
        except Exception as exc:  # noqa: BLE001
            a_done["error"] = exc

    with Hook("before-send.dynamodb.UpdateItem", hang_heartbeat), \
            Hook("before-send.dynamodb.TransactWriteItems", record):
        a = threading.Thread(target=run_a, name="runA")
        a.start()
        time.sleep(2.0)  # A's lease (1 s) has expired; A is still running
        b_start = time.monotonic()
        b_ok = True
        try:
            project.executor().migrate(MigrateOptions(segments=1, lock_ttl=60))
        except MigrationLocked:
            b_ok = False
        b_end = time.monotonic()
        a.join(timeout=120)
    a_threads = {name for t, name in sends if t < b_start}
    a_during_b = [t for t, name in sends if name in a_threads and b_start <= t <= b_end]
    assert not (b_ok and len(a_during_b) > 1), (b_ok, len(a_during_b), sorted(a_threads), a_done)
