"""The requests and the ledger of every migration path, pinned exactly.

Each path (forwards, backwards, fake, plan, dry run, verify, resume after a stop, ``--worker``
splits, ``--resolve``, RunPython, DeleteVersion) is run on a small table and compared with the
figures recorded before the operations took their behaviour onto themselves (issue 23), then once
for the key-version record (one GetItem and one conditional PutItem of ``keyversions`` each time a
migration that rekeys or deletes a version is recorded applied, un-recorded or forgotten): how many
requests of each kind were sent, and what the ledger partition holds afterwards (sort keys, done
flags, the counts of operation checkpoints and applied records; per-segment counts are left out:
the segments' threads share one counter, so what a segment saw is timing, not behaviour).

``PIN_RECORD=1`` prints the figures instead of comparing them (to record them again after an
intended change of behaviour).
"""

from __future__ import annotations

import dataclasses
import json
import os
import textwrap
import threading
from collections import Counter
from typing import Any

import pytest

import dynorm
from dynorm import backend
from dynorm.migrations.executor import MigrateOptions, MigrationInterrupted
from dynorm.migrations.verify import verify
from tests.faults import Hook
from tests.migproject import V2, Project, load_v1, scan_all

pytestmark = pytest.mark.dynamodb_local_only("migrations need DynamoDB Local")

LEDGER_PK = "dynorm#migrations"


def _ledger(project: Project) -> list[list[Any]]:
    """The ledger partition: ``[sk, done, counts]`` per item (lock items and times left out)."""
    out = []
    for item in scan_all(project.table):
        if item["PK"]["S"] != LEDGER_PK or item["SK"]["S"].startswith("lock#"):
            continue
        sk = item["SK"]["S"]
        segment = sk.startswith("checkpoint#") and sk.rsplit("#", 1)[1].isdigit()
        counts = None if segment else json.loads(item.get("counts", {}).get("S", "null"))
        if sk.startswith("tally#"):
            counts = int(item.get("rewritten", {}).get("N", "0"))
        out.append([sk, item.get("done", {}).get("BOOL"), counts])
    return sorted(out)


def _requests(c: Any, polls: bool = True) -> dict[str, int]:
    """Requests by kind; ``polls=False`` leaves DescribeTable out (waits poll it a varying number of times)."""
    return dict(sorted(Counter(op for op in c.operations if polls or op != "DescribeTable").items()))


def _pin(name: str, got: Any, expected: Any) -> None:
    got = json.loads(json.dumps(got))
    if os.environ.get("PIN_RECORD"):
        print(f"PIN {name} = {got!r}")
        return
    assert got == expected, name


def _v2(project: Project, n: int = 120) -> None:
    load_v1(project, n)
    project.write_models(**V2)
    assert project.makemigrations().name == "0002_widget_v2"


def _drop_v1(project: Project, copy_missing: bool = False) -> None:
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(
        textwrap.dedent(f"""
        from dynorm.migrations import operations as ops
        dependencies = ["0002_widget_v2"]
        operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="v1",
                                        pk="{{version}}#W#{{widget_id}}", copy_missing={copy_missing})]
    """)
    )


def test_forwards_move(project: Project) -> None:
    _v2(project)
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions(segments=4))
    _pin(
        "forward.requests",
        _requests(c),
        {'DeleteItem': 1,
         'DescribeTable': 5,
         'GetItem': 7,
         'PutItem': 9,
         'Query': 13,
         'Scan': 8,
         'TransactWriteItems': 4},
    )
    _pin(
        "forward.totals", report.totals(), {"scanned": 120, "rewritten": 120, "skipped": 0, "conflicts": 0, "failed": 0}
    )
    _pin(
        "forward.ledger",
        _ledger(project),
        [['applied#0001_initial', None, {}],
         ['applied#0002_widget_v2',
          None,
          {'conflicts': 0, 'failed': 0, 'rewritten': 120, 'scanned': 120, 'skipped': 0}],
         ['checkpoint#0001_initial#0#op', True, {}],
         ['checkpoint#0002_widget_v2#0#0', True, None],
         ['checkpoint#0002_widget_v2#0#1', True, None],
         ['checkpoint#0002_widget_v2#0#2', True, None],
         ['checkpoint#0002_widget_v2#0#3', True, None],
         ['checkpoint#0002_widget_v2#0#meta', False, {'segments': 4}],
         ['checkpoint#0002_widget_v2#0#op',
          True,
          {'conflicts': 0, 'failed': 0, 'rewritten': 120, 'scanned': 120, 'skipped': 0}],
         ['keyversions', None, None]],
    )


