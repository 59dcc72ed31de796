"""The test plugin's shared tables (``dynorm_tables``): every test starts on empty tables exactly as
declared, whatever the test before it did to them and through whichever client or process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import botocore.session

from demo_project.catalog.models import Catalog
from demo_project.orders.models import Customer, Shopfront
from dynorm import backend, conf
from dynorm.tables import all_tables
from dynorm.testing import _SessionTables
from tests.models import Retail, Store


def _raw_client() -> Any:
    """A botocore client of its own (not dynorm's): writes dynorm never sees."""
    s = conf.get_settings()
    return botocore.session.get_session().create_client(
        "dynamodb", region_name=s.region, endpoint_url=s.endpoint, aws_access_key_id="fake",
        aws_secret_access_key="fake")


def _scan(name: str) -> list[dict[str, Any]]:
    return backend.call("Scan", {"TableName": name, "ConsistentRead": True})["Items"]


def _table_names() -> list[str]:
    return backend.call("ListTables", {})["TableNames"]


def test_reset_leaves_every_declared_table_empty_and_as_declared(
        dynamodb_local: str, _dynorm_session_tables: _SessionTables) -> None:
    shared = _dynorm_session_tables
    prefix = conf.get_settings().table_prefix
    assert prefix == shared.prefix
    declared = {t.table_name(): t for t in all_tables()}
    shapes = {name: shared.made[name][1] for name in declared}

    # a few items (emptied item by item) through dynorm, through a raw client, and from another process
    Customer.objects.create(customer_id="c1", name="Ada")
    Store.objects.create(store_id="s1", name="Main street")
    raw = _raw_client()
    raw.put_item(TableName=Shopfront.table_name(), Item={"PK": {"S": "raw"}, "SK": {"S": "raw"}})
    code = ("import botocore.session as b; c = b.get_session().create_client('dynamodb', region_name='us-east-1', "
            f"endpoint_url={dynamodb_local!r}, aws_access_key_id='fake', aws_secret_access_key='fake'); "
            f"c.put_item(TableName={Shopfront.table_name()!r}, Item={{'PK': {{'S': 'p'}}, 'SK': {{'S': 'p'}}}})")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    # 250 items: above the item-by-item limit, the table is dropped and created again
    for i in range(0, 250, 25):
        raw.batch_write_item(RequestItems={Catalog.table_name(): [
            {"PutRequest": {"Item": {"PK": {"S": f"bulk{j}"}, "SK": {"S": "x"}}}} for j in range(i, i + 25)]})
    # a GSI dropped, TTL turned off, a table deleted, a table no model declares
    raw.update_table(TableName=Catalog.table_name(), GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "GSI2"}}])
    raw.update_time_to_live(TableName=Retail.table_name(),
                            TimeToLiveSpecification={"Enabled": False, "AttributeName": "expires_at"})
    victim = next(n for n in declared if n not in (Catalog.table_name(), Retail.table_name(), Shopfront.table_name()))
    raw.delete_table(TableName=victim)
    raw.create_table(TableName=prefix + "left-behind", BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}])

    shared.reset(all_tables())

    names = set(_table_names())
    assert prefix + "left-behind" not in names
    assert set(declared) <= names
    for name in declared:
        assert _scan(name) == [], name  # a consistent Scan, not the ItemCount the reset read
        assert shared.made[name][1] == shapes[name], name
    catalog = raw.describe_table(TableName=Catalog.table_name())["Table"]
    gsis = {g["IndexName"] for g in catalog["GlobalSecondaryIndexes"]}
    assert gsis == {"GSI1", "GSI2"}
    ttl = raw.describe_time_to_live(TableName=Retail.table_name())["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "ENABLED" and ttl["AttributeName"] == "expires_at"


def test_reset_of_clean_tables_sends_only_reads(_dynorm_session_tables: _SessionTables) -> None:
    shared = _dynorm_session_tables
    shared.reset(all_tables())
    with backend.capture() as cap:
        shared.reset(all_tables())
    ops = {r.operation for r in cap.requests}
    assert ops <= {"ListTables", "DescribeTable", "DescribeTimeToLive"}, ops
    assert sum(r.operation == "DescribeTable" for r in cap.requests) == len({t.table_name() for t in all_tables()})


# -- what one test leaves behind never reaches the next (a pytest session of an application's tests) ----------

APP_TESTS = '''
import pytest
import dynorm
from dynorm import Entity, Table, backend, conf, fields


class Pads(Table):
    class Meta:
        table_name = "reset-pads"


class Pad(Entity):
    pad_id = fields.String()

    class Meta:
        table = Pads
        pk = "P#{pad_id}"
        sk = "METADATA"


def items():
    return backend.call("Scan", {"TableName": Pads.table_name(), "ConsistentRead": True})["Items"]


@pytest.fixture
def overridden():
    with conf.overridden(read_timeout=60):
        yield


def test_1_points_dynorm_elsewhere_and_fails(dynorm_tables):
    Pad.objects.create(pad_id="a")
    dynorm.configure(endpoint="http://127.0.0.1:9", cursor_secret="s" * 32)
    raise AssertionError("failed before undoing its configure()")


def test_2_turns_on_deletion_protection_and_adds_a_gsi(dynorm_tables):
    assert items() == [], "the previous test's item"
    Pad.objects.create(pad_id="b")
    name = Pads.table_name()
    backend.call("UpdateTable", {"TableName": name, "DeletionProtectionEnabled": True})
    backend.call("UpdateTable", {"TableName": name, "AttributeDefinitions": [
        {"AttributeName": "X", "AttributeType": "S"}], "GlobalSecondaryIndexUpdates": [{"Create": {
        "IndexName": "GSIX", "KeySchema": [{"AttributeName": "X", "KeyType": "HASH"}],
        "Projection": {"ProjectionType": "ALL"}}}]})


def test_3_starts_on_the_tables_as_declared(dynorm_tables):
    desc = Pads.describe()
    assert not desc.get("DeletionProtectionEnabled") and not desc.get("GlobalSecondaryIndexes")
    assert items() == [] and conf.get_settings().cursor_secret != "s" * 32


def test_4_a_context_override_set_up_first_is_a_clear_error(overridden, dynorm_tables):
    pass
'''


def test_a_failed_tests_settings_and_altered_tables_never_reach_the_next(dynamodb_local: str, tmp_path: Path) -> None:
    (tmp_path / "test_app.py").write_text(APP_TESTS)
    env = {**os.environ, "DYNORM_TEST_ENDPOINT": dynamodb_local}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "test_app.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout
    assert "FAILED test_app.py::test_1_points_dynorm_elsewhere_and_fails" in out, out[-3000:]
    assert "PASSED test_app.py::test_2_turns_on_deletion_protection_and_adds_a_gsi" in out, out[-3000:]
    assert "PASSED test_app.py::test_3_starts_on_the_tables_as_declared" in out, out[-3000:]
    assert "ERROR test_app.py::test_4_a_context_override_set_up_first_is_a_clear_error" in out, out[-3000:]
    assert "hide the session's table prefix" in out
