"""A ``fields.Decimal`` in a key placeholder keys the item as the value is stored and read back.

DynamoDB stores a number in one canonical text (measured on DynamoDB Local: ``-0.0`` -> ``0``,
``1.50`` -> ``1.5``, ``1E+2`` -> ``100``, ``1E-7`` -> ``0.0000001``), and a ``fields.Decimal`` reads
it back as the Decimal of that text. A format spec renders two equal Decimals of different forms
differently (``format(Decimal("-0.0"), ".1f")`` is ``-0.0``, the ``Decimal("0")`` read back gives
``0.0``; ``{d:g}`` of ``1000000.0000`` is ``1000000.0000``, read back ``1000000``). Differential
(hypothesis, no server): the keys rendered at write, from the stored item read back, and by a rekey
from the raw item are one text; the text sent is the text DynamoDB stores.
"""

from __future__ import annotations

import decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dynorm import Entity, Index, Table, _codec, fields
from dynorm.migrations.rekey import _plain_for_keys
from dynorm.migrations.state import state_from_models
from dynorm.write_put import prepare_put

D = decimal.Decimal
SPECS = ("", "g", "f", ".2f", "e", "010.3f")


class DecimalShop(Table):
    class Meta:
        table_name = "decimal_shop"
        gsi_count = 2


class Priced(Entity):
    priced_id = fields.String()
    d = fields.Decimal()
    n = fields.Number(null=True)

    class Meta:
        table = DecimalShop
        entity_type = "PRICED"
        pk = "P#{priced_id}"
        sk = "D#{d:g}"
        indexes = {
            "plain": Index("GSI1", pk="A#{d}#{d:f}", sk="{d:.2f}#{priced_id}"),
            "specs": Index("GSI2", pk="E#{d:e}", sk="{d:010.3f}#{n:g}"),
        }


class LegacyShop(Table):
    class Meta:
        table_name = "decimal_legacy_shop"
        gsi_count = 1
        key_encoding = "percent"  # numbers without a spec render as str() / format(d, "f")


class LegacyPriced(Entity):
    priced_id = fields.String()
    d = fields.Decimal()
    n = fields.Number(null=True)

    class Meta:
        table = LegacyShop
        entity_type = "LEGACY_PRICED"
        pk = "P#{priced_id}"
        sk = "D#{d}#{d:g}"
        indexes = {"plain": Index("GSI1", pk="A#{n}", sk="{d:e}")}


def _stored_text(value: D) -> str:
    """The N text DynamoDB stores and returns for ``value`` (an oracle of the measured behaviour:
    zero is ``0``, else the plain digits without trailing zeros, never an exponent)."""
    if value.is_zero():
        return "0"
    sign, digits, exp = value.as_tuple()
    assert isinstance(exp, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    exp += len(digits) - len(text)  # the zeros stripped
    if exp >= 0:
        body = text + "0" * exp
    elif -exp >= len(text):
        body = "0." + "0" * (-exp - len(text)) + text
    else:
        body = text[:exp] + "." + text[exp:]
    return ("-" if sign else "") + body


def _storable(v: D) -> bool:
    try:
        _codec.number_text(v)
    except _codec.BadValue:
        return False
    return True


_zeros = st.sampled_from([D("0"), D("-0"), D("-0.0"), D("0.000"), D("0E+5"), D("-0E-3")])
_forms = st.builds(lambda sign, digits, zeros, exp: D(f"{sign}{digits}{'0' * zeros}E{exp}"),
                   st.sampled_from(["", "-"]), st.integers(1, 10**38 - 1), st.integers(0, 6),
                   st.integers(-45, 20))
_decimals = st.one_of(_zeros, _forms, st.decimals(min_value=-10**7, max_value=10**7, places=4,
                                                 allow_nan=False, allow_infinity=False),
                      st.sampled_from([D("1000000.0000"), D("1E+2"), D("100.00"), D("1.50"), D("1E-7"),
                                       D("9" * 38), D("0." + "9" * 38)])).filter(_storable)
_numbers = st.one_of(st.none(), st.integers(-10**6, 10**6), _decimals)


def _rekey_render(raw: dict[str, Any], model: type[Entity] = Priced) -> dict[str, str | None]:
    project = state_from_models([model._meta.table])
    state = next(s for s in project.entities.values() if s.entity_type == model._meta.entity_type)
    table = project.tables[state.table]
    values = _plain_for_keys(state, _codec.item_from_av({a: raw[a] for a, _ in state.fields.values() if a in raw}))
    out: dict[str, str | None] = {}
    for attrs in state.templates(table.delimiter, table.key_encoding).values():
        rendered = {a: t.try_fill(values, state.key_version, entity=state.entity_type) for a, t in attrs.items()}
        sparse = any(v is None for v in rendered.values())
        out.update({a: None if sparse else v for a, v in rendered.items()})
    return out


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([Priced, LegacyPriced]), _decimals, _numbers)
def test_keys_at_write_from_the_stored_item_and_by_a_rekey_are_one_text(model: Any, d: D, n: Any) -> None:
    written = model(priced_id="p1", d=d, n=n)
    raw = prepare_put(written, create=True).params["Item"]  # the item create() sends (no request)
    assert raw["d"] == {"N": _stored_text(d)}  # sent as DynamoDB stores it, so `raw` is the stored item
    at_write = written.key_attributes()
    read = model._from_item(raw)  # what the application holds after reading the item
    assert read.d == d and read.d.as_tuple() == D(_stored_text(d)).as_tuple()
    from_stored = read.key_attributes()
    assert at_write == from_stored, (d, n)
    assert {a: raw.get(a, {}).get("S") for a in from_stored} == from_stored, (d, n)
    assert _rekey_render(raw, model) == from_stored, (d, n)


def test_the_examples_found_by_hand() -> None:
    for given_, spec, read_back in ((D("-0.0"), ".1f", "0.0"), (D("-0"), "g", "0"), (D("0.00"), "e", "0e+0"),
                                    (D("1E+2"), "g", "100"), (D("100.00"), "f", "100"),
                                    (D("1000000.0000"), "g", "1000000"), (D("1.50"), "g", "1.5")):
        reader = Priced._meta.fields["d"].key_reader()
        assert reader is not None
        assert format(reader(given_), spec) == read_back, (given_, spec)
    # the rekey renders what the application holds: a Decimal, not an int (format(10**6, "g") is 1e+06)
    item = {"priced_id": {"S": "p"}, "d": {"N": "1000000"}}
    assert _rekey_render(item)["SK"] == "D#1000000"
    assert Priced._from_item(item).key_attributes()["SK"] == "D#1000000"
    long = {"priced_id": {"S": "p"}, "d": {"N": "9" * 38}}
    assert _rekey_render(long)["GSI1PK"].endswith("#" + "9" * 38)  # no float on the way


def test_a_class_without_a_spec_d_decimal_or_number_keeps_its_templates() -> None:
    class Plain(Entity):
        plain_id = fields.String()
        d = fields.Decimal()

        class Meta:
            table = DecimalShop
            entity_type = "PLAIN_DEC"
            pk = "X#{plain_id}"
            sk = "D#{d}"

    assert Plain._meta.primary.pk.readers is None and Plain._meta.primary.sk.readers is None
    assert Priced._meta.primary.sk.readers is not None
    assert LegacyPriced._meta.primary.sk.readers is not None  # {d} under the percent encoding too
