"""An entity refuses to run at a key version the table's migration ledger has retired (issue 22, section 2).

The deploy of the issue: v2 models and ``dynorm migrate`` moved every WIDGET from v1 to v2 keys; the code
is then reverted to the v1 models (the 0002 file gone). Before, a fresh v1 process's ``get()`` missed
every item and ``get_or_create``/``create()`` wrote second copies at v1 that the v2 code never sees. Each
app below runs in a process of its own, as a deployed app does; the table is compared item for item.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import dynorm
from dynorm import KeyVersionBehind, conf, keyguard
from dynorm.migrations.executor import MigrateOptions
from tests.migproject import V1, V2, Project, load_v1, scan_all, widgets

#: every kind of request a v1 app sends, each caught: "ok", "refused: <message>" or "<Error>: <message>";
#: then the requests sent
APP = '''
import asyncio, json
import dynorm
from dynorm import DynormError, KeyVersionBehind
from {pkg}.models import Widget

def run(fn):
    try:
        fn()
        return "ok"
    except KeyVersionBehind as exc:
        return "refused: " + str(exc)
    except DynormError as exc:
        return type(exc).__name__ + ": " + str(exc)

def tx():
    with dynorm.transaction() as t:
        t.create(Widget(widget_id="new-tx", maker="m1"))

out = {{}}
with dynorm.capture() as c:
    out["get"] = run(lambda: Widget.objects.get(widget_id="w00001"))
    out["filter"] = run(lambda: list(Widget.objects.filter(maker="m1")))
    out["count"] = run(lambda: Widget.objects.filter(maker="m1").count())
    out["create"] = run(lambda: Widget.objects.create(widget_id="new-create", maker="m1"))
    out["get_or_create"] = run(lambda: Widget.objects.get_or_create(widget_id="w00002", defaults={{"maker": "m2"}}))
    out["save"] = run(lambda: Widget(widget_id="new-save", maker="m1").save())
    out["bulk_create"] = run(lambda: Widget.objects.bulk_create([Widget(widget_id="new-bulk", maker="m1")]))
    out["transaction"] = run(tx)
    out["update"] = run(lambda: Widget.objects.filter(widget_id="w00003").update(counter=7))
    out["aget"] = run(lambda: asyncio.run(Widget.objects.aget(widget_id="w00001")))
    out["acreate"] = run(lambda: asyncio.run(Widget.objects.acreate(widget_id="new-acreate", maker="m1")))
out["requests"] = [[r.operation, r.params.get("Key", {{}}).get("SK", {{}}).get("S")] for r in c.requests]
print(json.dumps(out))
'''
CALLS = ("get", "filter", "count", "create", "get_or_create", "save", "bulk_create", "transaction", "update",
         "aget", "acreate")
GUARD_READ = ["GetItem", "keyversions"]


def run_app(project: Project, **env: str) -> dict[str, Any]:
    """Run APP against the project's models as they are on disk now, in a process of its own."""
    settings = conf.get_settings()
    environ = {**os.environ, "DYNORM_ENDPOINT": settings.endpoint or "", "DYNORM_REGION": settings.region,
               "DYNORM_TABLE_PREFIX": settings.table_prefix, **env,
               "PYTHONPATH": os.pathsep.join([str(project.root), *filter(None, [os.environ.get("PYTHONPATH")])])}
    environ.pop("DYNORM_CONFIG", None)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(APP.format(pkg=project.pkg))], cwd=project.root,
                          env=environ, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def rekeyed(project: Project, n: int = 20, **options: Any) -> None:
    """v1 items, then the v2 models and 0002_widget_v2 applied with ``options``."""
    load_v1(project, n)
    project.write_models(**V2)
    assert project.makemigrations().name == "0002_widget_v2"
    report = project.executor().migrate(MigrateOptions(**options))
    assert report.applied == ["0002_widget_v2"]


def revert_code(project: Project) -> None:
    """The deploy rolled back by reverting code: v1 models, the 0002 file gone."""
    (project.dir / "migrations" / "0002_widget_v2.py").unlink()
    project.write_models(**V1)


def assert_refused(out: dict[str, Any], migration: str = "0002_widget_v2") -> None:
    for call in CALLS:
        message = out[call]
        assert message.startswith("refused: "), (call, message)
        assert "Widget (entity type WIDGET) is at key version 'v1' in this code" in message, message
        assert "has WIDGET at key version 'v2'" in message and f"migration {migration}" in message, message
        assert "nothing was sent" in message and "check_key_versions: false" in message, message
    assert out["requests"] == [GUARD_READ]  # one read of the record for the whole process, sync and async


