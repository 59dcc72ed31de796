"""Issue 11: key text orders like the values (UTF-8 bytes, as DynamoDB compares), equal values
give equal keys, and range bounds are exact under the ordered key encoding."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynorm import Entity, InvalidKeyValue, ModelError, Table, fields
from dynorm.keys import KeyTemplate, Prefix, encode_value, key_range, number_text, spec_kind

ADVERSARIAL = "#$%!\" \x00\x01:;~-/0\U0010ffff\u00e9\u4e2d\U0001f600"
text = st.text(alphabet=st.sampled_from(ADVERSARIAL) | st.characters(blacklist_categories=("Cs",)),
               min_size=1, max_size=12)
numbers = st.one_of(
    st.integers(min_value=-10**30, max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.decimals(allow_nan=False, allow_infinity=False, min_value=-10**20, max_value=10**20, places=6),
)
DELIMS = ["#", "::", "|", "#:"]


def _b(s: str) -> bytes:
    return s.encode("utf-8")


def _cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


@settings(max_examples=400, deadline=None)
@given(a=text, b=text, delim=st.sampled_from(DELIMS))
def test_string_keys_order_like_values(a: str, b: str, delim: str) -> None:
    t = KeyTemplate(f"S{delim}{{x}}", delim)
    ka, kb = t.fill({"x": a}), t.fill({"x": b})
    assert _cmp(_b(ka), _b(kb)) == _cmp(a, b)
    assert delim not in ka[len(delim) + 1:]


@settings(max_examples=400, deadline=None)
@given(a1=text, a2=text, b1=text, b2=text, delim=st.sampled_from(DELIMS))
def test_multi_field_keys_order_like_tuples_and_never_collide(a1: str, a2: str, b1: str, b2: str,
                                                              delim: str) -> None:
    t = KeyTemplate(f"{{a}}{delim}{{b}}", delim)
    ka, kb = t.fill({"a": a1, "b": a2}), t.fill({"a": b1, "b": b2})
    assert _cmp(_b(ka), _b(kb)) == _cmp((a1, a2), (b1, b2))


def test_multi_character_delimiter_cannot_be_forged() -> None:
    """acme: / bob and acme / :bob overwrote each other with delimiter '::'."""
    t = KeyTemplate("O::{org}::{user}", "::")
    assert t.fill({"org": "acme:", "user": "bob"}) != t.fill({"org": "acme", "user": ":bob"})


@settings(max_examples=500, deadline=None)
@given(a=numbers, b=numbers)
def test_numbers_are_canonical_and_ordered(a: Any, b: Any) -> None:
    da = decimal.Decimal(repr(a)) if isinstance(a, float) else decimal.Decimal(a)
    db = decimal.Decimal(repr(b)) if isinstance(b, float) else decimal.Decimal(b)
    ka, kb = encode_value(a), encode_value(b)
    assert _cmp(_b(ka), _b(kb)) == _cmp(da, db)


def test_equal_numbers_give_one_key() -> None:
    keys = {encode_value(v) for v in (2, 2.0, decimal.Decimal("2.00"), decimal.Decimal("2"))}
    assert len(keys) == 1
    assert encode_value(1.5) == encode_value(decimal.Decimal("1.50")) == encode_value(decimal.Decimal("1.500"))
    assert encode_value(1e20) == encode_value(10**20) == encode_value(decimal.Decimal("1E+20"))
    assert "e+" not in encode_value(1e20)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), decimal.Decimal("NaN"), 10**600])
def test_numbers_that_cannot_be_keyed(bad: Any) -> None:
    with pytest.raises(InvalidKeyValue) as err:
        KeyTemplate("N#{n}").fill({"n": bad}, entity="Reading")
    assert "Reading.n" in str(err.value)


@pytest.mark.parametrize("bad", [-5, -1, 10000, 12345])
def test_padded_integer_spec_refuses_what_it_cannot_order(bad: int) -> None:
    with pytest.raises(InvalidKeyValue) as err:
        KeyTemplate("S#{seq:04d}").fill({"seq": bad}, entity="Reading")
    assert "Reading.seq" in str(err.value) and str(bad) in str(err.value)


@settings(max_examples=300, deadline=None)
@given(a=st.integers(0, 9999), b=st.integers(0, 9999))
def test_padded_integers_order(a: int, b: int) -> None:
    t = KeyTemplate("S#{seq:04d}")
    assert _cmp(t.fill({"seq": a}), t.fill({"seq": b})) == _cmp(a, b)


aware = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30),
                     timezones=st.sampled_from([dt.timezone.utc, dt.timezone(dt.timedelta(hours=-5)),
                                                dt.timezone(dt.timedelta(hours=13, minutes=45))]))


@settings(max_examples=300, deadline=None)
@given(a=aware, b=aware)
def test_datetimes_order_by_instant_and_render_utc(a: dt.datetime, b: dt.datetime) -> None:
    t = KeyTemplate("T#{at}")
    assert _cmp(t.fill({"at": a}), t.fill({"at": b})) == _cmp(a, b)
    day = KeyTemplate("D#{at:%Y-%m-%d}")
    u = a.astimezone(dt.timezone.utc)
    assert day.fill({"at": a}) == f"D#{u.year:04d}-{u.month:02d}-{u.day:02d}"


def test_datetime_with_spec_renders_utc_date() -> None:
    """23:00-05:00 on March 1 is March 2 in UTC."""
    at = dt.datetime(2024, 3, 1, 23, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
    assert KeyTemplate("D#{at:%Y-%m-%d}").fill({"at": at}) == "D#2024-03-02"
    assert KeyTemplate("D#{at:%Y-%m-%d}").fill({"at": at.astimezone(dt.timezone.utc)}) == "D#2024-03-02"
    assert KeyTemplate("D#{at}").fill({"at": dt.datetime(999, 1, 1)}) == "D#0999-01-01T00:00:00.000000Z"


def test_spec_kinds() -> None:
    assert spec_kind("") == spec_kind("06d") == "exact"
    assert spec_kind("%Y-%m-%d") == spec_kind("%Y%m") == spec_kind(".3") == "lossy"
    assert spec_kind("%d/%m/%Y") == spec_kind(">5") == spec_kind(".2f") == "unordered"


LOOKUPS = {"lt": lambda x, v: x < v, "lte": lambda x, v: x <= v, "gt": lambda x, v: x > v,
           "gte": lambda x, v: x >= v, "between": lambda x, v: v[0] <= x <= v[1]}


@settings(max_examples=500, deadline=None)
@given(xs=st.lists(text, min_size=1, max_size=8), v=text, v2=text, lookup=st.sampled_from(sorted(LOOKUPS)),
       pre=st.sampled_from(["", "A#", "A#\U0010ffff#", "Z"]))
def test_key_range_bounds_are_exact(xs: list[str], v: str, v2: str, lookup: str, pre: str) -> None:
    t = KeyTemplate(pre.replace("{", "") + "{x}")
    prefix = Prefix(pre, (), False, "x")
    value: Any = (v, v2) if lookup == "between" else v
    rng = key_range(t, prefix, "x", lookup, value)
    for x in [*xs, "\U0010ffff", "\U0010ffff\U0010ffff"]:
        key = t.fill({"x": x})
        inside = rng is not None and not rng.empty and (rng.lo is None or key >= rng.lo) and (
            rng.hi is None or key <= rng.hi)
        if rng is None:
            assert lookup == "between" and not pre and v > v2  # an empty range without a prefix
            continue
        if LOOKUPS[lookup](x, value):
            assert inside, (x, rng)
        elif inside:  # a superset only by the bound itself (gt/lt keep their filter)
            assert x in (v, v2)


def test_gte_bound_holds_a_value_starting_with_the_top_character() -> None:
    t = KeyTemplate("S#{x}")
    rng = key_range(t, t.prefix({}), "x", "gte", "a")
    assert rng is not None and rng.hi is not None
    assert rng.lo <= t.fill({"x": "\U0010ffffz"}) <= rng.hi


def test_reversed_between_is_empty_not_a_validation_exception() -> None:
    t = KeyTemplate("S#{x}")
    rng = key_range(t, t.prefix({}), "x", "between", ("a$", "a#"))
    assert rng is not None and rng.empty and rng.lo == rng.hi == "S#"


def test_percent_encoding_never_gives_key_ranges() -> None:
    t = KeyTemplate("S#{x}", encoding="percent")
    assert key_range(t, t.prefix({}), "x", "gte", "a") is None


def test_number_text_examples() -> None:
    assert number_text(0) == "0" and number_text(42) == "P50142" and number_text(-5) == "-4994~"


def test_ordered_encoding_refuses_delimiters_it_cannot_escape() -> None:
    with pytest.raises(ModelError, match="ASCII punctuation"):
        class _Bad(Table):
            class Meta:
                table_name = "bad"
                delimiter = "x"


def _check(**templates: str) -> list[str]:
    class CheckT(Table):
        class Meta:
            table_name = "check-t"
            gsi_count = 1
            delimiter = templates.pop("delimiter", "#")
            key_encoding = templates.pop("encoding", "ordered")

    class Item(Entity):
        a = fields.String()
        b = fields.String()
        x = fields.String()

        class Meta:
            table = CheckT
            pk = templates["pk"]
            sk = templates.get("sk", "METADATA")

    return CheckT.check()


@pytest.mark.parametrize(("templates", "needle"), [
    ({"pk": "{a}-{b}"}, "share one segment"),
    ({"pk": "A#{a}{b}"}, "share one segment"),
    ({"pk": "A#{a}:{b}"}, "share one segment"),
    ({"pk": "A#{a}", "sk": "X#{x:.3}"}, "lossy"),
    ({"pk": "A::{a}::{b}", "delimiter": "::", "encoding": "percent"}, "multi-character delimiter"),
])
def test_check_reports_each_collision_shape(templates: dict[str, str], needle: str) -> None:
    problems = _check(**templates)
    assert any(needle in p for p in problems), problems


def test_check_is_quiet_on_safe_templates() -> None:
    assert _check(pk="A#{a}#B#{b}", sk="X#{x}") == []
    assert _check(pk="A::{a}::{b}", delimiter="::") == []


def test_key_encoding_is_validated() -> None:
    with pytest.raises(ModelError, match="key_encoding"):
        class _Bad(Table):
            class Meta:
                table_name = "bad"
                key_encoding = "base64"


def test_surrogates_are_refused() -> None:
    with pytest.raises(InvalidKeyValue, match="surrogate"):
        encode_value("a\ud800")


def test_datetime_that_leaves_the_calendar_in_utc_is_refused() -> None:
    early = dt.datetime(1, 1, 1, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=5)))
    with pytest.raises(InvalidKeyValue, match="Visit.at"):
        KeyTemplate("D#{at:%Y-%m-%d}").fill({"at": early}, entity="Visit")


def test_cursor_secret_is_required_off_loopback() -> None:
    from dynorm import ConfigurationError
    from dynorm.cursor import signing_secret

    assert signing_secret("s3cret", "https://dynamodb.eu-west-1.amazonaws.com", False) == "s3cret"
    local = signing_secret(None, "http://127.0.0.1:8000", True)
    assert local == signing_secret(None, "http://127.0.0.1:9000", True) and len(local) >= 32
    assert "keyorder" not in local  # not derived from anything an attacker knows
    with pytest.raises(ConfigurationError, match="cursor_secret"):
        signing_secret(None, "https://dynamodb.eu-west-1.amazonaws.com", False)
    with pytest.raises(ConfigurationError, match="AWS"):
        signing_secret(None, None, False)


def test_key_encoding_is_recorded_in_migration_state() -> None:
    from dynorm.migrations.autodetector import detect_changes
    from dynorm.migrations.operations import CreateTable
    from dynorm.migrations.state import ProjectState, TableState

    legacy = TableState(name="old", key_encoding="percent")
    assert legacy.definition()["key_encoding"] == "percent"            # written into CreateTable
    assert "key_encoding" not in TableState(name="new").definition()   # the default: ordered
    assert CreateTable(**legacy.definition()).table.key_encoding == "percent"
    assert legacy.options().key_encoding == "percent"
    assert detect_changes(ProjectState(tables={"old": legacy}),
                          ProjectState(tables={"old": TableState(name="old", key_encoding="percent")})) == []


def test_makemigrations_rewrites_a_key_encoding_change_through_new_key_versions() -> None:
    from dynorm.migrations.autodetector import detect_changes
    from dynorm.migrations.operations import AlterKeyEncoding, MigrationError, RekeyEntity
    from dynorm.migrations.rekey import Rekeyer
    from dynorm.migrations.state import EntityState, ProjectState, TableState

    def project(encoding: str, version: str) -> ProjectState:
        keys = {"primary": {"PK": "{version}#W#{widget_id}", "SK": "M"}}
        return ProjectState(tables={"shop": TableState(name="shop", key_encoding=encoding)},
                            entities={("shop", "W"): EntityState("shop", "W", version, keys,
                                                                 {"widget_id": ["widget_id", "String"]})})

    with pytest.raises(MigrationError, match="new Meta.key_version"):
        detect_changes(project("percent", "v1"), project("ordered", "v1"))   # old and new keys look alike
    ops = detect_changes(project("percent", "v1"), project("ordered", "v2"))
    assert [type(op) for op in ops] == [AlterKeyEncoding, RekeyEntity]
    assert ops[0].deconstruct() == {"table": "shop", "key_encoding": "ordered"}
    state = project("percent", "v1")
    for op in ops:
        op.state_forwards(state)
    table = state.tables["shop"]
    assert table.key_encoding == "ordered"
    rekeyer = Rekeyer(ops[1], table, "shop", "move", None, True)  # type: ignore[arg-type]
    (pk,) = [t for t in rekeyer.new_templates["primary"].values() if t.template.startswith("{version}")]
    assert pk.fill({"widget_id": "a#1"}, "v2") == "v2#W#a$231"             # new keys: ordered
