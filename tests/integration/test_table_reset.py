"""The test plugin's shared tables (``dynorm_tables``): every test starts on empty tables exactly as
declared, whatever the test before it did to them and through whichever client or process."""

from __future__ import annotations

import subprocess
import sys
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
