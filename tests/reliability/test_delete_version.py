"""DeleteVersion's conditional transactional deletes: it deletes an old-version item only while that item
is unchanged since its current-version copy was checked, counts every item it deleted, and keeps to its
--plan and --max-wcu figures.

* ``--executor dask`` checks the copies in each task, page by page, as the threads engine does.
* An item without a revision token is kept when a raw writer changes it and sets a fresh token.
* The ledger's counts stay exact after a killed or interrupted run and after a lost response.
* An item an old-version application creates during the run is not left behind at the old version alone.
* ``migrate --plan`` bounds the write requests DeleteVersion sends under ``--max-wcu``.

The copy-revision rules (``_dynorm_rev_src``) and items too large to compare in one condition are in
tests/integration/test_delete_version_revisions.py; the catch-up pass and the copy check in
tests/integration/test_migration_completion.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any, Iterator

import botocore.exceptions
import pytest

from dynorm import backend
from dynorm.migrations.executor import MigrateOptions
from dynorm.migrations.loader import load_migrations
from tests.faults import Hook, deliver
from tests.migproject import REPO, V2, VERSION_LATE_MODELS, Project, load_v1, scan_all, widgets

DROP_V1 = '''
from dynorm.migrations import operations as ops
dependencies = ["0002_widget_v2"]
operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="v1",
                                pk="{{version}}#W#{{widget_id}}"{extra})]
'''

def _rollout(project: Project, n: int) -> None:
    load_v1(project, n)
    project.write_models(**V2)
    project.makemigrations()
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == ["0002_widget_v2"]


def _drop(project: Project, extra: str = "") -> None:
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1.format(extra=extra)))


def _at(project: Project, version: str) -> dict[str, dict[str, Any]]:
    return {i["widget_id"]["S"]: i for i in widgets(project.table) if i["PK"]["S"].startswith(version + "#")}


def _delete_txn(actions: list[dict[str, Any]]) -> bool:
    """A DeleteVersion transaction: Deletes, and the ledger's tally Update that counts them (fix10c)."""
    return bool(actions) and any("Delete" in a for a in actions) and all(
        "Delete" in a or "dynorm#migrations" in json.dumps(a) for a in actions)


def _v1_update(name: str, wid: str) -> None:
    """What a v1 application's update(maker="ack") sends: the change with a fresh revision token."""
    backend.call("UpdateItem", {
        "TableName": name, "Key": {"PK": {"S": f"v1#W#{wid}"}, "SK": {"S": "METADATA"}},
        "UpdateExpression": "SET maker = :v, #r = :r", "ExpressionAttributeNames": {"#r": "_dynorm_rev"},
        "ExpressionAttributeValues": {":v": {"S": "ack"}, ":r": {"S": "fresh-token-1"}}})


# -- the Dask executor checks the copies as the threads engine does -------------------------------------------

@pytest.fixture
def dask_client() -> Iterator[Any]:
    distributed = pytest.importorskip("distributed")
    # threads in this process: the botocore hooks of the test fire inside the tasks too
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address="127.0.0.1:0", silence_logs=40) as cluster, \
            distributed.Client(cluster, timeout=60) as client:
        yield client


def _dask(project: Project, client: Any) -> Any:
    from dynorm.migrations.dask_executor import DaskExecutor

    return DaskExecutor(load_migrations(project.migrations), client=client)


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_dask_delete_version_keeps_the_items_of_the_current_version(project: Project, dask_client: Any) -> None:
    """`migrate --executor dask`: each task builds its VersionDeleter without `copies`, so `at_version()` is
    always True and no copy is checked. With `{version}` after the partition-key prefix the Scan also reads
    the v2 items: every item of the entity (10 copies + one created by the v2 app) is deleted, exit 0."""
    def deploy(version: str) -> Any:
        return project.write_models_source(VERSION_LATE_MODELS.format(
            pkg=project.pkg, version=version, pk="W#{widget_id}#{version}", sk="METADATA"))

    m = deploy("v1")
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    for i in range(10):
        m.Widget.objects.create(widget_id=f"w{i}", maker="a")
    m = deploy("v2")
    project.makemigrations(name="v2")
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == ["0002_v2"]
    m.Widget.objects.create(widget_id="fresh", maker="created by the v2 app")
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent('''
        from dynorm.migrations import operations as ops
        dependencies = ["0002_v2"]
        operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="v1",
                                        pk="W#{widget_id}#{version}")]
    '''))
    _dask(project, dask_client).migrate(MigrateOptions(segments=2))
    stored = sorted(i["PK"]["S"] for i in widgets(project.table))
    assert len(stored) == 11 and all(pk.endswith("#v2") for pk in stored), stored  # got []
    assert m.Widget.objects.get(widget_id="fresh").maker == "created by the v2 app"


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_dask_delete_version_keeps_an_item_whose_copy_vanished_after_the_check(
        project: Project, dask_client: Any) -> None:
    """The driver checks the copies, then the tasks delete without the per-page re-check the thread engine
    does: an item whose v2 copy is deleted between the check and its page is deleted too (its only copy)."""
    _rollout(project, 30)
    _drop(project)
    name = project.table.table_name()
    done = {"n": 0}

    def drop_a_copy(request: Any, **kwargs: Any) -> None:
        if done["n"] == 0 and b"Limit" in request.body:  # the delete pass's first page (the check has no Limit)
            done["n"] = 1
            backend.call("DeleteItem", {"TableName": name, "Key": {"PK": {"S": "v2#W#w00004"},
                                                                   "SK": {"S": "METADATA"}}})

    with Hook("before-send.dynamodb.Scan", drop_a_copy):
        report = _dask(project, dask_client).migrate(MigrateOptions(segments=1))
    assert done["n"] == 1
    assert "w00004" in _at(project, "v1"), "the only copy of w00004 was deleted"
    assert report.partial == {"0003_drop_v1": 1}