def test_backwards_move(project: Project) -> None:
    _v2(project)
    project.executor().migrate(MigrateOptions(segments=4))
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions(segments=4, target="0001"))
    assert report.unapplied == ["0002_widget_v2"]
    _pin(
        "backward.requests",
        _requests(c),
        {'DeleteItem': 15,
         'DescribeTable': 7,
         'GetItem': 8,
         'PutItem': 9,
         'Query': 23,
         'Scan': 8,
         'TransactWriteItems': 4},
    )
    _pin(
        "backward.totals",
        report.totals(),
        {"scanned": 120, "rewritten": 120, "skipped": 0, "conflicts": 0, "failed": 0},
    )
    _pin(
        "backward.ledger",
        _ledger(project),
        [['applied#0001_initial', None, {}], ['checkpoint#0001_initial#0#op', True, {}], ['keyversions', None, None]],
    )


def test_fake_forwards_and_backwards(project: Project) -> None:
    _v2(project)
    with dynorm.capture() as c:
        project.executor().migrate(MigrateOptions(fake=True))
    _pin("fake.forward.requests", _requests(c), {'DeleteItem': 1,
                                                 'DescribeTable': 4,
                                                 'GetItem': 1,
                                                 'PutItem': 3,
                                                 'Query': 8})
    _pin(
        "fake.forward.ledger",
        _ledger(project),
        [['applied#0001_initial', None, {}],
         ['applied#0002_widget_v2', None, {}],
         ['checkpoint#0001_initial#0#op', True, {}],
         ['keyversions', None, None]],
    )
    with dynorm.capture() as c:
        project.executor().migrate(MigrateOptions(fake=True, target="0001"))
    _pin("fake.backward.requests", _requests(c), {'DeleteItem': 2,
                                                  'DescribeTable': 6,
                                                  'GetItem': 1,
                                                  'PutItem': 2,
                                                  'Query': 18})
    _pin(
        "fake.backward.ledger",
        _ledger(project),
        [['applied#0001_initial', None, {}], ['checkpoint#0001_initial#0#op', True, {}], ['keyversions', None, None]],
    )


def test_plan_estimates(project: Project) -> None:
    _v2(project)
    project.executor().migrate(MigrateOptions(mode="copy"))
    _drop_v1(project, copy_missing=True)
    executor = project.executor()
    ops = [op for m in executor.migrations for op in m.operations]
    got = {}
    with dynorm.capture() as c:
        for options in (MigrateOptions(), MigrateOptions(mode="copy", max_wcu=50.0, worker=(0, 2))):
            got[options.mode] = [
                None
                if (e := executor.estimate(op, options)) is None
                else {**dataclasses.asdict(e), "avg_size": round(e.avg_size)}
                for op in ops
            ]
    _pin("plan.requests", _requests(c), {"DescribeTable": 4})
    _pin(
        "plan.estimates",
        got,
        {'move': [None,
                  None,
                  {'items': 250,
                   'avg_size': 166,
                   'read_requests': 10,
                   'write_requests': 5,
                   'rcu': 27.5,
                   'wcu': 1749.0,
                   'catch_up_rcu': 14.0},
                  {'items': 250,
                   'avg_size': 166,
                   'read_requests': 32,
                   'write_requests': 38,
                   'rcu': 548.5,
                   'wcu': 1749.0,
                   'catch_up_rcu': 14.0}],
         'copy': [None,
                  None,
                  {'items': 250,
                   'avg_size': 166,
                   'read_requests': 6,
                   'write_requests': 84,
                   'rcu': 27.0,
                   'wcu': 879.0,
                   'catch_up_rcu': 0.0},
                  {'items': 250,
                   'avg_size': 166,
                   'read_requests': 32,
                   'write_requests': 227,
                   'rcu': 548.5,
                   'wcu': 1749.0,
                   'catch_up_rcu': 14.0}]},
    )


