"""An ``F()`` copy into a whole typed field never stores a value of another type (the item would be unreadable).

``update(name=F("doc__num"))`` once wrote an N into a String field and reported success; every later
``get()`` raised UnreadableItems. A source that is a declared field of another stored type is refused
before any request; a source at a document path (whose type nothing declares) makes the update
conditional on ``attribute_type(<source>, :T)``, so DynamoDB refuses a mismatched copy and nothing is
written. Real requests to DynamoDB Local; the items are read back raw.
"""

from __future__ import annotations

import asyncio

import pytest

import dynorm
from dynorm import F, ValidationError
from dynorm.exceptions import TransactionCanceled
from tests.faults import stored_item
from tests.models import Measure, Order

_DOC = {"num": 5, "txt": "hello", "lst": [1], "m": {"a": 1}}


def _measure() -> Measure:
    return Measure.objects.create(sensor="s1", qty=1, words={"w"}, doc=dict(_DOC), entries=[1, 2])


def test_a_declared_source_of_another_stored_type_is_refused_before_any_request() -> None:
    m = _measure()
    before = stored_item(Measure, sensor="s1")
    with dynorm.capture() as c:
        with pytest.raises(ValidationError, match=r"Measure.words = F\('qty'\): qty is a Integer field \(stored as "
                                                  r"N\) and words is a Set field \(stored as SS\).*nothing was sent"):
            m.update(words=F("qty"))
        with pytest.raises(ValidationError, match=r"Measure.doc = F\('entries'\): entries is a List field"):
            m.update(doc=F("entries"))  # a whole-field copy of another type: refused too
        with pytest.raises(ValidationError, match=r"Measure.doc = F\('entries'\)"):
            Measure.objects.filter(sensor="s1").update(doc=F("entries"))
        with pytest.raises(ValidationError, match=r"Measure.doc is a Map field \(stored as M\): "
                                                  r"F\('doc__num'\) \+ n gives a number"):
            m.update(doc=F("doc__num") + 1)
        with pytest.raises(ValidationError, match=r"Measure.words = F\('qty'\)"):
            with dynorm.transaction() as tx:
                tx.update(m, words=F("qty"))
    assert c.count == 0
    assert stored_item(Measure, sensor="s1") == before


@pytest.mark.parametrize("target, source, found", [
    ("qty", "doc__txt", "holds a value of type S"),            # N <- S, one UpdateItem
    ("qty", "doc.txt", "holds a value of type S"),             # the dotted spelling
    ("words", "doc__num", "holds a value of type N"),          # SS <- N
    ("entries", "doc__m", "holds a value of type M"),          # L <- M
    ("qty", "doc__nope", "is missing on the stored item"),     # nothing to copy
])
def test_a_path_source_of_another_type_is_refused_by_dynamodb_and_nothing_is_written(
        target: str, source: str, found: str) -> None:
    m = _measure()
    before = stored_item(Measure, sensor="s1")
    with dynorm.capture() as c, pytest.raises(ValidationError) as err:
        m.update(**{target: F(source)})
    assert c.operations == ["UpdateItem"]
    assert "attribute_type(#n" in c.requests[0].params["ConditionExpression"]
    shown = source.replace("__", ".")
    assert f"update Measure sensor='s1': Measure.{target} = F({source!r}): {shown} {found}" in str(err.value)
    assert "nothing was written" in str(err.value) and (err.value.entity, err.value.field) == ("Measure", target)
    assert stored_item(Measure, sensor="s1") == before
    assert Measure.objects.get(sensor="s1").qty == 1  # the item stays readable
    assert m.qty == 1 and m.doc == _DOC               # the instance is unchanged


def test_an_increment_from_a_path_and_a_versioned_copy_are_refused_too() -> None:
    m = _measure()
    with dynorm.capture() as c, pytest.raises(ValidationError, match=r"Measure.qty = F\('doc__txt'\): doc.txt holds "
                                                                     r"a value of type S.*nothing was written"):
        m.update(qty=F("doc__txt") + 1)  # the one-request increment (a TransactWriteItems)
    assert c.operations == ["TransactWriteItems"]
    o = Order.objects.create(customer_id="c1", extra={"m": {"a": 1}})
    with pytest.raises(ValidationError, match=r"Order.status = F\('extra__m'\): extra.m holds a value of type M"):
        o.update(status=F("extra__m"))
    assert Order.objects.get(customer_id="c1", order_id=o.order_id).status == "NEW" and o.version == 1
    with pytest.raises(TransactionCanceled, match=r"Measure.qty = F\('doc__txt'\): doc.txt holds a value of type S"):
        with dynorm.transaction() as tx:
            tx.update(m, qty=F("doc__txt"))
    with pytest.raises(ValidationError, match=r"Measure.words = F\('doc__num'\)"):
        asyncio.run(m.aupdate(words=F("doc__num")))
    assert stored_item(Measure, sensor="s1")["qty"] == {"N": "1"}


def test_copies_of_the_right_type_and_defaults_are_written() -> None:
    m = _measure()
    m.update(qty=F("doc__num"), entries=F("doc__lst"), doc=F("doc__m"))
    raw = stored_item(Measure, sensor="s1")
    assert (raw["qty"], raw["entries"], raw["doc"]) == ({"N": "5"}, {"L": [{"N": "1"}]}, {"M": {"a": {"N": "1"}}})
    m.update(qty=F("doc__nope").if_not_exists(7))  # a missing source with a default
    assert Measure.objects.get(sensor="s1").qty == 7
    with pytest.raises(ValidationError, match=r"Measure.qty"):
        m.update(qty=F("doc__nope").if_not_exists("seven"))  # the default is of the field's type
    m.update(amount=F("qty"))  # two declared fields stored alike (N)
    assert stored_item(Measure, sensor="s1")["amount"] == {"N": "7"}


def test_a_missing_source_field_is_a_clear_error_naming_it() -> None:
    m = Measure.objects.create(sensor="s1", doc={})
    before = stored_item(Measure, sensor="s1")
    for change in ({"amount": F("qty") + 1}, {"doc__x": F("qty")}):
        with pytest.raises(ValidationError, match=r"update Measure sensor='s1': an F\(\) source \(qty\) is missing "
                                                  r"on the stored item.*Nothing was written"):
            m.update(**change)
    assert stored_item(Measure, sensor="s1") == before
