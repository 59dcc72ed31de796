"""Planner refusals and inclusive-bound arithmetic (issue 11), without I/O."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import dynorm
from dynorm.plan import _adjacent_av, _av_key
from tests.models import Order, Reading

# numbers DynamoDB can store: up to 38 significant digits, magnitude 1E-130 .. 9.99E+125
_stored = st.one_of(
    st.integers(-(10**38) + 1, 10**38 - 1).map(decimal.Decimal),
    st.builds(lambda m, e: decimal.Decimal(m).scaleb(e), st.integers(-(10**38) + 1, 10**38 - 1),
              st.integers(-120, 80)),
    st.just(decimal.Decimal(0)),
).filter(lambda d: d == 0 or decimal.Decimal("1E-130") <= abs(d) < decimal.Decimal("1E+126"))


@given(x=_stored, bound=_stored)
def test_strict_number_bounds_become_exact_inclusive_bounds(x: decimal.Decimal, bound: decimal.Decimal) -> None:
    # the oracle: Python's own comparison of the two numbers
    av = {"N": str(bound)}
    up = _adjacent_av(Order._meta, "total", bound, av, 1)
    down = _adjacent_av(Order._meta, "total", bound, av, -1)
    assert up is not None and down is not None
    assert (x > bound) == (x >= _av_key(up))
    assert (x < bound) == (x <= _av_key(down))


@given(x=st.text(max_size=6), bound=st.text(max_size=6))
def test_strict_string_lower_bound_becomes_inclusive(x: str, bound: str) -> None:
    up = _adjacent_av(Order._meta, "status", bound, {"S": bound}, 1)
    assert up is not None
    # DynamoDB compares strings as UTF-8 bytes
    assert (x.encode() > bound.encode()) == (x.encode() >= _av_key(up))


@given(t=st.datetimes(min_value=dt.datetime(1000, 1, 1), max_value=dt.datetime(9999, 12, 30),
                      timezones=st.just(dt.timezone.utc)),
       b=st.datetimes(min_value=dt.datetime(1000, 1, 1), max_value=dt.datetime(9999, 12, 30),
                      timezones=st.just(dt.timezone.utc)))
def test_strict_datetime_bounds_move_one_microsecond(t: dt.datetime, b: dt.datetime) -> None:
    f = Order._meta.fields["placed_at"]
    av = {"S": f.serialize(b)}
    down = _adjacent_av(Order._meta, "placed_at", b, av, -1)
    up = _adjacent_av(Order._meta, "placed_at", b, av, 1)
    stored = f.serialize(t).encode()
    assert (t < b) == (stored <= _av_key(down))
    assert (t > b) == (stored >= _av_key(up))


def test_a_string_has_no_previous_value() -> None:
    # so a strict upper bound on a string sort attribute plus a lower bound is refused (with the fix)
    assert _adjacent_av(Order._meta, "status", "b", {"S": "b"}, -1) is None


def test_order_by_refusal_names_what_the_path_orders_by() -> None:
    with pytest.raises(dynorm.InvalidQuery) as err:
        Reading.objects.filter(sensor="s").order_by("value").explain()
    assert "primary: sk, year" in str(err.value)
    assert Reading.objects.filter(sensor="s", year=2024).order_by("-seq").explain().params[
        "ScanIndexForward"] is False
    with pytest.raises(dynorm.InvalidQuery, match="Scan returns items in no particular order"):
        Reading.objects.scan().order_by("-sk").explain()


def test_contradiction_is_refused_but_repeats_are_not() -> None:
    with pytest.raises(dynorm.InvalidQuery, match="Reading.year must equal both 2024 and 2025"):
        Reading.objects.filter(sensor="s", year=2024).filter(year=2025).explain()
    p = Reading.objects.filter(sensor="s", year=2024).filter(year=2024).explain()
    assert p.operation == "Query" and p.filter is None
