"""Decoding a page of items allocates no more per item than PynamoDB's own Model (issue 24).

The query decoder passes the class it found from the entity type down (no second lookup), and an
instance gets a ``ModelState`` only when something needs one: an item whose index-key fields are
stored as their values serialise needs no ``read_as`` record, so a decoded ``Product`` is an object
and its values dict, as PynamoDB's is. Memory is measured with tracemalloc (deterministic for one
Python build; no timing). No I/O.
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any, Callable

from pynamodb.attributes import NumberAttribute, UnicodeAttribute, UTCDateTimeAttribute, VersionAttribute
from pynamodb.models import Model

from demo_project.catalog.models import Brand, Product
from dynorm.iterables import decoder

N = 1000


class _PynamoProduct(Model):
    """The same item as a hand-written PynamoDB model (every attribute declared)."""

    class Meta:
        table_name = "unused"
        host = "http://127.0.0.1:9"
        region = "us-east-1"

    PK = UnicodeAttribute(hash_key=True)
    SK = UnicodeAttribute(range_key=True)
    GSI1PK = UnicodeAttribute(null=True)
    GSI1SK = UnicodeAttribute(null=True)
    GSI2PK = UnicodeAttribute(null=True)
    GSI2SK = UnicodeAttribute(null=True)
    entityType = UnicodeAttribute()
    _dynorm_rev = UnicodeAttribute(null=True)
    product_id = UnicodeAttribute()
    brand_id = UnicodeAttribute()
    category_id = UnicodeAttribute()
    name = UnicodeAttribute()
    description = UnicodeAttribute(null=True)
    stock_level = NumberAttribute(default=0)
    created_at = UTCDateTimeAttribute()
    version = VersionAttribute()


def _raw(i: int) -> dict[str, Any]:
    pid = f"01J{i:023d}"
    return {"PK": {"S": f"v2#P#{pid}"}, "SK": {"S": "METADATA"}, "GSI1PK": {"S": "v2#B#3"},
            "GSI1SK": {"S": f"C#1#P#{pid}"}, "GSI2PK": {"S": "v2#C#1"}, "GSI2SK": {"S": f"B#3#P#{pid}"},
            "entityType": {"S": "PRODUCT"}, "_dynorm_rev": {"S": "abcdefghijklmnop"}, "product_id": {"S": pid},
            "brand_id": {"S": "3"}, "category_id": {"S": "1"}, "name": {"S": f"Product {i}"},
            "stock_level": {"N": str(1000 + i)}, "created_at": {"S": "2026-01-02T03:04:05.000000+0000"},
            "version": {"N": "3"}}


def _bytes_per_item(decode: Callable[[dict[str, Any]], Any], items: list[dict[str, Any]]) -> float:
    """Bytes a decoded item keeps alive: the growth over a second batch, so one-off allocations
    (per-class plans, caches, free lists) made while decoding the first one do not count; the least
    of three tries, since tracemalloc also counts what other threads of the test process (the test
    plugin's) allocate meanwhile, which only ever adds."""
    return min(_one_try(decode, items) for _ in range(3))


def _one_try(decode: Callable[[dict[str, Any]], Any], items: list[dict[str, Any]]) -> float:
    half = len(items) // 2
    gc.collect()
    tracemalloc.start()
    try:
        first = [decode(dict(raw)) for raw in items[:half]]
        before = tracemalloc.get_traced_memory()[0]
        second = [decode(dict(raw)) for raw in items[half:]]
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(first) + len(second) == len(items)
    return (after - before) / (len(items) - half)


def test_a_decoded_product_costs_no_more_memory_than_pynamodbs_model() -> None:
    items = [_raw(i) for i in range(N)]
    qs = Product.objects.by_brand("3")
    decode = decoder(qs, qs._plan())
    ours = _bytes_per_item(decode, items)
    theirs = _bytes_per_item(_PynamoProduct.from_raw_data, items)
    # the same objects per item (an instance, its values dict, the values); 6% of slack: in a test
    # process the growth measured moves with what the process did before (the allocator's pools and
    # free lists; seen 628-650 bytes for the same decode, PynamoDB's 629); `make bench` measures it
    # in a process of its own (0.32x boto3's against PynamoDB's 0.34x)
    assert ours <= theirs * 1.06, (ours, theirs)
    assert ours < 700  # before: 1,141 bytes (an instance, a values dict, a ModelState, its dicts and tuples)


def test_a_decoded_item_gets_its_state_only_when_asked() -> None:
    qs = Product.objects.by_brand("3")
    obj = decoder(qs, qs._plan())(_raw(1))
    assert "_state" not in vars(obj) and obj.description is None and "_state" not in vars(obj)
    assert obj._state.adding is False and obj._state.read_as == {} and "_state" in vars(obj)
    brand = decoder(Brand.objects.all(), Brand.objects.all()._plan())(
        {"PK": {"S": "v2#BRANDS"}, "SK": {"S": "B#1"}, "entityType": {"S": "BRAND"}, "brand_id": {"S": "1"},
         "name": {"S": "Acme"}})
    assert "_state" not in vars(brand) and brand.name == "Acme"


def test_a_field_stored_in_another_form_keeps_how_it_was_stored() -> None:
    """What a write's pin needs: the attribute as stored, when pinning the value would not match it."""
    from tests.models import Order

    qs = Order.objects.of_customer("c")
    decode = decoder(qs, qs._plan())
    raw = {"PK": {"S": "v2#CUST#c"}, "SK": {"S": "ORDER#01J00000000000000000000001"}, "entityType": {"S": "ORDER"},
           "customer_id": {"S": "c"}, "order_id": {"S": "01J00000000000000000000001"}, "coupon": {"S": "X"},
           "placed_at": {"S": "2026-01-02T03:04:05.000000Z"}, "version": {"N": "1"}}
    assert "_state" not in vars(decode(dict(raw)))  # stored as dynorm writes it: nothing to keep
    raw["placed_at"] = {"S": "2026-01-02T05:04:05+02:00"}  # the same instant, written by another writer
    obj = decode(raw)
    assert list(obj._state.read_as) == ["placed_at"]
    assert obj._state.read_as["placed_at"][1] == {"S": "2026-01-02T05:04:05+02:00"}