@pytest.mark.slow(reason="starts a 3-process Dask LocalCluster (5-40 s each)")
def test_dask_delete_version_keeps_a_v1_write_made_after_the_check(project: Project, dask_client: Any) -> None:
    """A v1 application updates an item after the driver's check and before the task reads its page: the
    task deletes the new revision (no copy check in the task), the acknowledged write is lost for good."""
    _rollout(project, 30)
    _drop(project)
    name = project.table.table_name()
    done = {"n": 0}

    def old_app_writes(request: Any, **kwargs: Any) -> None:
        if done["n"] == 0 and b"Limit" in request.body:
            done["n"] = 1
            _v1_update(name, "w00007")

    with Hook("before-send.dynamodb.Scan", old_app_writes):
        report = _dask(project, dask_client).migrate(MigrateOptions(segments=1))
    assert done["n"] == 1
    kept = _at(project, "v1").get("w00007")
    assert kept is not None and kept["maker"] == {"S": "ack"}, "the acknowledged v1 write was deleted"
    assert report.partial == {"0003_drop_v1": 1}


# -- an item without a revision token: a raw write that sets a fresh token after the check ------------------

def test_delete_version_keeps_a_raw_write_to_a_tokenless_item_that_sets_a_fresh_token(project: Project) -> None:
    """docs/migrations.md: a raw write that ADDS an attribute to an item without a token cannot be detected
    by a condition (documented, as for a move); a raw writer that also sets a fresh `_dynorm_rev`, as the
    docs ask, is detected: the item is kept and the migration stays partial."""
    _rollout(project, 30)
    name = project.table.table_name()
    for pk in ("v1#W#w00007", "v2#W#w00007"):  # written by another writer: no token at either version
        backend.call("UpdateItem", {"TableName": name, "Key": {"PK": {"S": pk}, "SK": {"S": "METADATA"}},
                                    "UpdateExpression": "REMOVE #r", "ExpressionAttributeNames": {"#r": "_dynorm_rev"}})
    _drop(project)
    done = {"n": 0}

    def raw_write(request: Any, **kwargs: Any) -> None:
        actions = json.loads(request.body).get("TransactItems", [])
        if done["n"] == 0 and actions and any("Delete" in a for a in actions):
            done["n"] = 1
            backend.call("UpdateItem", {"TableName": name, "Key": {"PK": {"S": "v1#W#w00007"}, "SK": {"S": "METADATA"}},
                                        "UpdateExpression": "SET extra_note = :v, #r = :r",
                                        "ExpressionAttributeNames": {"#r": "_dynorm_rev"},
                                        "ExpressionAttributeValues": {":v": {"S": "acknowledged"},
                                                                      ":r": {"S": "a-fresh-raw-token"}}})

    with Hook("before-send.dynamodb.TransactWriteItems", raw_write):
        report = project.executor().migrate(MigrateOptions(segments=1))
    assert done["n"] == 1
    kept = _at(project, "v1").get("w00007")
    assert kept is not None and kept.get("extra_note") == {"S": "acknowledged"}, "the raw write was deleted"
    assert report.partial == {"0003_drop_v1": 1}


# -- the ledger's counts after an interruption or a lost response ----------------------------------------------

@pytest.mark.slow(reason="signals a real migrate process mid-run, then re-runs it (18-23 s per signal)")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT])
def test_delete_version_counts_every_deleted_item_after_an_interrupted_run(project: Project, signum: int) -> None:
    """A run stopped mid-page (kill -9, or Ctrl-C at a checkpoint within the page) deleted items whose
    count was never saved (no tally in the delete transactions); the re-run does not see them: the applied
    record says 300 deleted where 400 were."""
    n = 400
    _rollout(project, n)
    _drop(project)
    cfg = project.config()
    env = {**os.environ, "PYTHONPATH": f"{project.root}{os.pathsep}{REPO}"}
    cmd = [sys.executable, "-m", "dynorm", "--config", str(cfg), "migrate", "--segments", "2", "--max-wcu", "150"]
    proc = subprocess.Popen(cmd, env=env, cwd=project.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_at(project, "v1")) > n - 60:
        time.sleep(0.2)
    proc.send_signal(signum)
    proc.wait(timeout=60)
    assert 0 < len(_at(project, "v1")) < n  # stopped midway
    finish = subprocess.run([*cmd, "--force-unlock"], env=env, cwd=project.root, capture_output=True, text=True,
                            timeout=300)
    assert finish.returncode == 0, finish.stdout + finish.stderr
    assert _at(project, "v1") == {} and len(_at(project, "v2")) == n
    applied = [i for i in scan_all(project.table) if i["PK"]["S"] == "dynorm#migrations"
               and i["SK"]["S"] == "applied#0003_drop_v1"]
    assert json.loads(applied[0]["counts"]["S"])["rewritten"] == n


