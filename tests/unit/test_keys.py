"""Key templates: filling, partial prefixes, delimiter-safe encoding."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynorm import InvalidKeyValue, ModelError
from dynorm.keys import KeyTemplate, encode_value


def test_fill_with_version_and_fields() -> None:
    t = KeyTemplate("{version}#P#{product_id}")
    assert t.fields == ("product_id",)
    assert t.fill({"product_id": "42"}, "v1") == "v1#P#42"


def test_partial_prefix_ends_at_next_literal() -> None:
    t = KeyTemplate("C#{category_id}#P#{product_id}")
    pre = t.prefix({"category_id": "1"})
    assert pre.value == "C#1#P#"
    assert pre.used == ("category_id",) and not pre.complete and pre.next_field == "product_id"
    # category 1 must never match category 10
    assert not t.fill({"category_id": "10", "product_id": "x"}).startswith(pre.value)


def test_prefix_stops_at_first_missing_field_even_if_later_ones_given() -> None:
    t = KeyTemplate("A#{a}#B#{b}")
    assert t.prefix({"b": "2"}).value == "A#"


def test_delimiter_and_escape_are_encoded_case_kept() -> None:
    t = KeyTemplate("{version}#P#{pid}")
    assert t.fill({"pid": "Ab#C$d%e f"}, "v1") == "v1#P#Ab$23C$24d%e$20f"


def test_legacy_percent_encoding_is_kept_byte_for_byte() -> None:
    t = KeyTemplate("{version}#P#{pid}", encoding="percent")
    assert t.fill({"pid": "Ab#C%d"}, "v1") == "v1#P#Ab%23C%25d"
    assert KeyTemplate("N#{n}", encoding="percent").fill({"n": 42}) == "N#42"


def test_format_specs() -> None:
    assert KeyTemplate("Y#{year:04d}").fill({"year": 7}) == "Y#0007"
    when = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone.utc)
    assert KeyTemplate("D#{at:%Y-%m-%d}").fill({"at": when}) == "D#2024-05-01"
    assert KeyTemplate("T#{at}").fill({"at": when}) == "T#2024-05-01T12:00:00.000000Z"


@pytest.mark.parametrize("value", [None, "", True, [1], {"a": 1}, b"x"])
def test_invalid_key_values_name_field_and_value(value: object) -> None:
    t = KeyTemplate("P#{pid}")
    with pytest.raises(InvalidKeyValue) as err:
        t.fill({"pid": value}, entity="Product")
    assert "Product.pid" in str(err.value)
    assert err.value.field == "pid"


def test_spec_that_does_not_apply() -> None:
    with pytest.raises(InvalidKeyValue, match="format spec"):
        KeyTemplate("Y#{year:04d}").fill({"year": "abc"}, entity="Reading")


@pytest.mark.parametrize("bad", ["{0}", "{a.b}", "{a[0]}", "{a!r}", "{unclosed"])
def test_bad_templates_raise_model_error(bad: str) -> None:
    with pytest.raises(ModelError):
        KeyTemplate(bad)


def test_encode_value_types() -> None:
    import decimal

    assert encode_value(5) == "P5005"
    assert encode_value(decimal.Decimal("1.50")) == encode_value(1.5) == "P50015"
    assert encode_value(5, encoding="percent") == "5"
    assert encode_value(decimal.Decimal("1.50"), encoding="percent") == "1.50"
    assert encode_value(dt.date(2024, 1, 2)) == "2024-01-02"


key_text = st.text(min_size=1, max_size=60)


@settings(max_examples=300, deadline=None)
@given(a=key_text, b=key_text)
def test_distinct_values_give_distinct_keys_and_stay_in_their_partition(a: str, b: str) -> None:
    t = KeyTemplate("{version}#STORE#{store_id}#EMP#{emp}")
    ka = t.fill({"store_id": a, "emp": "1"}, "v1")
    kb = t.fill({"store_id": b, "emp": "1"}, "v1")
    assert (ka == kb) == (a == b)
    # a crafted value can never produce another store's prefix
    prefix_b = t.prefix({"store_id": b}, "v1").value
    assert ka.startswith(prefix_b) == (a == b)
    assert ka.count("#") == 4


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("#|:$%\x00\x01\"'aZ09~ é日\ud800"), max_size=6) | st.text(max_size=6),
       st.sampled_from(["#", "|", ":", "$"]), st.sampled_from(["ordered", "percent"]))
def test_a_template_renders_each_string_as_encode_value_does(value: str, delimiter: str, encoding: str) -> None:
    # fill/try_fill/prefix render plain strings on a fast path: the text (or the error) is encode_value's
    t = KeyTemplate(f"A{delimiter}{{x}}{delimiter}{{version}}", delimiter=delimiter, encoding=encoding)
    try:
        text = encode_value(value, "", delimiter=delimiter, encoding=encoding, entity="E", field="x")
    except InvalidKeyValue as exc:
        for render in (t.fill, t.try_fill, t.prefix):
            with pytest.raises(InvalidKeyValue) as caught:
                render({"x": value}, "v1", entity="E")
            assert str(caught.value) == str(exc)
        return
    expected = f"A{delimiter}{text}{delimiter}v1"
    assert t.fill({"x": value}, "v1") == t.try_fill({"x": value}, "v1") == expected
    assert t.prefix({"x": value}, "v1").value == expected