def test_dry_run(project: Project) -> None:
    _v2(project)
    before = _ledger(project)
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions(dry_run=True, segments=4))
    _pin("dry.requests", _requests(c), {"DescribeTable": 2, "Query": 2, "Scan": 4})
    _pin(
        "dry.report",
        [[o.migration, o.index, o.status, o.counts] for o in report.operations],
        [
            [
                "0002_widget_v2",
                0,
                "dry run",
                {"scanned": 120, "rewritten": 120, "skipped": 0, "conflicts": 0, "failed": 0},
            ]
        ],
    )
    assert _ledger(project) == before


def test_verify(project: Project) -> None:
    _v2(project)
    project.executor().migrate(MigrateOptions(mode="copy"))
    with dynorm.capture() as c:
        ok, rows = verify(project.executor(), "0002", mode="copy", segments=2)
    _pin("verify.requests", _requests(c), {"DescribeTable": 1, "Query": 2, "Scan": 4})
    _pin(
        "verify.rows",
        [
            ok,
            [
                {**dataclasses.asdict(r), "table": r.table.removeprefix(dynorm.conf.get_settings().table_prefix)}
                for r in rows
            ],
        ],
        [
            True,
            [
                {
                    "migration": "0002_widget_v2",
                    "table": "migshop",
                    "entity_type": "WIDGET",
                    "from_version": "v1",
                    "to_version": "v2",
                    "old": 120,
                    "new": 120,
                    "ok": True,
                    "note": "",
                    "constraint": "",
                    "problems": [],
                    "index_keys_checked": None,  # the key version changes: counted, not checked item by item
                    "stale_index_keys": 0,
                    "stale_examples": [],
                }
            ],
        ],
    )


def test_resume_after_a_stop(project: Project) -> None:
    _v2(project)
    stop = threading.Event()

    def stop_after_first(**kwargs: Any) -> None:
        stop.set()

    with dynorm.capture() as c:
        with Hook("after-call.dynamodb.TransactWriteItems", stop_after_first):
            with pytest.raises(MigrationInterrupted):
                project.executor().migrate(MigrateOptions(segments=1, stop=stop))
    _pin(
        "stop.requests",
        _requests(c),
        {
            "DeleteItem": 1,
            "DescribeTable": 5,
            "GetItem": 3,
            "PutItem": 2,
            "Query": 11,
            "Scan": 1,
            "TransactWriteItems": 1,
        },
    )
    _pin(
        "stop.ledger",
        _ledger(project),
        [
            ["applied#0001_initial", None, {}],
            ["checkpoint#0001_initial#0#op", True, {}],
            ["checkpoint#0002_widget_v2#0#meta", False, {"segments": 1}],
        ],
    )
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions(segments=1))
    assert report.applied == ["0002_widget_v2"]
    _pin(
        "resume.requests",
        _requests(c),
        {'DeleteItem': 1,
         'DescribeTable': 5,
         'GetItem': 4,
         'PutItem': 5,
         'Query': 13,
         'Scan': 2,
         'TransactWriteItems': 2},
    )
    _pin("resume.totals", report.totals(), {"scanned": 70, "rewritten": 70, "skipped": 0, "conflicts": 0, "failed": 0})
    _pin(
        "resume.ledger",
        _ledger(project),
        [['applied#0001_initial', None, {}],
         ['applied#0002_widget_v2',
          None,
          {'conflicts': 0, 'failed': 0, 'rewritten': 70, 'scanned': 70, 'skipped': 0}],
         ['checkpoint#0001_initial#0#op', True, {}],
         ['checkpoint#0002_widget_v2#0#0', True, None],
         ['checkpoint#0002_widget_v2#0#meta', False, {'segments': 1}],
         ['checkpoint#0002_widget_v2#0#op',
          True,
          {'conflicts': 0, 'failed': 0, 'rewritten': 70, 'scanned': 70, 'skipped': 0}],
         ['keyversions', None, None]],
    )


