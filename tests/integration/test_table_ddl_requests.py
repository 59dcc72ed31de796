"""The requests of every table-DDL path, pinned exactly: ``Table.create_table`` (new, existing,
with a lost response, with and without TTL, waiting or not), ``Table.delete_table``, ``Table.sync``
of a missing table, the migration executor's table creation and the test plugin's reset.

DynamoDB Local creates and deletes a table at once, so each wait is one DescribeTable.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from dynorm import ServiceError, TableDoesNotExist, backend, capture, conf, schema
from tests.faults import Hook, deliver


def _table(ttl: bool = True) -> Any:
    """A new ``Table`` class (a fresh physical name) with one entity; TTL declared when ``ttl``."""
    from dynorm import Entity, Table, fields

    meta = {"table_name": f"ddl-{uuid.uuid4().hex[:8]}", **({"ttl_attribute": "expires"} if ttl else {})}
    table = type("DdlTable", (Table,), {"Meta": type("Meta", (), meta), "__module__": __name__})
    type("DdlItem", (Entity,), {
        "__module__": __name__, "xid": fields.String(), "expires": fields.TTL(null=True),
        "Meta": type("Meta", (), {"table": table, "pk": "X#{xid}", "sk": "X"})})
    return table


def _sent(c: Any) -> list[tuple[str, str | None]]:
    """``(operation, error code)`` of each request recorded."""
    return [(r.operation, r.error) for r in c.requests]


@pytest.fixture
def cleanup() -> Any:
    made: list[Any] = []
    yield made.append
    for table in made:
        try:
            backend.call("DeleteTable", {"TableName": table.table_name()})
        except TableDoesNotExist:
            pass


@pytest.mark.parametrize(("ttl", "wait", "expected"), [
    (True, True, [("CreateTable", None), ("DescribeTable", None), ("UpdateTimeToLive", None)]),
    (True, False, [("CreateTable", None), ("UpdateTimeToLive", None)]),
    (False, True, [("CreateTable", None), ("DescribeTable", None)]),
    (False, False, [("CreateTable", None)]),
])
def test_create_table_of_a_new_table(cleanup: Any, ttl: bool, wait: bool, expected: list[Any]) -> None:
    table = _table(ttl)
    cleanup(table)
    with capture() as c:
        assert table.create_table(wait=wait) is True
    assert _sent(c) == expected


def test_create_table_of_an_existing_table(cleanup: Any) -> None:
    table = _table()
    cleanup(table)
    backend.call("CreateTable", schema.create_action(table).params)  # created elsewhere, without TTL
    with capture() as c, pytest.raises(ServiceError, match="ResourceInUse"):
        table.create_table()
    assert _sent(c) == [("CreateTable", "ResourceInUseException")]
    with capture() as c:
        assert table.create_table(wait=False, exist_ok=True) is False
    # TTL off: wait until ACTIVE, then turn it on
    assert _sent(c) == [("CreateTable", "ResourceInUseException"), ("DescribeTimeToLive", None),
                        ("DescribeTable", None), ("UpdateTimeToLive", None)]
    with capture() as c:
        assert table.create_table(exist_ok=True) is False
    assert _sent(c) == [("CreateTable", "ResourceInUseException"), ("DescribeTable", None),
                        ("DescribeTimeToLive", None)]


@pytest.mark.parametrize("wait", [True, False])
@pytest.mark.parametrize("exist_ok", [True, False])
def test_create_table_with_a_lost_response(cleanup: Any, exist_ok: bool, wait: bool) -> None:
    import botocore.exceptions

    table = _table()
    cleanup(table)
    sent = {"n": 0}

    def applied_then_lost(request: Any, **kwargs: Any) -> None:
        sent["n"] += 1
        if sent["n"] == 1:
            deliver(request)
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    with Hook("before-send.dynamodb.CreateTable", applied_then_lost), capture() as c:
        assert table.create_table(wait=wait, exist_ok=exist_ok) is True
    # one request to dynorm (botocore's retry inside it met ResourceInUseException), then
    # finished as if the answer had come: ACTIVE, TTL on
    assert _sent(c) == [("CreateTable", "ResourceInUseException"), ("DescribeTable", None),
                        ("DescribeTimeToLive", None), ("DescribeTable", None), ("UpdateTimeToLive", None)]


@pytest.mark.parametrize(("wait", "expected"), [
    (True, [("DeleteTable", None), ("DescribeTable", "ResourceNotFoundException")]),
    (False, [("DeleteTable", None)]),
])
def test_delete_table(wait: bool, expected: list[Any]) -> None:
    table = _table(ttl=False)
    table.create_table()
    with capture() as c:
        table.delete_table(wait=wait)
    assert _sent(c) == expected
    with capture() as c, pytest.raises(TableDoesNotExist):
        table.delete_table()
    assert _sent(c) == [("DeleteTable", "ResourceNotFoundException")]


def test_sync_of_a_missing_table(cleanup: Any) -> None:
    table = _table()
    cleanup(table)
    with capture() as c:
        actions = table.sync()
    assert [a.split(":")[0] for a in actions] == ["CreateTable", "UpdateTimeToLive"]
    assert _sent(c) == [("DescribeTable", "ResourceNotFoundException"), ("CreateTable", None),
                        ("DescribeTable", None), ("UpdateTimeToLive", None)]
    with capture() as c:
        assert table.sync() == []
    assert _sent(c) == [("DescribeTable", None)]


@pytest.mark.dynamodb_local_only("the executor's table creation on DynamoDB Local")
def test_the_migration_executors_table_creation(project: Any) -> None:
    from dynorm.migrations.state import TableState
    from tests.migproject import V1

    project.write_models(**V1)
    project.makemigrations()
    name = f"ddlmig-{uuid.uuid4().hex[:8]}"
    executor = project.executor()
    physical = conf.get_settings().table_prefix + name
    try:
        with capture() as c:
            executor._create_table(TableState(name, ttl_attribute="expires"))
        assert _sent(c) == [("CreateTable", None), ("DescribeTable", None), ("UpdateTimeToLive", None)]
        assert physical in executor._created
        executor._created.clear()
        with capture() as c:  # created meanwhile by another run (no TTL declared): not this run's
            executor._create_table(TableState(name))
        assert _sent(c) == [("CreateTable", "ResourceInUseException"), ("DescribeTable", None)]
        assert physical not in executor._created
    finally:
        backend.call("DeleteTable", {"TableName": physical})


def test_the_test_plugins_reset(dynamodb_local: str, _dynorm_session_tables: Any) -> None:
    """A deleted table is created again, one whose TTL a test turned off or that a test protected
    from deletion is dropped and created again; the untouched ones are only read."""
    from demo_project.catalog.models import Catalog
    from demo_project.orders.models import Shopfront
    from dynorm.tables import all_tables
    from tests.models import Retail

    shared = _dynorm_session_tables
    deleted, protected, ttl_off = Catalog.table_name(), Shopfront.table_name(), Retail.table_name()
    assert len({deleted, protected, ttl_off}) == 3 and Retail._meta.ttl_attribute
    backend.call("DeleteTable", {"TableName": deleted})
    backend.call("UpdateTable", {"TableName": protected, "DeletionProtectionEnabled": True})
    backend.call("UpdateTimeToLive", {"TableName": ttl_off, "TimeToLiveSpecification": {
        "Enabled": False, "AttributeName": Retail._meta.ttl_attribute}})
    with capture() as c:
        shared.reset(all_tables())
    touched = {deleted, protected, ttl_off}
    got = [(r.operation, r.table, r.error) for r in c.requests if r.table in touched]
    drops = {
        protected: [("DescribeTable", protected, None), ("DeleteTable", protected, "ValidationException"),
                    ("UpdateTable", protected, None), ("DeleteTable", protected, None),
                    ("DescribeTable", protected, "ResourceNotFoundException")],
        ttl_off: [("DescribeTable", ttl_off, None), ("DescribeTimeToLive", ttl_off, None),
                  ("DeleteTable", ttl_off, None), ("DescribeTable", ttl_off, "ResourceNotFoundException")],
    }
    creates = {
        deleted: [("CreateTable", deleted, None), ("DescribeTable", deleted, None), ("DescribeTable", deleted, None)],
        protected: [("CreateTable", protected, None), ("DescribeTable", protected, None),
                    ("DescribeTable", protected, None)],
        ttl_off: [("CreateTable", ttl_off, None), ("DescribeTable", ttl_off, None),
                  ("UpdateTimeToLive", ttl_off, None), ("DescribeTable", ttl_off, None)],
    }
    present = sorted(n for n in (protected, ttl_off))  # ListTables order
    declared = [n for n in dict.fromkeys(t.table_name() for t in all_tables()) if n in touched]
    assert got == [r for n in present for r in drops[n]] + [r for n in declared for r in creates[n]]
    with capture() as c:
        shared.reset(all_tables())
    assert {r.operation for r in c.requests} <= {"ListTables", "DescribeTable", "DescribeTimeToLive"}