def test_the_rolled_back_v1_app_refuses_every_read_and_write_and_writes_nothing(project: Project) -> None:
    rekeyed(project)
    revert_code(project)
    before = scan_all(project.table)
    out = run_app(project)
    assert_refused(out)
    assert "roll forward (deploy the code that has migration 0002_widget_v2" in out["get"]
    assert "run `dynorm migrate 0001_initial` (it moves the items back to v1), then deploy this code" in out["get"]
    assert out["create"].endswith("dynorm.configure(check_key_versions=False).")
    assert "Refusing to send PutItem" in out["create"] and "Refusing to send GetItem" in out["get"]
    assert scan_all(project.table) == before  # not one item written
    assert len(widgets(project.table)) == 20 and all(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))


def test_turned_off_the_rolled_back_app_runs_as_before(project: Project) -> None:
    rekeyed(project)
    revert_code(project)
    out = run_app(project, DYNORM_CONFIG=str(_config(project, "check_key_versions: false\n")))
    missed = ("get", "aget", "update")  # the harm the check prevents: the v2 items are not found ...
    assert all(out[call].startswith("DoesNotExist: ") for call in missed), out
    assert not {c: out[c] for c in CALLS if c not in missed and out[c] != "ok"}
    assert GUARD_READ not in out["requests"]  # (off: the record is not read at all)
    copies = [i["widget_id"]["S"] for i in widgets(project.table) if i["PK"]["S"] == "v1#W#w00002"]
    assert copies == ["w00002"]  # ... and get_or_create wrote a second copy at v1


def _config(project: Project, extra: str) -> Path:
    cfg = project.config()
    cfg.write_text(cfg.read_text() + extra)
    return cfg


def test_reversed_with_the_code_that_has_the_file_the_v1_app_runs_again(project: Project) -> None:
    rekeyed(project)
    report = project.executor().migrate(MigrateOptions(target="0001_initial"))  # the safe order: reverse first
    assert report.unapplied == ["0002_widget_v2"]
    v2 = run_app(project)  # the v2 code is now ahead of the table: its items moved back
    assert not [c for c in CALLS if not v2[c].startswith("refused: ")], v2
    assert "reversing migration 0002_widget_v2 moved its items back from v2 to v1" in v2["get"]
    revert_code(project)  # ... then deploy the v1 code
    out = run_app(project)
    assert not {c: out[c] for c in CALLS if out[c] != "ok"}
    assert out["requests"][0] == GUARD_READ and out["requests"].count(GUARD_READ) == 1
    ids = {i["widget_id"]["S"] for i in widgets(project.table) if i["PK"]["S"].startswith("v1#")}
    assert {"new-create", "new-save", "new-bulk", "new-tx", "new-acreate", "w00001"} <= ids
    assert not [i for i in widgets(project.table) if i["PK"]["S"].startswith("v2#")]


def test_fake_records_and_unrecords_the_retired_version(project: Project) -> None:
    load_v1(project, 5)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions(fake=True))  # "the items are at v2" (they are not: --fake)
    ledger = project.executor().ledger()
    assert set(ledger.key_versions()["WIDGET"].retired) == {"v1"}
    project.write_models(**V1)
    assert_refused(run_app(project))
    project.write_models(**V2)
    project.executor().migrate(MigrateOptions(target="0001_initial", fake=True))
    assert ledger.key_versions()["WIDGET"].retired == {}  # --fake back: only what 0002 retired is released
    project.write_models(**V1)
    out = run_app(project)
    assert not {c: out[c] for c in CALLS if out[c] != "ok"}


def copy_rollout(project: Project, n: int) -> None:
    """v1 items, then the v2 models with read_versions and 0002_widget_v2 applied in copy mode."""
    load_v1(project, n)
    project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    project.makemigrations()
    project.executor().migrate(MigrateOptions(mode="copy"))
    assert project.executor().ledger().key_versions()["WIDGET"].version == "v2"


def test_during_a_copy_mode_rollout_old_and_new_code_both_work(project: Project) -> None:
    copy_rollout(project, 20)
    assert project.executor().ledger().key_versions()["WIDGET"].retired == {}  # copied, not moved
    v2 = run_app(project)  # the new code, deployed with read_versions
    assert not {c: v2[c] for c in CALLS if v2[c] != "ok"}
    project.write_models(**V1)
    v1 = run_app(project)  # an instance still on the old code: both versions are live until DeleteVersion
    assert not {c: v1[c] for c in CALLS if v1[c] != "ok"}
    assert v1["requests"].count(GUARD_READ) == 1


