"""Values round-trip exactly through DynamoDB Local or are refused (issue 9, section 3).

Hypothesis properties save random values and read them back; an oracle (tests/unit/test_codec_limits.py)
says which values are storable, and those must come back equal, digit for digit.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dynorm
from dynorm import backend
from tests.models import Measure, StoreEmployee
from tests.unit.test_codec_limits import _oracle_number

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _exact(x: Any) -> decimal.Decimal:
    return decimal.Decimal(repr(x)) if isinstance(x, float) else decimal.Decimal(x)


def _stored(sensor: str) -> dict[str, Any]:
    key = Measure._meta.primary_key({"sensor": sensor})
    return backend.call("GetItem", {"TableName": Measure._meta.table.table_name(), "Key": key})["Item"]


@SETTINGS
@given(st.one_of(st.integers(-10 ** 40, 10 ** 40), st.floats(), st.decimals(), st.decimals(places=20)))
def test_number_round_trips_exactly_or_is_refused_before_any_request(x: Any) -> None:
    with dynorm.capture() as c:
        try:
            Measure(sensor="n", amount=x).save()
        except dynorm.ValidationError as exc:
            assert _oracle_number(x) is None, exc
            assert c.count == 0
            return
    assert _oracle_number(x) is not None
    got = Measure.objects.consistent().get(sensor="n").amount
    assert _exact(got) == _exact(x)


def test_a_decimal_given_to_number_never_goes_through_float() -> None:
    value = decimal.Decimal("1234567890.123456789012345")
    Measure.objects.create(sensor="d", amount=value)
    assert _stored("d")["amount"] == {"N": "1234567890.123456789012345"}
    assert Measure.objects.get(sensor="d").amount == value
    Measure.objects.create(sensor="f", amount=0.1)
    assert Measure.objects.get(sensor="f").amount == 0.1  # a float that holds the number stays a float


@SETTINGS
@given(st.decimals(allow_nan=False, allow_infinity=False).filter(lambda d: _oracle_number(d) is not None))
def test_decimal_field_round_trips_every_storable_decimal(x: decimal.Decimal) -> None:
    Measure(sensor="e", exact=x).save()
    assert Measure.objects.consistent().get(sensor="e").exact == x


@SETTINGS
@given(st.integers(-(10 ** 38) + 1, 10 ** 38 - 1) | st.integers(1, 9).map(lambda n: n * 10 ** 100))
def test_integer_round_trips_up_to_38_digits_and_huge_round_numbers(x: int) -> None:
    Measure(sensor="i", qty=x).save()
    got = Measure.objects.consistent().get(sensor="i").qty
    assert got == x and type(got) is int


offsets = st.integers(-14 * 60, 14 * 60).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))


@SETTINGS
@given(st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30), timezones=offsets))
def test_datetimes_of_any_year_round_trip_and_keep_four_digit_years(when: dt.datetime) -> None:
    Measure(sensor="t", at=when).save()
    assert Measure.objects.consistent().get(sensor="t").at == when
    stored = _stored("t")["at"]["S"]
    assert stored[4] == "-" and stored.endswith("Z"), stored


def test_a_date_before_year_1000_is_stored_with_four_digits_and_its_page_stays_readable() -> None:
    old = dt.datetime(204, 5, 1, 12, tzinfo=dt.timezone.utc)
    StoreEmployee.objects.create(store_id="s", employee_id="e1", name="a", started=old)
    StoreEmployee.objects.create(store_id="s", employee_id="e2", name="b")
    key = StoreEmployee._meta.primary_key({"store_id": "s", "employee_id": "e1"})
    raw = backend.call("GetItem", {"TableName": StoreEmployee._meta.table.table_name(), "Key": key})["Item"]
    assert raw["started"] == {"S": "0204-05-01T12:00:00.000000Z"}
    # an item written by an older dynorm, with the unpadded year, is still read
    raw["started"] = {"S": "204-05-01T12:00:00.000000Z"}
    backend.call("PutItem", {"TableName": StoreEmployee._meta.table.table_name(), "Item": raw})
    got = list(StoreEmployee.objects.filter(store_id="s"))
    assert [e.started for e in got] == [old, None]


text = st.text(st.characters(exclude_categories=("Cs",)), max_size=6)
leaf = st.one_of(text, st.integers(-10 ** 30, 10 ** 30), st.booleans(), st.none(),
                 st.decimals(allow_nan=False, allow_infinity=False, places=3).filter(lambda d: abs(d) < 10 ** 20))
nested = st.recursive(leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    text.filter(bool), inner, max_size=3), max_leaves=12)


def _deep(depth: int) -> Any:
    value: Any = {"leaf": "é😀"}
    for i in range(depth - 1):
        value = {f"k{i}": value} if i % 2 else [value]
    return value


@SETTINGS
@given(st.dictionaries(text.filter(bool), nested, max_size=4), st.integers(1, 31))
def test_nested_maps_round_trip_exactly_up_to_31_levels(doc: dict[str, Any], depth: int) -> None:
    doc = {**doc, "deep": _deep(depth - 1)} if depth > 1 else doc
    Measure(sensor="m", doc=doc).save()
    assert Measure.objects.consistent().get(sensor="m").doc == doc


def test_key_attributes_exactly_at_the_limits_are_accepted() -> None:
    prefix = len("v1#LABEL#")
    m = Measure.objects.create(sensor="k", label="L" * (2048 - prefix))  # GSI1PK: exactly 2048 bytes
    assert Measure.objects.filter(label=m.label).get().sensor == "k"
    e = StoreEmployee.objects.create(store_id="s", employee_id="é" * ((1024 - len("EMP#")) // 2), name="x")
    assert StoreEmployee.objects.get(store_id="s", employee_id=e.employee_id).name == "x"
    with dynorm.capture() as c:
        try:
            Measure.objects.create(sensor="k2", label="L" * (2049 - prefix))
        except dynorm.InvalidKeyValue:
            pass
        else:
            raise AssertionError("a 2049-byte GSI partition key was accepted")
    assert c.count == 0


@pytest.mark.parametrize(("value", "expected"), [
    (decimal.Decimal("0.1"), 0.1),  # the float whose shortest repr is the stored text
    (decimal.Decimal("1E-130"), 1e-130),
    (decimal.Decimal("1234567890.123456789012345"), decimal.Decimal("1234567890.123456789012345")),
])
def test_number_given_a_decimal_reads_back_by_the_documented_rule(value: decimal.Decimal, expected: Any) -> None:
    """fields.Number: a non-integral number reads back as the float whose shortest repr is the
    stored text, else a Decimal (the stored text cannot say which was written); fields.Decimal
    always gives a Decimal."""
    Measure.objects.create(sensor="decimal", amount=value, exact=value)
    back = Measure.objects.get(sensor="decimal")
    assert back.amount == expected and type(back.amount) is type(expected)
    assert back.exact == value and isinstance(back.exact, decimal.Decimal)
