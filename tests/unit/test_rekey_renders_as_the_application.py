"""A rekey renders an item's keys from its stored values exactly as the application renders them
from the same item (differential, hypothesis): otherwise the rewrite leaves items that disagree with
their own keys, and ``migrate --verify`` blames the correct ones. Found for a ``TTL`` field (epoch
seconds) and a float ``Number`` with a format spec (Decimal rounding) by the ``--verify`` adversary."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynorm import Entity, Index, Table, _codec, fields
from dynorm.migrations.rekey import _plain_for_keys
from dynorm.migrations.state import state_from_models
from dynorm.write_put import prepare_put


class RenderShop(Table):
    class Meta:
        table_name = "render_shop"
        gsi_count = 3


class Sample(Entity):
    sample_id = fields.String()
    n = fields.Number(null=True)
    i = fields.Integer(null=True)
    d = fields.Decimal(null=True)
    t = fields.TTL(null=True)
    when = fields.DateTime(null=True)

    class Meta:
        table = RenderShop
        entity_type = "RENDER_SAMPLE"
        pk = "S#{sample_id}"
        sk = "METADATA"
        indexes = {
            "plain": Index("GSI1", pk="P#{n}#{i}", sk="{d}#{t}#{when}"),
            "specs": Index("GSI2", pk="F#{n:.1f}", sk="{i:05d}#{when:%Y-%m-%d}"),
            "ttl": Index("GSI3", pk="T#{t}", sk="{sample_id}"),
        }


_aware = st.datetimes(min_value=datetime.datetime(1971, 1, 1), max_value=datetime.datetime(2200, 1, 1),
                      timezones=st.sampled_from([datetime.timezone.utc,
                                                 datetime.timezone(datetime.timedelta(hours=5, minutes=30)),
                                                 datetime.timezone(datetime.timedelta(hours=-8))]))
_values = st.fixed_dictionaries({}, optional={
    "n": st.one_of(st.integers(-10**12, 10**12),
                   st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False)
                   .filter(lambda f: f == 0 or abs(f) >= 1e-100),
                   st.decimals(min_value=-10**6, max_value=10**6, places=3, allow_nan=False, allow_infinity=False),
                   # ties of {n:.1f} (k.k5): a Decimal rounds half to even, the float it reads back as does not
                   st.integers(-10**7, 10**7).map(lambda k: decimal.Decimal(f"{k}5").scaleb(-2))),
    "i": st.integers(0, 99_999),
    "d": st.decimals(min_value=-10**6, max_value=10**6, places=4, allow_nan=False, allow_infinity=False),
    "t": _aware.map(lambda v: v.replace(microsecond=0)),
    "when": _aware,
})


def _rekey_render(raw: dict[str, Any]) -> dict[str, str | None]:
    state = next(iter(state_from_models([RenderShop]).entities.values()))

    values = _plain_for_keys(state, _codec.item_from_av({a: raw[a] for a, _ in state.fields.values() if a in raw}))
    out: dict[str, str | None] = {}
    for attrs in state.templates().values():  # as Rekeyer.new_keys: a path missing a value is not written
        rendered = {a: t.try_fill(values, state.key_version, entity=state.entity_type) for a, t in attrs.items()}
        sparse = any(v is None for v in rendered.values())
        out.update({a: None if sparse else v for a, v in rendered.items()})
    return out


@settings(max_examples=150, deadline=None)
@given(_values)
def test_the_rekey_renders_every_key_as_the_application_renders_it_from_the_stored_item(values: dict[str, Any]) -> None:
    written = Sample(sample_id="s1", **values)
    raw = prepare_put(written, create=True).params["Item"]  # the item create() sends (no request)
    read = Sample._from_item(raw)  # what the application holds after reading the item
    app = read.key_attributes()
    assert _rekey_render(raw) == app, (values, raw)
    # and the keys written are those rendered from the stored fields (a Decimal under {n:.1f} too)
    assert {a: raw.get(a, {}).get("S") for a in app} == app, (values, raw)


def test_an_item_written_with_a_decimal_number_and_a_float_spec_agrees_with_its_keys() -> None:
    written = Sample(sample_id="s1", n=decimal.Decimal("1.850"), i=0,
                     when=datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc))
    raw = prepare_put(written, create=True).params["Item"]
    app = Sample._from_item(raw).key_attributes()
    assert {a: raw.get(a, {}).get("S") for a in app} == app
    assert raw["GSI2PK"] == {"S": "F#1.9"}  # the float 1.85 it reads back as, not the Decimal's 1.8
    assert written.n == decimal.Decimal("1.850") and type(written.n) is decimal.Decimal  # the value given is kept


def test_placeholders_without_a_spec_render_as_before() -> None:
    from dynorm.keys import number_text

    when = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
    written = Sample(sample_id="s1", n=decimal.Decimal("1.850"), i=7, d=decimal.Decimal("2.05"),
                     t=datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc), when=when)
    keys = written.key_attributes()
    assert keys["GSI1PK"] == f"P#{number_text(decimal.Decimal('1.85'))}#{number_text(7)}"
    assert keys["GSI1SK"].startswith(number_text(decimal.Decimal("2.05")) + "#")
    assert Sample._meta.indexes["plain"].pk.readers is None  # no spec: the template is left as it was
    assert Sample._meta.indexes["ttl"].pk.readers is None
    assert Sample._meta.indexes["plain"].sk.readers is None  # {d} without a spec: canonical text, no reader


def test_a_value_that_is_no_number_is_still_refused_naming_field_and_value() -> None:
    from dynorm import InvalidKeyValue

    tmpl = Sample._meta.indexes["specs"].pk
    with pytest.raises(InvalidKeyValue, match="n=True"):
        tmpl.fill({"n": True}, "v1", entity="Sample")
    with pytest.raises(InvalidKeyValue, match="n='x'"):
        tmpl.fill({"n": "x"}, "v1", entity="Sample")


class TransformShop(Table):
    class Meta:
        table_name = "render_transform_shop"
        gsi_count = 1


class Repriced(Entity):
    price_id = fields.String()
    d = fields.Decimal()
    n = fields.Number()

    class Meta:
        table = TransformShop
        entity_type = "REPRICED"
        key_version = "v1"
        pk = "{version}#P#{price_id}"
        sk = "D#{d:g}"
        indexes = {"by_n": Index("GSI1", pk="N#{n:.0f}", sk="{d:.1f}")}


@pytest.mark.parametrize("changes", [
    {"d": decimal.Decimal("1.5") * decimal.Decimal("1.10")},  # 1.650: SK D#1.650, stored 1.65 renders D#1.65
    {"d": decimal.Decimal("-0.0")},  # SK D#-0.0, GSI1SK -0.0; stored N "0" renders D#0, 0.0
    {"d": decimal.Decimal("1E+2")},  # SK D#1e+2; stored N "100" renders D#100
    {"d": 0.1 + 0.2},  # a float into the Decimal field: SK D#0.3; stored 0.30000000000000004 renders that
    {"n": -0.0},  # a float into the Number field: GSI1PK N#-0; stored N "0" reads back 0: N#0
], ids=["decimal-trailing-zero", "decimal-negative-zero", "decimal-exponent", "float-into-decimal",
        "float-negative-zero-into-number"])
def test_a_transform_s_numbers_are_keyed_as_the_item_stores_them(changes: dict[str, Any]) -> None:
    from dynorm.migrations.operations import RekeyEntity
    from dynorm.migrations.rekey import Counts, Rekeyer

    project = state_from_models([TransformShop])
    state = next(s for s in project.entities.values() if s.entity_type == "REPRICED")
    op = RekeyEntity(state.table, "REPRICED", "v1", "v1", old=state.part(), new=state.part(),
                     transform=lambda item: {**item, **changes})
    rekeyer = Rekeyer(op, project.tables[state.table], "render_transform_shop", "copy", Counts())
    raw = prepare_put(Repriced(price_id="p1", d=decimal.Decimal("1.5"), n=7), create=True).params["Item"]
    new = rekeyer.new_item(raw)  # the item the rekey writes (no request)
    assert new is not None
    # DynamoDB stores numbers as sent (dynorm sends its canonical text: test_decimal_spec_keys measures it)
    app = Repriced._from_item(new).key_attributes()
    assert {a: new[a]["S"] for a in app} == app