def test_worker_split(project: Project) -> None:
    _v2(project)
    for i in range(2):
        with dynorm.capture() as c:
            project.executor().migrate(MigrateOptions(segments=4, worker=(i, 2)))
        _pin(
            f"worker{i}.requests",
            _requests(c),
            [
                {
                    "DeleteItem": 1,
                    "DescribeTable": 6,
                    "GetItem": 4,
                    "PutItem": 4,
                    "Query": 12,
                    "Scan": 2,
                    "TransactWriteItems": 2,
                },
                {
                    "DeleteItem": 1,
                    "DescribeTable": 6,
                    "GetItem": 5,
                    "PutItem": 6,
                    "Query": 13,
                    "Scan": 6,
                    "TransactWriteItems": 2,
                },
            ][i],
        )
        _pin(
            f"worker{i}.ledger",
            _ledger(project),
            [
                [
                    ["applied#0001_initial", None, {}],
                    ["checkpoint#0001_initial#0#op", True, {}],
                    ["checkpoint#0002_widget_v2#0#0", True, None],
                    ["checkpoint#0002_widget_v2#0#2", True, None],
                    ["checkpoint#0002_widget_v2#0#meta", False, {"segments": 4}],
                ],
                [
                    ["applied#0001_initial", None, {}],
                    [
                        "applied#0002_widget_v2",
                        None,
                        {"conflicts": 0, "failed": 0, "rewritten": 64, "scanned": 64, "skipped": 0},
                    ],
                    ["checkpoint#0001_initial#0#op", True, {}],
                    ["checkpoint#0002_widget_v2#0#0", True, None],
                    ["checkpoint#0002_widget_v2#0#1", True, None],
                    ["checkpoint#0002_widget_v2#0#2", True, None],
                    ["checkpoint#0002_widget_v2#0#3", True, None],
                    ["checkpoint#0002_widget_v2#0#meta", False, {"segments": 4}],
                    [
                        "checkpoint#0002_widget_v2#0#op",
                        True,
                        {"conflicts": 0, "failed": 0, "rewritten": 64, "scanned": 64, "skipped": 0},
                    ],
                    ["keyversions", None, None],
                ],
            ][i],
        )


@pytest.mark.parametrize("keep", ["keep-new", "keep-old"])
def test_resolve(project: Project, keep: str) -> None:
    load_v1(project, 6)
    name = project.table.table_name()
    old = backend.call("GetItem", {"TableName": name, "Key": {"PK": {"S": "v1#W#w00001"}, "SK": {"S": "METADATA"}}})[
        "Item"
    ]
    rev = project.table._meta.revision_attribute
    other = {**old, "PK": {"S": "v2#W#w00001"}, "counter": {"N": "99"}, rev: {"S": "written-at-v2"}}
    other.pop("GSI1PK", None), other.pop("GSI1SK", None)
    backend.call("PutItem", {"TableName": name, "Item": other})
    project.write_models(**V2)
    project.makemigrations()
    with dynorm.capture() as c:
        first = project.executor().migrate(MigrateOptions(segments=2))
    assert first.partial == {"0002_widget_v2": 1}
    _pin(
        "partial.requests",
        _requests(c),
        {
            "DeleteItem": 1,
            "DescribeTable": 5,
            "GetItem": 7,
            "PutItem": 6,
            "Query": 13,
            "Scan": 2,
            "TransactWriteItems": 7,
        },
    )
    _pin(
        "partial.ledger",
        _ledger(project),
        [
            ["applied#0001_initial", None, {}],
            ["checkpoint#0001_initial#0#op", True, {}],
            ["checkpoint#0002_widget_v2#0#0", True, None],
            ["checkpoint#0002_widget_v2#0#1", True, None],
            ["checkpoint#0002_widget_v2#0#meta", False, {"segments": 2}],
            ["failed#0002_widget_v2#0#be7f47cab85d19cdfbd7057d", None, None],
        ],
    )
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions(segments=2, resolve=keep))
    assert report.applied == ["0002_widget_v2"]
    _pin(
        f"resolve.{keep}.requests",
        _requests(c),
        {'keep-new': {'DeleteItem': 3, 'DescribeTable': 5, 'GetItem': 7, 'PutItem': 4, 'Query': 13, 'Scan': 2},
         'keep-old': {'DeleteItem': 2,
                      'DescribeTable': 5,
                      'GetItem': 7,
                      'PutItem': 4,
                      'Query': 13,
                      'Scan': 2,
                      'TransactWriteItems': 1}}[keep],
    )
    _pin(
        f"resolve.{keep}.ledger",
        _ledger(project),
        {'keep-new': [['applied#0001_initial', None, {}],
                      ['applied#0002_widget_v2',
                       None,
                       {'conflicts': 0, 'failed': 0, 'rewritten': 0, 'scanned': 1, 'skipped': 1}],
                      ['checkpoint#0001_initial#0#op', True, {}],
                      ['checkpoint#0002_widget_v2#0#0', True, None],
                      ['checkpoint#0002_widget_v2#0#1', True, None],
                      ['checkpoint#0002_widget_v2#0#meta', False, {'segments': 2}],
                      ['checkpoint#0002_widget_v2#0#op',
                       True,
                       {'conflicts': 0, 'failed': 0, 'rewritten': 0, 'scanned': 1, 'skipped': 1}],
                      ['keyversions', None, None]],
         'keep-old': [['applied#0001_initial', None, {}],
                      ['applied#0002_widget_v2',
                       None,
                       {'conflicts': 0, 'failed': 0, 'rewritten': 1, 'scanned': 1, 'skipped': 0}],
                      ['checkpoint#0001_initial#0#op', True, {}],
                      ['checkpoint#0002_widget_v2#0#0', True, None],
                      ['checkpoint#0002_widget_v2#0#1', True, None],
                      ['checkpoint#0002_widget_v2#0#meta', False, {'segments': 2}],
                      ['checkpoint#0002_widget_v2#0#op',
                       True,
                       {'conflicts': 0, 'failed': 0, 'rewritten': 1, 'scanned': 1, 'skipped': 0}],
                      ['keyversions', None, None]]}[keep],
    )


