"""Item collections, sparse indexes, LSIs, field types, UnknownItem."""

from __future__ import annotations

import datetime as dt
import decimal

import dynorm
from dynorm import backend
from tests.models import Customer, Order, Reading, Retail, Store, StoreEmployee


def test_store_collection_dispatches_on_entity_type() -> None:
    Store.objects.create(store_id="1", name="Main St", city="Oslo")
    for e in ("a", "b", "c"):
        StoreEmployee.objects.create(store_id="1", employee_id=e, name=e.upper())
    StoreEmployee.objects.create(store_id="2", employee_id="z", name="Elsewhere")
    backend.call("PutItem", {"TableName": Retail.table_name(), "Item": {
        "PK": {"S": "v1#STORE#1"}, "SK": {"S": "GHOST#1"}, "entityType": {"S": "GHOST"}, "boo": {"N": "1"}}})
    with dynorm.capture() as c:
        items = list(Store.objects.collection(store_id="1"))
    assert c.operations == ["Query"]
    kinds = [type(i).__name__ for i in items]
    assert kinds.count("StoreEmployee") == 3 and kinds.count("Store") == 1 and kinds.count("UnknownItem") == 1
    ghost = next(i for i in items if isinstance(i, dynorm.UnknownItem))
    assert ghost.entity_type == "GHOST" and ghost.attributes["boo"] == 1
    grouped = Store.objects.collection(store_id="1").grouped()
    assert len(grouped[StoreEmployee]) == 3 and grouped[Store][0].name == "Main St"
    with dynorm.capture() as c:
        emps = list(Store.objects.collection(store_id="1").of(StoreEmployee))
    assert [e.name for e in emps] == ["A", "B", "C"] and c.count == 1
    one = list(Store.objects.collection(store_id="1").of(StoreEmployee, employee_id="b"))
    assert [e.name for e in one] == ["B"]


def test_customer_and_newest_orders_in_one_reverse_query() -> None:
    Customer.objects.create(customer_id="c1", email="c1@example.com")
    orders = [Order.objects.create(customer_id="c1", total=decimal.Decimal(i)) for i in range(5)]
    with dynorm.capture() as c:
        items = list(Customer.objects.collection(customer_id="c1").order_by("-sk")[:3])
    assert c.count == 1 and c.requests[0].params["ScanIndexForward"] is False
    assert [type(i).__name__ for i in items] == ["Order", "Order", "Order"]
    assert [o.order_id for o in items] == [o.order_id for o in orders[::-1][:3]]
    everything = list(Customer.objects.collection(customer_id="c1").order_by("-sk")[:10])
    assert isinstance(everything[-1], Customer) and len(everything) == 6
    # Orders alone never include the A record
    assert len(Order.objects.of_customer("c1")) == 5


def test_sparse_index_and_lsi() -> None:
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    for i in range(4):
        Order.objects.create(customer_id="c2", placed_at=start + dt.timedelta(days=i),
                             coupon="SPRING" if i % 2 else None)
    with dynorm.capture() as c:
        coupons = list(Order.objects.filter(coupon="SPRING"))
    assert len(coupons) == 2 and c.requests[0].index == "GSI1"
    recent = list(Order.objects.filter(customer_id="c2", placed_at__gte=start + dt.timedelta(days=2)))
    assert len(recent) == 2
    assert Order.objects.filter(customer_id="c2", placed_at__gte=start).explain().index == "LSI1"


def test_field_types_round_trip() -> None:
    exp = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
    o = Order.objects.create(customer_id="c3", total=decimal.Decimal("12.50"), tags={"gift", "rush"},
                             lines=[{"sku": "A", "qty": 2}], extra={"note": "hi", "n": [1, 2]}, expires_at=exp)
    got = Order.objects.get(customer_id="c3", order_id=o.order_id)
    assert got.total == decimal.Decimal("12.50") and got.tags == {"gift", "rush"}
    assert got.lines == [{"sku": "A", "qty": 2}] and got.extra == {"note": "hi", "n": [1, 2]}
    assert got.expires_at == exp and got.status == "NEW" and got.placed_at == o.placed_at


def test_format_spec_range_on_sort_key() -> None:
    for seq in range(1, 13):
        Reading.objects.create(sensor="s1", year=2024, seq=seq, value=seq * 1.5)
    Reading.objects.create(sensor="s1", year=2025, seq=1)
    with dynorm.capture() as c:
        got = [r.seq for r in Reading.objects.filter(sensor="s1", year=2024, seq__gte=10)]
    assert got == [10, 11, 12] and c.count == 1
    assert c.requests[0].scanned == 3  # the key condition did the narrowing
    assert [r.seq for r in Reading.objects.filter(sensor="s1", year=2024, seq__lt=3)] == [1, 2]
    assert Reading.objects.filter(sensor="s1").count() == 13
