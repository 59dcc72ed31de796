"""``dynorm export`` against DynamoDB Local: the CloudFormation resource is the CreateTable dynorm sends, and
``--sample N`` writes the items as DynamoDB stores them."""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest

from dynorm import Entity, Table, backend, capture, fields, tables
from dynorm.design.cloudformation import table_resource
from dynorm.design.workbench import build_model, read_samples
from dynorm.schema import attribute_types


@pytest.fixture
def fresh_table(dynamodb_local: str) -> Iterator[Any]:
    """A new ``Table`` class (fresh physical name): provisioned, template and four-attribute GSIs, an LSI on
    a number, TTL; dropped from DynamoDB and from the registry afterwards."""
    meta = {"table_name": f"cfn-{uuid.uuid4().hex[:8]}", "billing_mode": "PROVISIONED", "ttl_attribute": "expires",
            "gsis": {"GSI1": ("GSI1PK", "GSI1SK"),
                     "ByRegion": {"pk": {"tenant": "S", "region": "S"}, "sk": {"year": "N", "title": "S"}}},
            "lsis": {"by_rank": "rank"}}
    table = type("CfnTable", (Table,), {"Meta": type("Meta", (), meta), "__module__": __name__})
    type("CfnItem", (Entity,), {
        "__module__": __name__, "xid": fields.String(), "tenant": fields.String(), "region": fields.String(),
        "year": fields.Integer(), "title": fields.String(), "rank": fields.Integer(), "expires": fields.TTL(null=True),
        "Meta": type("Meta", (), {"table": table, "pk": "X#{xid}", "sk": "X"})})
    yield table
    if table.exists():
        table.delete_table()
    tables._TABLES.remove(table)


def test_template_properties_are_the_create_table_request_sent(fresh_table: Any) -> None:
    with capture() as c:
        fresh_table.create_table()
    sent = {r.operation: r.params for r in c.requests}
    assert set(sent) == {"CreateTable", "DescribeTable", "UpdateTimeToLive"}
    resource = table_resource(fresh_table._meta, fresh_table.table_name(), attribute_types(fresh_table))
    props = dict(resource["Properties"])
    assert props.pop("TimeToLiveSpecification") == sent["UpdateTimeToLive"]["TimeToLiveSpecification"]
    assert props.pop("PointInTimeRecoverySpecification") == {"PointInTimeRecoveryEnabled": True}
    assert props == sent["CreateTable"]
    # and DynamoDB made of that request the table the template describes
    desc = backend.call("DescribeTable", {"TableName": fresh_table.table_name()})["Table"]
    assert sorted(desc["AttributeDefinitions"], key=str) == sorted(props["AttributeDefinitions"], key=str)
    assert {g["IndexName"]: g["KeySchema"] for g in desc["GlobalSecondaryIndexes"]} == \
        {g["IndexName"]: g["KeySchema"] for g in props["GlobalSecondaryIndexes"]}


def test_sample_items_are_the_items_as_stored(dynorm_tables: Any) -> None:
    from demo_project.catalog.models import Brand, Catalog, Category, Product

    for i in range(3):
        Brand.objects.create(brand_id=str(i), name=f"Brand {i}")
    product = Product.objects.create(brand_id="1", category_id="7", name="Kayak", stock_level=3)
    with capture() as c:
        samples = read_samples([Catalog], 2)
    # Scans only (a Scan per entity, paging on while fewer than 2 items of its type were found)
    assert set(c.operations) == {"Scan"} and len(c.operations) >= 3
    assert len(samples[Brand]) == 2 and samples[Category] == []
    (sampled,) = samples[Product]
    stored = backend.call("GetItem", {"TableName": Catalog.table_name(), "Key": {
        "PK": {"S": f"v2#P#{product.product_id}"}, "SK": {"S": "METADATA"}}})["Item"]
    stored.pop(Catalog._meta.revision_attribute)
    assert sampled == stored
    model = build_model([Catalog], samples=samples)
    (table,) = model["DataModel"]
    assert table["TableData"] == [*samples[Brand], sampled]
    facets = {f["FacetName"]: f["TableData"] for f in table["TableFacets"]}
    assert facets == {"Brand": samples[Brand], "Category": [], "Product": [sampled]}


def test_sample_size_is_checked_before_any_request(dynorm_tables: Any) -> None:
    from demo_project.catalog.models import Catalog

    with capture() as c, pytest.raises(ValueError, match="positive number of items per entity, got 0"):
        read_samples([Catalog], 0)
    assert c.operations == []
