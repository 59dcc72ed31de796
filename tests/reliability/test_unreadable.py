"""One bad stored item never hides a page (issue 9, section 5): the error names the item's table
key and attribute and carries the items that decoded; skip_unreadable() reads past bad items."""

from __future__ import annotations

from typing import Any

import pytest

import dynorm
from dynorm import F, backend
from tests.models import Customer, Measure, Order, Retail, Tally


def _spoil(model: Any, key: dict[str, Any], attribute: str, av: dict[str, Any]) -> dict[str, Any]:
    """Another writer stores ``attribute`` with a type or text the model cannot read."""
    table_key = model._meta.primary_key(key)
    backend.call("UpdateItem", {"TableName": model._meta.table.table_name(), "Key": table_key,
                                "UpdateExpression": "SET #a = :v", "ExpressionAttributeNames": {"#a": attribute},
                                "ExpressionAttributeValues": {":v": av}})
    return {k: v["S"] for k, v in table_key.items()}


@pytest.fixture
def orders() -> list[Order]:
    Customer.objects.create(customer_id="c", email="c@example.com")
    made = [Order.objects.create(customer_id="c", total=i) for i in range(4)]
    return sorted(made, key=lambda o: o.order_id)


def test_list_raises_naming_key_and_attribute_and_keeps_the_items_that_decoded(orders: list[Order]) -> None:
    key = _spoil(Order, orders[1].key, "total", {"S": "ten"})
    with pytest.raises(dynorm.UnreadableItems) as err:
        list(Order.objects.of_customer("c"))
    e = err.value
    assert [o.order_id for o in e.items] == [orders[i].order_id for i in (0, 2, 3)]
    (bad,) = e.errors
    assert bad.key == key and bad.attribute == "total" and bad.stored == {"S": "ten"} and bad.entity == "Order"
    assert key["PK"] in str(e) and key["SK"] in str(e) and "'total'" in str(e) and "skip_unreadable" in str(e)


def test_skip_unreadable_returns_the_rest_and_lists_the_bad_items(orders: list[Order]) -> None:
    _spoil(Order, orders[0].key, "total", {"S": "ten"})
    _spoil(Order, orders[3].key, "placed_at", {"S": "yesterday"})
    qs = Order.objects.of_customer("c").skip_unreadable()
    assert [o.order_id for o in qs] == [orders[1].order_id, orders[2].order_id]
    assert [(u.attribute, u.stored) for u in qs.unreadable] == [("total", {"S": "ten"}),
                                                                ("placed_at", {"S": "yesterday"})]
    assert "Order.placed_at (DateTime) cannot read it" in str(qs.unreadable[1])


def test_get_of_a_bad_item_names_it(orders: list[Order]) -> None:
    key = _spoil(Order, orders[2].key, "placed_at", {"S": "2024-13-45T00:00:00.000000Z"})
    with dynorm.capture() as c:
        with pytest.raises(dynorm.UnreadableItems) as err:
            Order.objects.get(customer_id="c", order_id=orders[2].order_id)
    assert c.operations == ["GetItem"]
    assert err.value.errors[0].key == key and err.value.errors[0].attribute == "placed_at"
    assert err.value.items == []
    assert Order.objects.get(customer_id="c", order_id=orders[1].order_id).total == 1  # others still read


def test_page_carries_its_good_items_and_the_cursor_to_go_on(orders: list[Order]) -> None:
    _spoil(Order, orders[1].key, "total", {"S": "ten"})
    qs = Order.objects.of_customer("c")
    with pytest.raises(dynorm.UnreadableItems) as err:
        qs.page(size=2)
    # a bad item does not count towards the page size, like an item a FilterExpression dropped
    assert [o.order_id for o in err.value.items] == [orders[0].order_id, orders[2].order_id]
    rest = qs.page(size=2, cursor=err.value.cursor)
    assert [o.order_id for o in rest.items] == [orders[3].order_id] and rest.cursor is None
    page = qs.skip_unreadable().page(size=2)
    assert [o.order_id for o in page] == [orders[0].order_id, orders[2].order_id] and len(page.unreadable) == 1


def test_collection_keeps_every_other_entity(orders: list[Order]) -> None:
    _spoil(Order, orders[3].key, "total", {"BOOL": True})
    with pytest.raises(dynorm.UnreadableItems) as err:
        Customer.objects.collection(customer_id="c").grouped()
    assert {type(x).__name__ for x in err.value.items} == {"Customer", "Order"}
    assert len(err.value.items) == 4
    groups = Customer.objects.collection(customer_id="c").skip_unreadable().grouped()
    assert len(groups[Customer]) == 1 and len(groups[Order]) == 3


