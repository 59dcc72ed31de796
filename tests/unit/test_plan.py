"""The planner, through explain(): which request each queryset sends (no I/O)."""

from __future__ import annotations

import datetime as dt

import pytest

import dynorm
from demo_project.catalog.models import Brand, Product
from dynorm import Q
from tests.models import Customer, Order, Reading, Store, StoreEmployee


def test_get_by_full_primary_key_is_getitem() -> None:
    p = Product.objects.filter(product_id="01HZZZZZZZZZZZZZZZZZZZZZZZ").explain()
    assert p.operation == "GetItem"
    assert p.key == {"PK": {"S": "v2#P#01HZZZZZZZZZZZZZZZZZZZZZZZ"}, "SK": {"S": "METADATA"}}


def test_filter_on_brand_queries_gsi1() -> None:
    p = Product.objects.filter(brand_id="3").explain()
    assert (p.operation, p.index) == ("Query", "GSI1")
    assert p.readable(p.key_condition) == 'GSI1PK = "v2#B#3"'
    assert p.filter is None


def test_brand_and_category_is_one_query_with_begins_with() -> None:
    p = Product.objects.by_brand("3").in_category("1").explain()
    assert (p.operation, p.index) == ("Query", "GSI1")
    assert p.readable(p.key_condition) == 'GSI1PK = "v2#B#3" AND begins_with(GSI1SK, "C#1#P#")'


def test_category_and_filter_on_other_field() -> None:
    p = Product.objects.filter(category_id="1", stock_level__gt=0).explain()
    assert (p.operation, p.index) == ("Query", "GSI2")
    assert p.readable(p.filter) == "stock_level > 0"


def test_category_then_brand_uses_gsi2_when_forced() -> None:
    p = Product.objects.by_category("1").of_brand("3").explain()
    assert p.index == "GSI2"
    assert p.readable(p.key_condition) == 'GSI2PK = "v2#C#1" AND begins_with(GSI2SK, "B#3#P#")'


def test_tie_goes_to_index_declared_first() -> None:
    assert Product.objects.filter(brand_id="3", category_id="1").explain().index == "GSI1"


def test_no_index_raises_scan_required_naming_the_paths() -> None:
    with pytest.raises(dynorm.ScanRequired) as err:
        Product.objects.filter(name="x").explain()
    msg = str(err.value)
    assert "Product" in msg and "brand_id for by_brand" in msg and ".scan()" in msg


def test_explicit_scan() -> None:
    p = Product.objects.scan().filter(name="x").explain()
    assert p.operation == "Scan" and p.readable(p.filter) == 'entityType = "PRODUCT" AND name = "x"'


def test_using_forces_index_and_reports_missing_fields() -> None:
    assert Product.objects.filter(brand_id="3", category_id="1").using("by_category").explain().index == "GSI2"
    with pytest.raises(dynorm.InvalidQuery, match="category_id"):
        Product.objects.filter(brand_id="3").using("by_category").explain()
    with pytest.raises(dynorm.InvalidQuery, match="no access path"):
        Product.objects.using("nope").filter(brand_id="3").explain()


def test_lookups_render_into_filter() -> None:
    qs = Product.objects.filter(brand_id="3").filter(
        Q(stock_level__between=(1, 5)) | Q(name__begins_with="M"), description__exists=True,
        name__in=["a", "b"], stock_level__ne=7).exclude(name__contains="old")
    p = qs.explain()
    text = p.readable(p.filter)
    assert "stock_level BETWEEN 1 AND 5 OR begins_with(name, \"M\")" in text
    assert "attribute_exists(description)" in text and 'name IN ("a", "b")' in text
    assert "stock_level <> 7" in text and '(NOT contains(name, "old"))' in text


def test_unknown_field_and_bad_values() -> None:
    with pytest.raises(dynorm.InvalidQuery, match="no field 'colour'"):
        Product.objects.filter(brand_id="3", colour="red").explain()
    with pytest.raises(dynorm.ValidationError, match="stock_level"):
        Product.objects.filter(brand_id="3", stock_level__gt="many").explain()


def test_order_limit_projection_consistency() -> None:
    p = Product.objects.filter(brand_id="3").order_by("-sk").only("name")[:5].explain()
    assert p.params["ScanIndexForward"] is False and p.params["Limit"] == 5
    assert p.readable(p.projection) == "name, product_id, entityType, version, PK, SK, GSI1PK, GSI1SK"
    with pytest.raises(dynorm.InvalidQuery, match="ConsistentRead"):
        Product.objects.filter(brand_id="3").consistent().explain()
    assert Store.objects.filter(store_id="1").consistent().explain().params["ConsistentRead"] is True


