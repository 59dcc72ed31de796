"""Writes that never lose data: updates, locking, transactions, batches, prefetch, faults."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

import dynorm
from demo_project.catalog.models import Product
from dynorm import F, Q
from dynorm.batch import RetryPolicy, bulk_create
from tests.faults import Hook, fake_response, raw_at
from tests.models import Counter, Employment, Order, Person, Store


# -- update expressions -------------------------------------------------------------------
def test_update_is_one_updateitem_refreshing_the_instance() -> None:
    p = Product.objects.create(brand_id="1", category_id="1", name="Widget", stock_level=10)
    with dynorm.capture() as c:
        p.update(stock_level=F("stock_level") - 3, condition=Q(stock_level__gte=3), description="new")
    assert c.operations == ["UpdateItem"]
    assert (p.stock_level, p.description, p.version) == (7, "new", 2)
    assert Product.objects.get(product_id=p.product_id).stock_level == 7


def test_failed_condition_carries_the_item_and_writes_nothing() -> None:
    p = Product.objects.create(brand_id="1", category_id="1", name="Widget", stock_level=2)
    before = raw_at(Product._meta.table, f"v2#P#{p.product_id}", "METADATA")
    with pytest.raises(dynorm.ConditionFailed) as err:
        p.update(stock_level=F("stock_level") - 3, condition=Q(stock_level__gte=3))
    assert isinstance(err.value.item, Product) and err.value.item.stock_level == 2
    assert raw_at(Product._meta.table, f"v2#P#{p.product_id}", "METADATA") == before


def test_compound_conditions_on_writes_are_sent_as_dynamodb_takes_them() -> None:
    """A ``Q`` joined with ``|``/``&`` or negated is one group beside the write's own conditions (entity
    type, version, revision token); wrapping it again gave ``((a OR b))``, which DynamoDB refuses
    ("redundant parentheses") after a request."""
    p = Product.objects.create(brand_id="1", category_id="1", name="Widget", stock_level=5)
    Store.objects.create(store_id="s1", name="One")
    with dynorm.capture() as c:
        p.update(stock_level=4, condition=Q(stock_level=5) | Q(name="nobody"))
        Product.objects.filter(product_id=p.product_id).update(name="W", condition=~(Q(stock_level=0) | Q(name="x")))
        p.refresh_from_db()
        with dynorm.transaction() as tx:
            tx.check(Store, {"store_id": "s1"}, condition=Q(name="One") & Q(city__exists=False))
            tx.update(p, stock_level=3, condition=~Q(stock_level=0))
        with pytest.raises(dynorm.ConditionFailed):
            p.update(stock_level=2, condition=Q(stock_level=0) | Q(name="nobody"))
        Store.objects.get(store_id="s1").delete(condition=Q(name="nobody") | Q(city__exists=False))
    assert c.operations == ["UpdateItem", "UpdateItem", "GetItem", "TransactWriteItems", "UpdateItem", "GetItem",
                            "DeleteItem"]
    assert Product.objects.get(product_id=p.product_id).stock_level == 3
    assert not Store.objects.filter(store_id="s1").exists()


def test_update_without_read_and_missing_item() -> None:
    p = Product.objects.create(brand_id="1", category_id="1", name="Widget", stock_level=5)
    with dynorm.capture() as c:
        got = Product.objects.filter(product_id=p.product_id).update(stock_level=F("stock_level") + 5)
    # an increment no version condition protects: one one-action transaction (applied once)...
    assert c.operations == ["TransactWriteItems"]
    with dynorm.capture() as c:  # ...whose results (the F() field, the version) load on first read
        assert (got.stock_level, got.version, got.name) == (10, 2, "Widget")
    assert c.operations == ["GetItem"]
    with pytest.raises(Product.DoesNotExist, match="update\\(\\) changes existing items only"):
        Product.objects.filter(product_id="01HZZZZZZZZZZZZZZZZZZZZZZZ").update(name="ghost")
    assert Product.objects.filter(product_id="01HZZZZZZZZZZZZZZZZZZZZZZZ").count() == 0
    with pytest.raises(dynorm.InvalidQuery):
        Product.objects.filter(brand_id="1").update(name="x")


def test_update_of_gsi_field_moves_item_in_index() -> None:
    p = Product.objects.create(brand_id="1", category_id="1", name="Mover")
    p.update(brand_id="2")
    assert [x.name for x in Product.objects.by_brand("1")] == []
    assert [x.name for x in Product.objects.by_brand("2").in_category("1")] == ["Mover"]
    with pytest.raises(dynorm.ValidationError, match="also needs category_id"):
        Product.objects.filter(product_id=p.product_id).update(brand_id="3")


def test_sparse_index_on_update_and_key_change() -> None:
    o = Order.objects.create(customer_id="c1")
    assert not list(Order.objects.filter(coupon="X"))
    o.update(coupon="X")
    assert [x.order_id for x in Order.objects.filter(coupon="X")] == [o.order_id]
    o.update(coupon=None)
    assert not list(Order.objects.filter(coupon="X"))
    with pytest.raises(dynorm.KeyChangeError):
        o.update(customer_id="c2")


def test_list_append_set_add_discard_if_not_exists_remove() -> None:
    o = Order.objects.create(customer_id="c1", tags={"a"}, lines=[1])
    o.update(tags=F("tags").add({"b", "c"}), lines=F("lines").append([2, 3]))
    assert o.tags == {"a", "b", "c"} and o.lines == [1, 2, 3]
    o.update(tags=F("tags").discard({"a"}), coupon="Z")
    assert o.tags == {"b", "c"} and o.coupon == "Z"
    o.update(coupon=None)
    assert o.coupon is None
    c = Counter.objects.create(name="hits")
    c.update(value=F("value").if_not_exists(0) + 1)
    assert c.value == 1


def test_bad_update_input_sends_nothing() -> None:
    p = Product.objects.create(brand_id="1", category_id="1", name="Widget")
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError, match="no field 'colour'"):
            p.update(colour="red")
        with pytest.raises(dynorm.ValidationError, match="stock_level"):
            p.update(stock_level="many")
        with pytest.raises(dynorm.ValidationError, match="required"):
            p.update(name=None)
        with pytest.raises(dynorm.ValidationError, match="expression"):
            p.update(brand_id=F("category_id"))
    assert c.count == 0


# -- optimistic locking under concurrency -------------------------------------------------
@pytest.mark.dynamodb_local_only(
    "moto checks a ConditionExpression and writes without a lock: two concurrent conditional puts can both succeed"
)
def test_get_or_create_race_creates_once() -> None:
    results: list[tuple[Any, bool]] = []
    barrier = threading.Barrier(8)

    def work() -> None:
        barrier.wait()
        results.append(Person.objects.get_or_create(person_id="p1", defaults={"name": "Ada"}))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(created for _, created in results) == 1
    assert {obj.name for obj, _ in results} == {"Ada"}
    obj, created = Person.objects.update_or_create(person_id="p1", defaults={"name": "Grace"})
    assert not created and Person.objects.get(person_id="p1").name == "Grace"
    obj, created = Person.objects.update_or_create(person_id="p2", defaults={"name": "Alan"})
    assert created and obj.name == "Alan"


# -- transactions -------------------------------------------------------------------------
def test_transaction_commits_atomically() -> None:
    p = Product.objects.create(brand_id="1", category_id="1", name="Gadget", stock_level=5)
    with dynorm.capture() as c:
        with dynorm.transaction() as tx:
            tx.update(p, stock_level=F("stock_level") - 1, condition=Q(stock_level__gte=1))
            tx.create(Person(person_id="buyer", name="Buyer"))
            tx.check(Store, {"store_id": "s1"}, condition=Q(name__exists=False))
    assert c.operations == ["TransactWriteItems"]
    assert Product.objects.get(product_id=p.product_id).stock_level == 4
    assert p.version == 2 and Person.objects.get(person_id="buyer").name == "Buyer"


def test_failed_third_action_leaves_everything_as_before() -> None:
    a = Product.objects.create(brand_id="1", category_id="1", name="A", stock_level=5)
    b = Product.objects.create(brand_id="1", category_id="1", name="B", stock_level=0)
    snapshot = {x.product_id: raw_at(Product._meta.table, f"v2#P#{x.product_id}", "METADATA") for x in (a, b)}
    with pytest.raises(dynorm.TransactionCanceled) as err:
        with dynorm.transaction() as tx:
            tx.update(a, stock_level=F("stock_level") - 1)
            tx.create(Person(person_id="p9", name="Nine"))
            tx.update(b, stock_level=F("stock_level") - 1, condition=Q(stock_level__gte=1))
    reasons = err.value.reasons
    assert [r["code"] for r in reasons] == ["None", "None", "ConditionalCheckFailed"]
    assert isinstance(reasons[2]["error"], dynorm.ConditionFailed) and reasons[2]["error"].item.stock_level == 0
    assert "action 2 (update Product" in str(err.value)
    for pid, before in snapshot.items():
        assert raw_at(Product._meta.table, f"v2#P#{pid}", "METADATA") == before
    assert not Person.objects.filter(person_id="p9").exists()


def test_block_that_raises_sends_nothing() -> None:
    with dynorm.capture() as c:
        with pytest.raises(RuntimeError):
            with dynorm.transaction() as tx:
                tx.create(Person(person_id="p3", name="Three"))
                raise RuntimeError("changed my mind")
    assert c.count == 0 and not Person.objects.filter(person_id="p3").exists()


def test_transaction_limits_checked_before_io() -> None:
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError, match="at most 100 actions"):
            with dynorm.transaction() as tx:
                for i in range(101):
                    tx.create(Person(person_id=f"p{i}", name="x"))
        with pytest.raises(dynorm.ValidationError, match="already touches this item"):
            with dynorm.transaction() as tx:
                tx.create(Person(person_id="dup", name="x"))
                tx.delete(Person, {"person_id": "dup"})
    assert c.count == 0


def test_stale_version_in_transaction() -> None:
    p = Product.objects.create(brand_id="1", category_id="1", name="V")
    other = Product.objects.get(product_id=p.product_id)
    other.update(name="changed")
    with pytest.raises(dynorm.TransactionCanceled) as err:
        with dynorm.transaction() as tx:
            p.name = "mine"
            tx.save(p)
    assert isinstance(err.value.reasons[0]["error"], dynorm.StaleWrite)
    assert Product.objects.get(product_id=p.product_id).name == "changed"


# -- batches ------------------------------------------------------------------------------
def test_bulk_create_with_unprocessed_items_writes_all_1000() -> None:
    # Fault injection on real requests: for the first two BatchWriteItem calls, half of the
    # items are taken out of the request (so they are really not written) and reported back
    # as UnprocessedItems in the parsed response.
    held: list[dict[str, Any]] = []
    faults = {"n": 0}

    def drop_half(params: dict[str, Any], **kwargs: Any) -> None:
        if faults["n"] < 2:
            faults["n"] += 1
            (table, reqs), = params["RequestItems"].items()
            held.append({table: reqs[len(reqs) // 2:]})
            del reqs[len(reqs) // 2:]

    def report_unprocessed(parsed: dict[str, Any], **kwargs: Any) -> None:
        if held:
            parsed["UnprocessedItems"] = held.pop()

    people = [Person(person_id=f"bulk{i:04d}", name=str(i)) for i in range(1000)]
    with Hook("before-parameter-build.dynamodb.BatchWriteItem", drop_half), \
            Hook("after-call.dynamodb.BatchWriteItem", report_unprocessed):
        with dynorm.capture() as c:
            Person.objects.bulk_create(people, base_delay=0.001)
    assert faults["n"] == 2
    assert c.operations.count("BatchWriteItem") == 42  # 40 chunks of 25 + 2 retries of the dropped halves
    assert len(Person.objects.scan()) == 1000


def test_always_unprocessed_ends_in_batch_incomplete_naming_keys() -> None:
    people = [Person(person_id=f"t{i}", name="x") for i in range(30)]

    def always(**kwargs: Any) -> Any:
        body = json.loads(kwargs["request"].body)
        (table, reqs), = body["RequestItems"].items()
        return fake_response(200, {"UnprocessedItems": {table: reqs}})

    with Hook("before-send.dynamodb.BatchWriteItem", always):
        with pytest.raises(dynorm.BatchIncomplete) as err:
            bulk_create(Person, people, RetryPolicy(max_attempts=3, base_delay=0.001), sleep=lambda s: None)
    assert len(err.value.unprocessed) == 30
    assert {"person_id": "t7"} in err.value.unprocessed


def test_duplicate_keys_in_batch_refused_before_io() -> None:
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError, match="same primary key"):
            Person.objects.bulk_create([Person(person_id="same", name="a"), Person(person_id="same", name="b")])
    assert c.count == 0


def test_in_bulk_and_bulk_delete() -> None:
    Person.objects.bulk_create([Person(person_id=f"ib{i}", name=str(i)) for i in range(150)])
    with dynorm.capture() as c:
        found = Person.objects.in_bulk([f"ib{i}" for i in range(150)] + ["missing"])
    assert len(found) == 150 and found["ib7"].name == "7"
    assert c.operations == ["BatchGetItem", "BatchGetItem"]
    assert Person.objects.bulk_delete([{"person_id": f"ib{i}"} for i in range(100)]) == 100
    assert len(Person.objects.in_bulk([f"ib{i}" for i in range(150)])) == 50


# -- prefetch -----------------------------------------------------------------------------
def test_prefetch_250_references_is_three_batch_gets() -> None:
    Person.objects.bulk_create([Person(person_id=f"emp{i}", name=f"E{i}") for i in range(250)])
    Employment.objects.bulk_create([Employment(store_id="s1", person_id=f"emp{i}", person=f"emp{i}")
                                    for i in range(250)])
    with dynorm.capture() as c:
        jobs = list(Employment.objects.filter(store_id="s1").prefetch("person"))
        names = {j.related("person").name for j in jobs}
    assert len(jobs) == 250 and len(names) == 250
    assert c.operations.count("BatchGetItem") == 3 and "GetItem" not in c.operations
    assert c.operations.count("Query") == 1


# -- throttling ---------------------------------------------------------------------------
