"""Cursors: opaque, signed, bound to their query; fuzzed input never crashes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynorm import InvalidCursor
from dynorm.cursor import decode_cursor, encode_cursor

CTX = {"t": "tbl", "e": "PRODUCT", "i": "GSI1", "kv": "v1", "q": "abc"}
KEY = {"PK": {"S": "v1#P#1"}, "SK": {"S": "METADATA"}, "GSI1PK": {"S": "v1#B#1"}, "GSI1SK": {"S": "C#1"}}
ATTRS = {"PK", "SK", "GSI1PK", "GSI1SK"}


def test_round_trip() -> None:
    c = encode_cursor(KEY, CTX, "s")
    assert all(ch.isalnum() or ch in "-_." for ch in c)
    assert decode_cursor(c, CTX, "s", ATTRS) == KEY


def test_tampered_other_query_stale() -> None:
    c = encode_cursor(KEY, CTX, "s")
    with pytest.raises(InvalidCursor, match="signature"):
        decode_cursor(c[:-2] + ("AA" if c[-2:] != "AA" else "BB"), CTX, "s", ATTRS)
    with pytest.raises(InvalidCursor, match="another query"):
        decode_cursor(c, {**CTX, "q": "other"}, "s", ATTRS)
    with pytest.raises(InvalidCursor, match="stale"):
        decode_cursor(c, {**CTX, "kv": "v2"}, "s", ATTRS)
    with pytest.raises(InvalidCursor, match="signature"):
        decode_cursor(c, CTX, "other-secret", ATTRS)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.hex() + "." + b.hex())))
def test_fuzzed_cursors_raise_invalid_cursor(junk: str) -> None:
    with pytest.raises(InvalidCursor):
        decode_cursor(junk, CTX, "s", ATTRS)
