"""The NoSQL Workbench model dynorm writes (shape, mapping, degradations) and what the import refuses (no I/O)."""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import pytest

from dynorm import ModelError
from dynorm.design.codegen import generate_module
from dynorm.design.workbench import build_model

NOW = dt.datetime(2026, 1, 2, 15, 4, tzinfo=dt.timezone.utc)


def _model() -> dict[str, Any]:
    from demo_project.library.models import Library
    from demo_project.orders.models import Shopfront

    return build_model([Shopfront, Library], name="shop", now=NOW)


def test_the_model_has_workbench_s_shape() -> None:
    model = _model()
    assert model["ModelName"] == "shop"
    meta = model["ModelMetadata"]
    assert (meta["Version"], meta["AWSService"]) == ("3.0", "Amazon DynamoDB")
    assert meta["DateCreated"] == meta["DateLastModified"] == "Jan 02, 2026, 03:04 PM"
    pattern = "* get all orders of a customer, oldest first: Order.objects.of_customer(<customer_id>)"
    assert pattern in meta["Description"]
    orders, library = model["DataModel"]
    assert set(orders) == {"TableName", "KeyAttributes", "NonKeyAttributes", "TableFacets", "GlobalSecondaryIndexes",
                           "TableData", "DataAccess", "BillingMode"}
    assert orders["KeyAttributes"] == {"PartitionKey": {"AttributeName": "PK", "AttributeType": "S"},
                                       "SortKey": {"AttributeName": "SK", "AttributeType": "S"}}
    customer = orders["TableFacets"][0]
    assert customer == {"FacetName": "Customer",
                        "KeyAttributeAlias": {"PartitionKeyAlias": "{version}#CUSTOMER#{customer_id}",
                                              "SortKeyAlias": "A"},
                        "TableData": [], "NonKeyAttributes": ["Type", "CustomerId", "name", "email"],
                        "DataAccess": {"MySql": {}}}
    # every attribute a facet names is defined on the table, with a type
    defined = {a["AttributeName"] for a in orders["NonKeyAttributes"]}
    assert {a for f in orders["TableFacets"] for a in f["NonKeyAttributes"]} <= defined
    assert {"AttributeName": "total", "AttributeType": "N"} in orders["NonKeyAttributes"]
    json.dumps(model)  # JSON-ready


def test_what_workbench_cannot_hold_is_in_model_schema() -> None:
    model = _model()
    library = model["DataModel"][1]
    # Workbench's GSI key holds one partition and one sort attribute; the whole schema is in ModelSchema
    assert library["GlobalSecondaryIndexes"] == [{"IndexName": "ByCategory", "KeyAttributes": {
        "PartitionKey": {"AttributeName": "category", "AttributeType": "S"},
        "SortKey": {"AttributeName": "year", "AttributeType": "S"}}, "Projection": {"ProjectionType": "ALL"}}]
    tables = {t["table_name"]: t for t in model["ModelSchema"]["tables"]}
    assert tables["library"]["gsis"] == {"ByCategory": {"pk": {"category": "S"}, "sk": {"year": "S"}}}
    assert tables["library"]["lsis"] == {"year_lsi": "year"}
    article = next(e for e in model["ModelSchema"]["entities"] if e["class"] == "Article")
    assert article["indexes"] == {
        "by_category": {"index": "ByCategory", "pk": ["category"], "sk": ["year"],
                        "comment": "articles of a category in chronological order"},
        "by_year": {"index": "year_lsi", "comment": "an author's articles by year"}}
    assert article["fields"]["keywords"] == {"kind": "List", "attribute": "keywords", "null": True}


def _schema_model() -> dict[str, Any]:
    return copy.deepcopy(_model())


@pytest.mark.parametrize(("change", "message"), [
    (lambda m: m["ModelSchema"]["entities"][0]["fields"].update({"x = __import__('os')  #": {"kind": "String"}}),
     "field name \"x = __import__('os')  #\" is not a Python identifier"),
    (lambda m: m["ModelSchema"]["entities"][0]["fields"].update(tags={"kind": "Set", "of": "os.system"}),
     "field tags is a Set of 'os.system'"),
    (lambda m: m["ModelSchema"]["entities"][0]["fields"].update(x={"kind": "Json"}), "field x is of kind 'Json'"),
    (lambda m: m["ModelSchema"]["entities"][0].update({"class": "Customer(Entity): pass\nimport os\nclass X"}),
     "is not a usable class name"),
    (lambda m: m["ModelSchema"]["entities"][1].update({"class": "Customer"}), "two classes would be named Customer"),
    (lambda m: m["ModelSchema"]["entities"][0].pop("pk"), "ModelSchema.entities[0] lacks pk"),
    (lambda m: m["ModelSchema"]["entities"][0]["indexes"].update({"by x": {"index": "GSI1"}}),
     "access-path name 'by x' is not a Python identifier"),
])
def test_the_import_refuses_a_schema_it_would_write_wrong_code_for(change: Any, message: str) -> None:
    model = _schema_model()
    change(model)
    with pytest.raises(ModelError) as e:
        generate_module(model, "m.json")
    assert str(e.value).startswith("m.json: ") and message in str(e.value)


def test_generated_source_quotes_every_value() -> None:
    model = _schema_model()
    model["ModelSchema"]["entities"][0]["pk"] = "X'''\"\"\"#{customer_id}\n"
    source = generate_module(model, "m.json")
    compile(source, "m.py", "exec")
    assert "pk = 'X\\'\\'\\'\"\"\"#{customer_id}\\n'" in source


def test_a_write_sharded_index_survives_export_and_import() -> None:
    """Regenerated classes keep ``shards=``/``shard_by=``: without them they would write and query
    unbucketed keys against the bucketed data."""
    from tests.models import Telemetry

    source = generate_module(build_model([Telemetry]))
    assert "shards=4" in source and "shard_by=('sensor_id', 'reading_id')" in source
    lines = [ln.strip() for ln in source.splitlines() if "'by_day': Index(" in ln]
    assert lines == ["'by_day': Index('GSI1', pk='{version}#DAY#{day}', sk='{at}', shards=4, "
                     "shard_by=('sensor_id', 'reading_id')),",
                     "'by_day': Index('GSI1', pk='{version}#DAY#{day}', sk='{at}', shards=4, shard_by=('alarm_id',)),"]