def test_after_delete_version_the_old_code_is_refused(project: Project) -> None:
    copy_rollout(project, 5)
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent('''
        from dynorm.migrations import operations as ops
        dependencies = ["0002_widget_v2"]
        operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="v1",
                                        pk="{version}#W#{widget_id}")]
    '''))
    assert project.executor().migrate(MigrateOptions()).applied == ["0003_drop_v1"]
    project.write_models(**V1)
    before = scan_all(project.table)
    out = run_app(project)
    assert_refused(out, "0003_drop_v1")
    assert "migration 0003_drop_v1 deleted its items at v1" in out["get"]
    assert "Deploy the code at key version 'v2' (a DeleteVersion cannot be reversed)" in out["get"]
    assert scan_all(project.table) == before


def test_a_partial_move_retires_nothing_until_it_is_recorded_applied(project: Project) -> None:
    """While a move runs (or stopped midway), items are at both versions: old-version instances still work
    (the move's catch-up pass and conditional deletes keep their writes); the version is retired only with
    the applied record."""
    import threading

    from dynorm.migrations.executor import MigrationInterrupted
    from tests.faults import Hook

    load_v1(project, 120)
    project.write_models(**V2)
    project.makemigrations()
    stop = threading.Event()
    with Hook("after-call.dynamodb.TransactWriteItems", lambda **kw: stop.set()):
        with pytest.raises(MigrationInterrupted):
            project.executor().migrate(MigrateOptions(segments=1, stop=stop))
    ledger = project.executor().ledger()
    assert ledger.key_versions() == {}
    widget_v1 = project.write_models(**V1).Widget
    keyguard.forget()  # as a fresh process
    moved = [i["widget_id"]["S"] for i in widgets(project.table) if i["PK"]["S"].startswith("v2#")]
    left = [i["widget_id"]["S"] for i in widgets(project.table) if i["PK"]["S"].startswith("v1#")]
    assert moved and left
    assert widget_v1.objects.get(widget_id=left[0]).widget_id == left[0]  # an old instance keeps working
    project.write_models(**V2)
    assert project.executor().migrate(MigrateOptions()).applied == ["0002_widget_v2"]
    assert set(ledger.key_versions()["WIDGET"].retired) == {"v1"}
    with pytest.raises(KeyVersionBehind):  # migrate in this process refreshed its cached record
        widget_v1.objects.get(widget_id=left[0])


# -- the record is read once per process per table, honestly -------------------------------------------------------

def test_the_record_is_read_once_per_table_and_shows_in_capture(io: Any) -> None:
    from demo_project.catalog.models import Brand, Product

    keyguard.forget()  # as a fresh process: the test plugin noted its emptied tables as holding no record
    with dynorm.capture() as c:
        io(Brand.objects, "create", brand_id="1", name="Acme")
        io(Product.objects, "create", brand_id="1", category_id="c", name="Kayak")
        assert [p.name for p in io.list(Product.objects.by_brand("1"))] == ["Kayak"]
        assert io(Brand.objects, "get", brand_id="1").name == "Acme"
    table = Brand._meta.table.table_name()
    reads = [r for r in c.requests if r.operation == "GetItem" and r.params["Key"].get("SK") == {"S": "keyversions"}]
    assert len(reads) == 1 and reads[0].table == table and "ConsistentRead" not in reads[0].params
    assert c.operations[0] == "GetItem" and c.requests[0] is reads[0]  # before the first request to the table
    assert c.operations[1:] == ["PutItem", "PutItem", "Query", "GetItem"]
    assert keyguard.known(table) == {}


def test_turned_off_nothing_is_read(io: Any) -> None:
    from demo_project.catalog.models import Brand

    dynorm.configure(check_key_versions=False)  # (the test plugin undoes it)
    keyguard.forget()
    with dynorm.capture() as c:
        io(Brand.objects, "create", brand_id="1", name="Acme")
        io(Brand.objects, "get", brand_id="1")
    assert c.operations == ["PutItem", "GetItem"]
    assert keyguard.known(Brand._meta.table.table_name()) is None


def test_the_queryset_stats_count_the_read_of_the_record() -> None:
    from demo_project.catalog.models import Brand

    keyguard.forget()
    qs = Brand.objects.all()
    list(qs)
    assert qs.stats.requests == 2  # the record, then the Query
    again = Brand.objects.all()
    list(again)
    assert again.stats.requests == 1