def test_an_integer_stored_as_a_string_by_another_writer() -> None:
    Measure.objects.create(sensor="a", qty=1)
    key = _spoil(Measure, {"sensor": "a"}, "qty", {"S": "10"})
    with pytest.raises(dynorm.UnreadableItems, match=r"attribute 'qty' = \{'S': '10'\}: it is stored as S but "
                                                     r"Measure.qty \(Integer\) reads N"):
        Measure.objects.get(sensor="a")
    assert Measure.objects.skip_unreadable().scan().unreadable == []  # lazy: nothing read yet
    qs = Measure.objects.scan().skip_unreadable()
    assert list(qs) == [] and qs.unreadable[0].key == key


def test_iterator_yields_every_good_item_then_raises(orders: list[Order]) -> None:
    _spoil(Order, orders[0].key, "total", {"S": "ten"})
    got = []
    with pytest.raises(dynorm.UnreadableItems):
        for o in Order.objects.of_customer("c").iterator():
            got.append(o.order_id)
    assert got == [o.order_id for o in orders[1:]]


def test_in_bulk_and_prefetch_report_a_bad_item_and_keep_the_others() -> None:
    from tests.models import Employment, Person

    Person.objects.bulk_create([Person(person_id=f"b{i}", name="x") for i in range(3)])
    for i in range(3):
        Employment.objects.create(store_id="s", person_id=f"b{i}", person=f"b{i}")
    key = _spoil(Person, {"person_id": "b1"}, "name", {"N": "7"})
    with pytest.raises(dynorm.UnreadableItems) as err:
        Person.objects.in_bulk(["b0", "b1", "b2"])
    assert sorted(p.person_id for p in err.value.items) == ["b0", "b2"] and err.value.errors[0].key == key
    qs = Person.objects.skip_unreadable()
    assert sorted(qs.in_bulk(["b0", "b1", "b2"])) == ["b0", "b2"] and qs.unreadable[0].attribute == "name"
    with pytest.raises(dynorm.UnreadableItems):
        list(Employment.objects.filter(store_id="s").prefetch("person"))
    jobs = Employment.objects.filter(store_id="s").prefetch("person").skip_unreadable()
    assert [j.related("person") is not None for j in jobs] == [True, False, True]
    assert jobs.unreadable[0].key == key


# -- writes and by-key reads of an item another writer spoiled ---------------------------------------

def _poison(name: str) -> None:
    """Another writer stores ``note`` as a number (the model reads a string)."""
    backend.call("UpdateItem", {
        "TableName": Retail.table_name(), "Key": Tally._meta.primary_key({"name": name}),
        "UpdateExpression": "SET #a = :v", "ExpressionAttributeNames": {"#a": "note"},
        "ExpressionAttributeValues": {":v": {"N": "5"}}})


def _stored(name: str) -> dict[str, Any]:
    return dict(backend.call("GetItem", {"TableName": Retail.table_name(), "ConsistentRead": True,
                                         "Key": Tally._meta.primary_key({"name": name})})["Item"])


@pytest.mark.parametrize("how", ["queryset", "instance"])
def test_update_that_was_applied_is_reported_applied_when_the_item_has_a_bad_attribute(how: str) -> None:
    obj = Tally.objects.create(name=f"p{how}")
    _poison(f"p{how}")
    if how == "queryset":
        # one TransactWriteItems, nothing read back: the bad attribute shows when the result is first
        # read (its fields load together), naming it; a projected read of the field still works
        result = Tally.objects.filter(name=f"p{how}").update(n=F("n") + 1)
        assert _stored(f"p{how}")["n"] == {"N": "1"}
        with pytest.raises(dynorm.UnreadableItems, match="attribute 'note'"):
            _ = result.n
        result.refresh_from_db(fields=["n"])
        assert result.n == 1
        return
    with pytest.warns(RuntimeWarning, match="was applied.*attribute 'note'"):
        obj.update(n=7)
        assert obj.n == 7  # the planned value, kept
    assert _stored(f"p{how}")["n"] == {"N": "7"}


def test_failed_condition_on_an_item_with_a_bad_attribute_raises_condition_failed() -> None:
    Tally.objects.create(name="q")
    _poison("q")
    with pytest.raises(dynorm.ConditionFailed, match="nothing was written") as info:
        Tally.objects.filter(name="q").update(n=F("n") + 1, condition=dynorm.Q(n__gte=100))
    assert info.value.raw["note"] == {"N": "5"}  # type: ignore[attr-defined]
    assert info.value.unreadable.attribute == "note"  # type: ignore[attr-defined]
    assert _stored("q")["n"] == {"N": "0"}


@pytest.mark.parametrize("how", ["refresh_from_db", "deferred_field"])
def test_refresh_and_deferred_load_of_a_bad_item_raise_unreadable_items(how: str) -> None:
    Tally.objects.create(name="bad")
    _poison("bad")
    obj = Tally.objects.only("name", "n").get(name="bad")
    with pytest.raises(dynorm.UnreadableItems, match="PK='v1#TALLY#bad'") as info:
        if how == "refresh_from_db":
            obj.refresh_from_db()
        else:
            obj.note  # noqa: B018 - loads the deferred field
    assert info.value.errors[0].attribute == "note"
    assert obj.name == "bad" and obj.n == 0  # unchanged
