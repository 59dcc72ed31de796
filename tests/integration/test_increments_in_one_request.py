"""An ``F()`` increment no version protects is one request; what it computed is read only when read.

``filter(...).update(n=F("n") - 2)`` and an unversioned ``obj.update(n=F("n") + 1)`` are one
one-action TransactWriteItems (exactly once under botocore's retries) with no read-back: the
fields the write could not compute stay deferred on the instance returned and load with one
consistent GetItem on first read. Every guarantee of a whole instance still holds: the value read
is the new one (never the old one nor the ``F``), a later write loads what it needs first, index
keys are rewritten from known values only, an undeclared attribute survives, ``repr()`` sends
nothing. Real requests to DynamoDB Local; the stored items are read back raw.
"""

from __future__ import annotations

import asyncio
from typing import Any

import dynorm
from dynorm import F, Q, backend
from tests.faults import stored_item
from tests.models import Counter, Tally


def _product(stock: int = 10) -> Any:
    from demo_project.catalog.models import Product

    return Product.objects.create(brand_id="3", category_id="1", name="Kayak", stock_level=stock)


def test_a_decrease_by_key_is_one_transaction_and_its_results_load_on_first_read(dynorm_tables: Any) -> None:
    from demo_project.catalog.models import Product

    made = _product()
    with dynorm.capture() as c:
        got = Product.objects.filter(product_id=made.product_id).update(
            stock_level=F("stock_level") - 2, condition=Q(stock_level__gte=2))
    assert c.operations == ["TransactWriteItems"]
    assert stored_item(Product, product_id=made.product_id)["stock_level"] == {"N": "8"}
    assert got.key == {"product_id": made.product_id}
    assert "stock_level" not in got.attribute_values and "version" not in got.attribute_values
    with dynorm.capture() as c:
        assert (got.stock_level, got.version, got.name, got.brand_id) == (8, 2, "Kayak", "3")
        assert got.created_at == made.created_at
    assert [(r.operation, r.params.get("ConsistentRead")) for r in c.requests] == [("GetItem", True)]


def test_an_instance_update_shows_the_new_value_never_the_old_one_nor_the_expression(dynorm_tables: Any) -> None:
    """Django leaves an F() field unusable until refresh_from_db(); here it loads itself, once."""
    t = Tally.objects.create(name="d", n=5, note="kept")
    with dynorm.capture() as c:
        assert t.update(n=F("n") - 2) is t
    assert c.operations == ["TransactWriteItems"]
    assert t.attribute_values.get("note") == "kept"  # what the write did not compute stays as it was
    with dynorm.capture() as c:
        assert t.n == 3 and t.n == 3
    assert c.operations == ["GetItem"]


def test_a_never_read_versioned_instance_defers_the_version_the_table_incremented(dynorm_tables: Any) -> None:
    Counter.objects.create(name="z")  # version 1
    blank = Counter(name="z")  # never read: no version to expect, so the table increments it
    with dynorm.capture() as c:
        blank.update(value=F("value") + 1)
    assert c.operations == ["TransactWriteItems"]
    assert "version" not in blank.attribute_values  # not the None it held: the stored version is 2
    assert (blank.version, blank.value) == (2, 1)
    blank.note = "after"
    blank.save(update_fields=["note"])  # conditional on version 2: no StaleWrite
    stored = stored_item(Counter, name="z")
    assert (stored["version"], stored["note"], stored["value"]) == ({"N": "3"}, {"S": "after"}, {"N": "1"})


def test_a_later_update_of_an_index_field_loads_the_deferred_sources_first(dynorm_tables: Any) -> None:
    from demo_project.catalog.models import Product

    made = _product()
    got = Product.objects.filter(product_id=made.product_id).update(stock_level=F("stock_level") + 1)
    with dynorm.capture() as c:
        got.update(brand_id="9")  # GSI1 and GSI2 keys also need category_id: loaded, then pinned
    assert c.operations == ["GetItem", "UpdateItem"]
    raw = stored_item(Product, product_id=made.product_id)
    pid = made.product_id
    assert (raw["GSI1PK"], raw["GSI1SK"]) == ({"S": "v2#B#9"}, {"S": f"C#1#P#{pid}"})
    assert (raw["GSI2PK"], raw["GSI2SK"]) == ({"S": "v2#C#1"}, {"S": f"B#9#P#{pid}"})
    assert (raw["version"], raw["stock_level"]) == ({"N": "3"}, {"N": "11"})
    assert got.version == 3 and got.stock_level == 11


