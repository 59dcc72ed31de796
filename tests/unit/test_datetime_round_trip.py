"""A ``fields.DateTime`` value reads back as the instant written, and its key orders by instant.

The stored form is UTC text (``2024-05-01T12:00:00.000000Z``, docs/reference.md); values come back
as aware UTC datetimes, and a naive datetime is taken to be UTC. Text another writer stored with an
offset (``2026-01-01T10:00:00+02:00``) is that instant: it read as 10:00 UTC, two hours off, and a
key rebuilt from the value read (a GSI sort key ``DUE#{due}``) then sorted it at the wrong time.
"""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dynorm import fields
from dynorm.keys import KeyTemplate, parse_datetime
from dynorm.migrations.rekey import _plain_for_keys

UTC = dt.timezone.utc
# every offset Python allows (strictly inside +-24 h), down to the microsecond
_DAY = dt.timedelta(hours=24)
offsets = st.timedeltas(min_value=-_DAY + dt.timedelta(microseconds=1), max_value=_DAY - dt.timedelta(microseconds=1))
# local times a day inside years 1..9999, so every offset keeps the instant inside them in UTC
aware = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30),
                     timezones=st.builds(dt.timezone, offsets))
naive = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59, 999999))
DUE = KeyTemplate("DUE#{due}")


def _is_utc(value: dt.datetime) -> bool:
    return value.tzinfo is UTC


@settings(max_examples=300, deadline=None)
@given(value=aware)
# offsets under a second, which CPython 3.11's fromisoformat reads as UTC
@example(value=dt.datetime(2000, 1, 2, tzinfo=dt.timezone(dt.timedelta(microseconds=1))))
@example(value=dt.datetime(2000, 1, 2, tzinfo=dt.timezone(-dt.timedelta(microseconds=1))))
def test_an_aware_datetime_reads_back_as_the_same_instant_in_utc(value: dt.datetime) -> None:
    f = fields.DateTime()
    stored = f.serialize(f.validate(value))
    assert stored.endswith("Z") and len(stored) == 27  # the documented stored form, UTC
    back = f.deserialize(stored)
    assert back == value and _is_utc(back) and back.microsecond == value.astimezone(UTC).microsecond
    # the same instant in another writer's text, with its offset: read as that instant, never relabelled
    foreign = f.deserialize(value.isoformat())
    assert foreign == value and _is_utc(foreign)
    assert f.serialize(foreign) == stored
    # so a key rebuilt from the value read is the key of the value written
    assert DUE.fill({"due": foreign}) == DUE.fill({"due": back}) == DUE.fill({"due": value})


@settings(max_examples=300, deadline=None)
@given(value=naive)
def test_a_naive_datetime_is_taken_to_be_utc_both_ways(value: dt.datetime) -> None:
    f = fields.DateTime()
    as_utc = value.replace(tzinfo=UTC)
    assert f.validate(value) == as_utc
    stored = f.serialize(f.validate(value))
    assert f.deserialize(stored) == as_utc and _is_utc(f.deserialize(stored))
    assert f.deserialize(value.isoformat()) == as_utc  # text without an offset is UTC
    assert DUE.fill({"due": value}) == DUE.fill({"due": as_utc}) == f"DUE#{stored}"


@settings(max_examples=300, deadline=None)
@given(a=aware, b=aware)
def test_keys_from_values_read_back_order_by_instant(a: dt.datetime, b: dt.datetime) -> None:
    """A DateTime in a sort-key template sorts in time order (UTF-8 bytes, as DynamoDB compares), and
    equal instants give one key, also for values read back from text stored with any offset."""
    f = fields.DateTime()
    ka = DUE.fill({"due": f.deserialize(a.isoformat())}).encode("utf-8")
    kb = DUE.fill({"due": f.deserialize(b.isoformat())}).encode("utf-8")
    assert (ka < kb) == (a < b) and (ka == kb) == (a == b)


def test_the_offset_in_stored_text_is_converted_not_dropped() -> None:
    f = fields.DateTime()
    assert f.deserialize("2026-01-01T10:00:00+02:00") == dt.datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
    assert f.deserialize("2026-01-01T00:30:00.5-05:30") == dt.datetime(2026, 1, 1, 6, 0, 0, 500000, tzinfo=UTC)
    assert f.deserialize("2026-01-01T10:00:00Z") == dt.datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    assert f.deserialize("204-05-01T12:00:00.000000Z") == dt.datetime(204, 5, 1, 12, 0, tzinfo=UTC)  # older dynorm


@pytest.mark.parametrize("text", ["0001-01-01T00:30:00+01:00", "9999-12-31T23:30:00-01:00"])
def test_an_offset_text_whose_instant_leaves_years_1_to_9999_is_refused_by_name(text: str) -> None:
    """No datetime holds that instant in UTC; the item is reported unreadable rather than shifted."""
    with pytest.raises(ValueError, match="outside years 1..9999"):
        fields.DateTime().deserialize(text)


def test_a_rekey_renders_keys_from_the_instant_stored() -> None:
    """``dynorm migrate`` reads stored DateTimes for the new keys with the same parser as the model."""
    state: Any = SimpleNamespace(fields={"due": ("due", "DateTime")})
    values = _plain_for_keys(state, {"due": "2026-01-01T10:00:00+02:00"})
    assert values["due"] == parse_datetime("2026-01-01T08:00:00.000000Z") == dt.datetime(2026, 1, 1, 8, tzinfo=UTC)