def test_run_python_forwards_and_backwards(project: Project) -> None:
    load_v1(project, 3)
    (project.dir / "migrations" / "0002_flag.py").write_text(
        textwrap.dedent("""
        from dynorm.migrations import operations as ops
        def key(ctx):
            return {"PK": {"S": "flag"}, "SK": {"S": "flag"}}
        def up(ctx):
            ctx.call("PutItem", {"TableName": ctx.table_name("migshop"), "Item": key(ctx)})
        def down(ctx):
            ctx.call("DeleteItem", {"TableName": ctx.table_name("migshop"), "Key": key(ctx)})
        dependencies = ["0001_initial"]
        operations = [ops.RunPython(up, reverse=down)]
    """)
    )
    with dynorm.capture() as c:
        project.executor().migrate(MigrateOptions())
    _pin(
        "runpython.forward.requests",
        _requests(c),
        {"DeleteItem": 1, "DescribeTable": 4, "GetItem": 1, "PutItem": 4, "Query": 11},
    )
    _pin(
        "runpython.forward.ledger",
        _ledger(project),
        [
            ["applied#0001_initial", None, {}],
            ["applied#0002_flag", None, {}],
            ["checkpoint#0001_initial#0#op", True, {}],
            ["checkpoint#0002_flag#0#op", True, {}],
        ],
    )
    with dynorm.capture() as c:
        project.executor().migrate(MigrateOptions(target="0001"))
    _pin(
        "runpython.backward.requests",
        _requests(c),
        {"DeleteItem": 6, "DescribeTable": 6, "GetItem": 1, "PutItem": 2, "Query": 21},
    )
    _pin(
        "runpython.backward.ledger",
        _ledger(project),
        [["applied#0001_initial", None, {}], ["checkpoint#0001_initial#0#op", True, {}]],
    )


def test_delete_version_after_a_copy(project: Project) -> None:
    _v2(project)
    project.executor().migrate(MigrateOptions(mode="copy", segments=2))
    _drop_v1(project)
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions(segments=2))
    assert report.applied == ["0003_drop_v1"]
    _pin(
        "deleteversion.requests",
        _requests(c),
        {'BatchGetItem': 4,
         'DeleteItem': 1,
         'DescribeTable': 5,
         'GetItem': 6,
         'PutItem': 8,
         'Query': 14,
         'Scan': 6,
         'TransactWriteItems': 2},
    )
    _pin(
        "deleteversion.totals",
        report.totals(),
        {"scanned": 120, "rewritten": 120, "skipped": 0, "conflicts": 0, "failed": 0},
    )
    _pin(
        "deleteversion.ledger",
        _ledger(project),
        [['applied#0001_initial', None, {}],
         ['applied#0002_widget_v2',
          None,
          {'conflicts': 0, 'failed': 0, 'rewritten': 120, 'scanned': 120, 'skipped': 0}],
         ['applied#0003_drop_v1',
          None,
          {'conflicts': 0, 'failed': 0, 'rewritten': 120, 'scanned': 120, 'skipped': 0}],
         ['checkpoint#0001_initial#0#op', True, {}],
         ['checkpoint#0002_widget_v2#0#0', True, None],
         ['checkpoint#0002_widget_v2#0#1', True, None],
         ['checkpoint#0002_widget_v2#0#meta', False, {'segments': 2}],
         ['checkpoint#0002_widget_v2#0#op',
          True,
          {'conflicts': 0, 'failed': 0, 'rewritten': 120, 'scanned': 120, 'skipped': 0}],
         ['checkpoint#0003_drop_v1#0#0', True, None],
         ['checkpoint#0003_drop_v1#0#1', True, None],
         ['checkpoint#0003_drop_v1#0#meta', False, {'segments': 2}],
         ['checkpoint#0003_drop_v1#0#op',
          True,
          {'conflicts': 0, 'failed': 0, 'rewritten': 120, 'scanned': 120, 'skipped': 0}],
         ['checkpoint#0003_drop_v1#0#verified', True, {'copied': 0}],
         ['keyversions', None, None],
         ['tally#0003_drop_v1#0#0', None, 60],
         ['tally#0003_drop_v1#0#1', None, 60]],
    )