def test_a_whole_save_after_an_increment_by_key_keeps_undeclared_attributes(dynorm_tables: Any) -> None:
    Tally.objects.create(name="u", n=1)
    backend.call("UpdateItem", {"TableName": Tally._meta.table.table_name(),
                                "Key": Tally._meta.primary_key({"name": "u"}), "UpdateExpression": "SET nickname = :n",
                                "ExpressionAttributeValues": {":n": {"S": "x"}}})  # another service's attribute
    got = Tally.objects.filter(name="u").update(n=F("n") + 1)
    got.note = "saved"
    with dynorm.capture() as c:
        got.save()  # needs every field: the deferred ones are loaded first, never written as None
    assert c.operations == ["GetItem", "UpdateItem"]
    raw = stored_item(Tally, name="u")
    assert (raw["n"], raw["note"], raw["nickname"]) == ({"N": "2"}, {"S": "saved"}, {"S": "x"})


def test_a_failed_condition_still_raises_with_the_item_and_writes_nothing(dynorm_tables: Any) -> None:
    from demo_project.catalog.models import Product

    made = _product(stock=1)
    with dynorm.capture() as c:
        try:
            Product.objects.filter(product_id=made.product_id).update(
                stock_level=F("stock_level") - 2, condition=Q(stock_level__gte=2))
        except dynorm.ConditionFailed as exc:
            assert exc.item is not None and exc.item.stock_level == 1
        else:
            raise AssertionError("the condition did not hold: ConditionFailed expected")
    assert c.operations == ["TransactWriteItems"]
    assert stored_item(Product, product_id=made.product_id)["version"] == {"N": "1"}


def test_repr_of_an_instance_with_deferred_fields_sends_nothing(dynorm_tables: Any) -> None:
    from demo_project.catalog.models import Product

    made = _product()
    got = Product.objects.filter(product_id=made.product_id).update(stock_level=F("stock_level") + 1)
    with dynorm.capture() as c:
        text = repr(got)
    assert c.operations == [] and text == f"<Product product_id={made.product_id!r}>"
    assert repr(Product.objects.get(product_id=made.product_id)) == \
        f"<Product product_id={made.product_id!r} name='Kayak'>"


def test_save_of_other_fields_after_an_increment_writes_them_and_leaves_the_increment_alone(
        dynorm_tables: Any) -> None:
    """``save(update_fields=[...])`` validates what it writes: the deferred ``n`` is neither loaded nor None."""
    t = Tally.objects.create(name="s", n=5)
    t.update(n=F("n") + 1)
    by_key = Tally.objects.filter(name="s").update(n=F("n") + 1)
    for obj, note in ((t, "one"), (by_key, "two")):
        obj.note = note
        with dynorm.capture() as c:
            obj.save(update_fields=["note"])
        assert c.operations == ["UpdateItem"]
        raw = stored_item(Tally, name="s")
        assert (raw["n"], raw["note"]) == ({"N": "7"}, {"S": note})
    assert by_key.n == 7  # still deferred, loaded on first read


def test_asave_of_other_fields_after_an_aupdate_increment(dynorm_tables: Any) -> None:
    async def run() -> list[str]:
        t = await Tally.objects.acreate(name="a", n=1)
        await t.aupdate(n=F("n") + 2)
        t.note = "async"
        with dynorm.capture() as c:
            await t.asave(update_fields=["note"])
        return c.operations

    assert asyncio.run(run()) == ["UpdateItem"]
    raw = stored_item(Tally, name="a")
    assert (raw["n"], raw["note"]) == ({"N": "3"}, {"S": "async"})


def test_full_clean_validates_the_fields_the_instance_holds_and_sends_nothing(dynorm_tables: Any) -> None:
    """A deferred field holds no value to validate (its stored value was validated when written)."""
    Tally.objects.create(name="c", n=1, note="x")
    got = Tally.objects.filter(name="c").update(n=F("n") + 1)
    partial = Tally.objects.only("name", "note").get(name="c")
    with dynorm.capture() as c:
        got.full_clean()
        partial.full_clean()
    assert c.operations == []
    partial.note = 3  # a held value is still validated
    try:
        partial.full_clean()
    except dynorm.ValidationError as exc:
        assert exc.field == "note"
    else:
        raise AssertionError("a bad held value must fail full_clean()")
    partial.full_clean(exclude=["note"])  # Django's exclude