def test_split_workers_retire_the_version_when_the_last_one_records_the_migration(project: Project) -> None:
    load_v1(project, 60)
    project.write_models(**V2)
    project.makemigrations()
    first = project.executor().migrate(MigrateOptions(segments=4, worker=(0, 2)))
    assert first.applied == []  # worker 1's segments are still to do: not recorded, nothing retired
    ledger = project.executor().ledger()
    assert ledger.key_versions() == {}
    assert project.executor().migrate(MigrateOptions(segments=4, worker=(1, 2))).applied == ["0002_widget_v2"]
    assert ledger.key_versions()["WIDGET"].version == "v2" and set(ledger.key_versions()["WIDGET"].retired) == {"v1"}
    project.executor().migrate(MigrateOptions(segments=4, worker=(0, 2)))  # a late worker: nothing changes
    assert set(ledger.key_versions()["WIDGET"].retired) == {"v1"}


def test_a_policy_denying_the_record_is_a_configuration_error_naming_the_item_and_the_switch() -> None:
    """An IAM policy restricting the partition keys an app may read (dynamodb:LeadingKeys) refuses the read of
    the record: the app is told what to allow, or how to turn the check off, and nothing else is sent."""
    from demo_project.catalog.models import Brand
    from tests.faults import Hook, fake_response

    def deny(params: Any, **kwargs: Any) -> Any:
        if params.get("Key", {}).get("SK") == {"S": "keyversions"}:
            return fake_response(400, {"__type": "com.amazonaws.dynamodb.v20120810#AccessDeniedException",
                                       "message": "not authorized to perform: dynamodb:GetItem"})
        return None

    keyguard.forget()
    with Hook("before-send.dynamodb.GetItem", lambda request, **kw: deny(json.loads(request.body))):
        with dynorm.capture() as c, pytest.raises(dynorm.ConfigurationError) as exc:
            Brand.objects.create(brand_id="1", name="Acme")
    assert not isinstance(exc.value, KeyVersionBehind)
    assert "Brand: before its first request to table" in str(exc.value)
    assert "Allow dynamodb:GetItem on that item" in str(exc.value) and "check_key_versions: false" in str(exc.value)
    assert c.operations == ["GetItem"]  # the PutItem was not sent
    assert keyguard.known(Brand._meta.table.table_name()) is None  # read again next time


# -- a process that read the record before the migration: refused once its copy is too old ---------------------------

def test_a_process_that_read_the_record_before_the_migration_is_refused_once_its_copy_is_max_age_old(
        project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-running v1 process read "no record" before another process's ``migrate`` retired v1: it kept
    that answer for its whole life, so its ``create()``/``get_or_create``/``bulk_create`` wrote copies at
    v1 that the v2 code never sees. It reads the record again once its copy is ``key_versions_max_age``
    seconds old (default 60) and is refused from then on, writing nothing."""
    rekeyed(project, n=5)
    widget_v1 = project.write_models(**V1).Widget
    table = project.table.table_name()
    keyguard.note(table, {})  # what the v1 process read before the other process migrated
    before = scan_all(project.table)
    clock = keyguard.time.monotonic
    monkeypatch.setattr(keyguard.time, "monotonic", lambda: clock() + 61)  # a minute and a second later
    with dynorm.capture() as c:
        with pytest.raises(KeyVersionBehind, match="Refusing to send PutItem"):
            widget_v1.objects.create(widget_id="late", maker="m1")
        with pytest.raises(KeyVersionBehind):
            widget_v1.objects.get_or_create(widget_id="w00001", defaults={"maker": "m1"})
    assert [(r.operation, r.params["Key"]["SK"]["S"]) for r in c.requests] == [("GetItem", "keyversions")]
    assert scan_all(project.table) == before


def test_key_versions_max_age_zero_reads_the_record_before_every_run_of_requests(io: Any) -> None:
    from demo_project.catalog.models import Brand

    dynorm.configure(key_versions_max_age=0)  # (the test plugin undoes it)
    keyguard.forget()
    with dynorm.capture() as c:
        io(Brand.objects, "create", brand_id="1", name="Acme")
        io(Brand.objects, "get", brand_id="1")
    assert c.operations == ["GetItem", "PutItem", "GetItem", "GetItem"]
    assert [r.params["Key"].get("SK") for r in c.requests[::2]] == [{"S": "keyversions"}] * 2