def test_table_ddl_operations(private_dynamodb_local: str, project: Project) -> None:
    """CreateTable (the first migration), then SyncIndexes and DropIndexes on it."""
    from tests.migproject import BY_MAKER_GSI, BY_MAKER_MULTI, BY_MAKER_TEMPLATE, stage_indexed

    stage_indexed(project, {"GSI1": ("GSI1PK", "GSI1SK")}, f'{{"by_maker": {BY_MAKER_TEMPLATE}}}')
    project.makemigrations()
    with dynorm.capture() as c:
        project.executor().migrate(MigrateOptions())
    _pin(
        "ddl.create.requests",
        _requests(c, polls=False),
        {"CreateTable": 1, "DeleteItem": 1, "GetItem": 1, "PutItem": 3, "Query": 9},
    )
    stage_indexed(project, {"GSI1": ("GSI1PK", "GSI1SK"), "ByMaker": BY_MAKER_GSI}, f'{{"by_maker": {BY_MAKER_MULTI}}}')
    project.makemigrations()
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions())
    _pin(
        "ddl.sync.requests",
        _requests(c, polls=False),
        {'DeleteItem': 1, 'GetItem': 8, 'PutItem': 10, 'Query': 13, 'Scan': 8, 'UpdateTable': 1},
    )
    _pin(
        "ddl.sync.report",
        [[o.migration, o.index, o.status] for o in report.operations],
        [["0002_widget_v1", 0, "added ByMaker"], ["0002_widget_v1", 1, "done"]],
    )
    stage_indexed(project, {"ByMaker": BY_MAKER_GSI}, f'{{"by_maker": {BY_MAKER_MULTI}}}')
    project.makemigrations()
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions())
    _pin(
        "ddl.drop.requests",
        _requests(c, polls=False),
        {"DeleteItem": 1, "GetItem": 1, "PutItem": 3, "Query": 11, "UpdateTable": 1},
    )
    _pin(
        "ddl.drop.report",
        [[o.migration, o.index, o.status] for o in report.operations],
        [["0003_auto", 0, "dropped GSI1"]],
    )
    _pin(
        "ddl.ledger",
        _ledger(project),
        [['applied#0001_initial', None, {}],
         ['applied#0002_widget_v1', None, {'conflicts': 0, 'failed': 0, 'rewritten': 0, 'scanned': 0, 'skipped': 0}],
         ['applied#0003_auto', None, {}],
         ['checkpoint#0001_initial#0#op', True, {}],
         ['checkpoint#0002_widget_v1#0#op', True, {}],
         ['checkpoint#0002_widget_v1#1#0', True, None],
         ['checkpoint#0002_widget_v1#1#1', True, None],
         ['checkpoint#0002_widget_v1#1#2', True, None],
         ['checkpoint#0002_widget_v1#1#3', True, None],
         ['checkpoint#0002_widget_v1#1#meta', False, {'segments': 4}],
         ['checkpoint#0002_widget_v1#1#op',
          True,
          {'conflicts': 0, 'failed': 0, 'rewritten': 0, 'scanned': 0, 'skipped': 0}],
         ['checkpoint#0003_auto#0#op', True, {}],
         ['keyversions', None, None]],
    )