def test_delete_version_counts_an_item_whose_delete_response_was_lost(project: Project) -> None:
    """A v1 write cancels a delete transaction; its items are settled one by one; one settle's response is
    lost (applied, then a connection error: botocore retries). With a bare DeleteItem the retry got
    ConditionalCheckFailed: the item was deleted but never counted (28 of 29 deletions reported). Since
    fix10c a settle is TransactWriteItems([Delete, tally]) whose retry carries the same ClientRequestToken."""
    n = 30
    _rollout(project, n)
    _drop(project)
    name = project.table.table_name()
    st = {"w": 0, "d": 0}

    def old_app_writes(request: Any, **kwargs: Any) -> None:
        actions = json.loads(request.body).get("TransactItems", [])
        if st["w"] == 0 and _delete_txn(actions) and sum("Delete" in a for a in actions) > 1:
            st["w"] = 1
            _v1_update(name, "w00007")

    def lose(request: Any, **kwargs: Any) -> None:
        actions = json.loads(request.body).get("TransactItems")  # None: a DeleteItem
        one = actions is None or (st["w"] == 1 and _delete_txn(actions) and sum("Delete" in a for a in actions) == 1)
        if st["d"] == 0 and one and b"v1#W#w000" in request.body:
            st["d"] = 1
            deliver(request)
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    with Hook("before-send.dynamodb.TransactWriteItems", old_app_writes), \
            Hook("before-send.dynamodb.TransactWriteItems", lose), Hook("before-send.dynamodb.DeleteItem", lose):
        report = project.executor().migrate(MigrateOptions(segments=1))
    assert st == {"w": 1, "d": 1}
    assert set(_at(project, "v1")) == {"w00007"} and report.partial == {"0003_drop_v1": 1}
    assert report.operations[-1].counts["rewritten"] == n - 1


# -- an item the old-version app creates during DeleteVersion, after the scan passed it ----------------------

def test_delete_version_leaves_no_v1_item_created_during_the_run_alone_at_v1(project: Project) -> None:
    """Move mode has a catch-up pass for exactly this; DeleteVersion has none. A v1 application's acknowledged
    create() during the delete pass (after the scan passed its position) stays at v1 with no v2 copy, the
    migration is recorded applied (a re-run does nothing) and the v2 models never see the item."""
    from tests.migproject import V1

    _rollout(project, 30)
    W1 = project.write_models(**V1).Widget
    _drop(project)
    done = {"n": 0}

    def old_app_creates(request: Any, **kwargs: Any) -> None:
        actions = json.loads(request.body).get("TransactItems", [])
        if done["n"] == 0 and _delete_txn(actions):
            done["n"] = 1
            W1.objects.create(widget_id="late0", maker="acknowledged")

    with Hook("before-send.dynamodb.TransactWriteItems", old_app_creates):
        report = project.executor().migrate(MigrateOptions(segments=1))
    assert done["n"] == 1
    # either it is found and reported (partial, like move mode's catch-up) or it is not stranded at v1 alone
    assert report.partial == {"0003_drop_v1": 1} or "late0" in _at(project, "v2"), \
        (report.applied, "late0 stranded at v1")


# -- --plan's write-request figure for DeleteVersion under --max-wcu ---------------------------------------------

@pytest.mark.slow(reason="paced by --max-wcu in real seconds (10 s)")
def test_plan_write_requests_bound_what_delete_version_sends_under_max_wcu(project: Project) -> None:
    """docs: "with --max-wcu 30 they go 10 at a time"; --plan promises upper bounds, yet counts requests as
    if every transaction held 100 Deletes: it says <= 3 write requests, the run sends 11."""
    import re

    from click.testing import CliRunner

    from dynorm.cli import cli

    _rollout(project, 100)
    _drop(project)
    plan = CliRunner().invoke(cli, ["--config", str(project.config()), "migrate", "--plan", "--max-wcu", "30"])
    found = re.search(r"writes: <= (\d+) write request", plan.output)
    assert found, plan.output
    sent: list[int] = []

    def deletes(request: Any, **kwargs: Any) -> None:
        actions = json.loads(request.body).get("TransactItems", [])
        if _delete_txn(actions):
            sent.append(sum("Delete" in a for a in actions))

    with Hook("before-send.dynamodb.TransactWriteItems", deletes):
        project.executor().migrate(MigrateOptions(segments=1, max_wcu=30))
    assert sum(sent) == 100
    assert len(sent) <= int(found.group(1)), (found.group(0), sent)