def test_constant_partition_and_shared_partition_prefix() -> None:
    assert Brand.objects.all().explain().readable(Brand.objects.all().explain().key_condition) == 'PK = "v2#BRANDS"'
    p = Order.objects.of_customer("c1").explain()
    # the customer's A record shares the partition: the sort-key literal keeps it out
    assert p.readable(p.key_condition) == 'PK = "v2#CUST#c1" AND begins_with(SK, "ORDER#")'


def test_range_lookup_on_last_sort_key_field_goes_into_key_condition() -> None:
    p = Reading.objects.filter(sensor="s", year=2024, seq__gte=5).explain()
    assert p.readable(p.key_condition) == 'PK = "v1#SENSOR#s" AND SK BETWEEN "Y#2024#000005" AND "Y#2024$"'
    assert p.readable(p.filter) == "seq >= 5"


def test_lsi_on_a_field_attribute() -> None:
    since = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    p = Order.objects.filter(customer_id="c", placed_at__gte=since).explain()
    assert p.index == "LSI1"
    assert p.readable(p.key_condition) == 'PK = "v2#CUST#c" AND placed_at >= "2024-01-01T00:00:00.000000Z"'
    assert p.filter is None


def test_collections() -> None:
    p = Store.objects.collection(store_id="1").explain()
    assert p.readable(p.key_condition) == 'PK = "v1#STORE#1"' and p.entity_types is None
    p = Store.objects.collection(store_id="1").of(StoreEmployee).explain()
    assert p.readable(p.key_condition) == 'PK = "v1#STORE#1" AND begins_with(SK, "EMP#")'
    p = Customer.objects.collection(customer_id="c").order_by("-sk")[:4].explain()
    assert p.params["ScanIndexForward"] is False and p.params["Limit"] == 4
    with pytest.raises(dynorm.InvalidQuery):
        Store.objects.filter(store_id="1").of(StoreEmployee)


def test_key_value_with_delimiter_cannot_reach_another_partition() -> None:
    p = Product.objects.filter(brand_id="3#C#1").explain()
    assert p.values[":v0"] == {"S": "v2#B#3$23C$231"}


def test_explain_str_is_readable() -> None:
    text = str(Product.objects.by_brand("3").in_category("1").explain())
    assert text.startswith("Query fromatoz index GSI1")
    assert 'begins_with(GSI1SK, "C#1#P#")' in text


def test_partition_key_built_from_given_fields_beats_a_constant_partition() -> None:
    from demo_project.monithor.models import Monitor

    p = Monitor.objects.of_project("p1").explain()
    assert p.index == "GSI" and p.filter is None


def test_exact_key_get_fast_path_builds_the_planners_request() -> None:
    from demo_project.catalog.models import Product as P
    from dynorm.plan import _exact_key_get
    from tests.models import Order as O

    pid = "01HV5Z7G3K4M8N2P6Q9R0S1T2A"
    for model, key in ((P, {"product_id": pid}), (O, {"customer_id": "c#1", "order_id": pid})):
        for qs in (model.objects.filter(**key), model.objects.filter(**key).consistent()):
            fast = _exact_key_get(qs._state)
            assert fast is not None
            # the general path: the same equalities split over two filter() calls
            first, *rest = key.items()
            general = model.objects.filter(**dict([first])).filter(**dict(rest))
            if qs._state.consistent:
                general = general.consistent()
            assert _exact_key_get(general._state) is None or len(key) == 1
            assert fast.params == general.explain().params == qs.explain().params
    assert _exact_key_get(P.objects.filter(brand_id="1")._state) is None
    assert _exact_key_get(P.objects.filter(name="x").filter(product_id=pid)._state) is None


def test_begins_with_on_an_lsi_sort_attribute_takes_text_only() -> None:
    """A datetime as a begins_with prefix was put raw into {"S": ...}: explain() and the request
    failed with a TypeError from json. It is refused, naming entity, field and value; text works."""
    qs = Order.objects.filter(customer_id="c1", placed_at__begins_with=dt.datetime(2024, 1, 1))
    with pytest.raises(dynorm.InvalidQuery, match=r"Order\.placed_at__begins_with=datetime.*a str"):
        qs.explain()
    p = Order.objects.filter(customer_id="c1", placed_at__begins_with="2024-01").explain()
    assert p.readable(p.key_condition) == 'PK = "v2#CUST#c1" AND begins_with(placed_at, "2024-01")'
