"""The plain codec stores a value exactly or refuses it (issue 9, section 3): differential tests
against brute-force oracles written from DynamoDB's documented (and locally measured) limits."""

from __future__ import annotations

import decimal
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynorm import _codec
from tests.tiers import examples


def _oracle_number(x: Any) -> decimal.Decimal | None:
    """The exact value DynamoDB would store, or None when it refuses it (no Decimal arithmetic used)."""
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return None
        x = decimal.Decimal(repr(x))
    elif isinstance(x, int):
        x = decimal.Decimal(str(x))
    if not x.is_finite():
        return None
    text = format(x, "f").lstrip("-")
    whole, _, frac = text.partition(".")
    digits = (whole + frac).strip("0")
    if not digits:
        return x
    if whole.lstrip("0"):
        exponent = len(whole.lstrip("0")) - 1
    else:
        exponent = -(len(frac) - len(frac.lstrip("0")) + 1)
    if len(digits) > 38 or not -130 <= exponent <= 125:
        return None
    return x


numbers = st.one_of(
    st.integers(min_value=-10 ** 130, max_value=10 ** 130),
    st.floats(),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.builds(lambda digits, exp, neg: decimal.Decimal(f"{'-' if neg else ''}{digits}E{exp}"),
              st.text("0123456789", min_size=1, max_size=45), st.integers(-180, 180), st.booleans()),
)


@settings(max_examples=1500, deadline=None)
@given(numbers)
def test_number_text_is_exact_or_refused_like_the_oracle(x: Any) -> None:
    expected = _oracle_number(x)
    try:
        text = _codec.number_text(x)
    except _codec.BadValue:
        assert expected is None, f"{x!r} is storable but was refused"
        return
    assert expected is not None, f"{x!r} is not storable but gave {text!r}"
    assert decimal.Decimal(text) == expected  # never rounded
    assert "NaN" not in text and "Infinity" not in text


def _depth(value: Any) -> int:
    """Maps/lists inside one another, counted the obvious way."""
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _chain(depth: int, leaf: Any, kinds: list[bool]) -> Any:
    value = leaf
    for i in range(depth):
        value = {"k": value} if kinds[i % len(kinds)] else [value]
    return value


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 80), st.sampled_from(["x", 1, None, {}, []]), st.lists(st.booleans(), min_size=1, max_size=5))
def test_nesting_is_refused_exactly_beyond_31_containers(depth: int, leaf: Any, kinds: list[bool]) -> None:
    value = _chain(depth, leaf, kinds)
    if _depth(value) <= 31:
        assert _codec.from_av(_codec.to_av(value)) == value
    else:
        with pytest.raises(_codec.BadValue, match="nested more than 31 deep"):
            _codec.to_av(value)


def test_two_thousand_levels_raise_bad_value_not_recursion_error() -> None:
    with pytest.raises(_codec.BadValue):
        _codec.to_av(_chain(2000, "x", [True, False]))


keys = st.one_of(st.text(max_size=3), st.integers(-3, 3), st.booleans(), st.none(), st.binary(max_size=2),
                 st.floats(allow_nan=False), st.tuples(st.integers(0, 2)))


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(keys, st.integers(0, 9), max_size=6))
def test_map_keys_are_stored_as_given_or_refused_never_turned_into_text(value: dict[Any, int]) -> None:
    """Only non-empty str keys without lone surrogates are stored; any other key (int, bool, None, bytes, float,
    tuple) is refused rather than stored as its str() (``{b"k": 1}`` read back as ``{"b'k'": 1}``)."""
    ok = all(isinstance(k, str) and k and not any(0xD800 <= ord(c) <= 0xDFFF for c in k) for k in value)
    if ok:
        assert _codec.from_av(_codec.to_av(value)) == value
    else:
        with pytest.raises(_codec.BadValue):
            _codec.to_av(value)


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(codec=None, exclude_categories=()), max_size=8))
def test_strings_are_refused_exactly_when_they_hold_a_surrogate(value: str) -> None:
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        with pytest.raises(_codec.BadValue, match="lone surrogate"):
            _codec.to_av(value)
    else:
        assert _codec.to_av(value) == {"S": value}


@pytest.mark.parametrize("text, partition, fits", [
    ("a" * 2048, True, True), ("a" * 2049, True, False), ("a" * 1024, False, True), ("a" * 1025, False, False),
    ("é" * 512, False, True), ("é" * 513, False, False), ("😀" * 512, True, True), ("😀" * 513, True, False),
])
def test_key_sizes_are_measured_in_utf8_bytes(text: str, partition: bool, fits: bool) -> None:
    assert (_codec.key_size_problem(text, partition) is None) is fits


_texts = st.text(max_size=8)
_avs = st.recursive(
    st.one_of(st.builds(lambda t: {"S": t}, _texts),
              st.builds(lambda n: {"N": str(n)}, st.integers(-10**12, 10**12) | st.decimals(allow_nan=False,
                                                                                           allow_infinity=False,
                                                                                           places=3)),
              st.builds(lambda b: {"B": b}, st.binary(max_size=6)),
              st.builds(lambda b: {"BOOL": b}, st.booleans()), st.just({"NULL": True}),
              st.builds(lambda s: {"SS": sorted(s)}, st.sets(_texts, min_size=1, max_size=3))),
    lambda inner: st.builds(lambda v: {"L": v}, st.lists(inner, max_size=3))
    | st.builds(lambda m: {"M": m}, st.dictionaries(_texts, inner, max_size=3)),
    max_leaves=6)


@settings(max_examples=examples(400), deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), _avs, max_size=8))
def test_item_size_is_names_and_values_in_utf8_as_av_size_counts_them(item: dict[str, Any]) -> None:
    # the item's size is the sum over attributes of the name in UTF-8 and av_size of the value,
    # whatever shortcut item_size takes (text joined, numbers inline)
    expected = sum(len(name.encode("utf-8")) + _codec.av_size(av) for name, av in item.items())
    assert _codec.item_size(item) == expected
