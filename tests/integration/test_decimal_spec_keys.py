"""A ``fields.Decimal`` rendered through a format spec keys an item as the value is stored and read back.

DynamoDB stores ``Decimal("-0.0")`` as ``N "0"``, which reads back as ``Decimal("0")``: ``{d:.1f}``
renders ``0.0`` for it (the value given would render ``-0.0``). The item is written under the key of
the value read back, its keys are those rendered from its stored fields, and a query by either
spelling reads that partition -- on DynamoDB Local.
"""

from __future__ import annotations

import decimal

import pytest

import dynorm
from dynorm import Entity, Index, Table, fields

D = decimal.Decimal


class Prices(Table):
    class Meta:
        table_name = "decimal-spec-keys"
        gsi_count = 1


class Price(Entity):
    price_id = fields.String()
    d = fields.Decimal()

    class Meta:
        table = Prices
        entity_type = "PRICE"
        pk = "P#{price_id}"
        sk = "D#{d:g}"
        indexes = {"by_amount": Index("GSI1", pk="A#{d:.1f}", sk="P#{price_id}")}


def _stored() -> list[dict]:
    return dynorm.backend.call("Scan", {"TableName": Prices.table_name(), "ConsistentRead": True})["Items"]


def test_a_negative_zero_is_keyed_and_found_as_the_zero_it_reads_back_as(dynorm_tables: object) -> None:
    written = Price.objects.create(price_id="p1", d=D("-0.0"))
    assert str(written.d) == "-0.0"  # the instance keeps the value given

    [raw] = _stored()
    assert raw["d"] == {"N": "0"}
    assert raw["GSI1PK"] == {"S": "A#0.0"} and raw["SK"] == {"S": "D#0"}  # not -0.0 / -0.0
    rendered = Price._from_item(raw).key_attributes()
    assert {a: raw[a]["S"] for a in rendered} == rendered  # the keys are those of the stored fields

    for given in (D("-0.0"), D("0")):
        qs = Price.objects.filter(d=given).using("by_amount")
        assert qs.explain().params["ExpressionAttributeValues"][":v0"] == {"S": "A#0.0"}
        with dynorm.capture() as c:
            found = list(qs)
        assert [(p.price_id, str(p.d)) for p in found] == [("p1", "0")]
        assert c.operations == ["Query"]


def test_trailing_zeros_and_exponents_key_as_dynamodb_stores_them(dynorm_tables: object) -> None:
    # DynamoDB stores one text per number: 1.50 -> 1.5, 1E+6 -> 1000000 (measured here)
    Price.objects.create(price_id="p2", d=D("1.50"))
    Price.objects.create(price_id="p3", d=D("1E+6"))
    by_id = {r["price_id"]["S"]: r for r in _stored()}
    assert by_id["p2"]["d"] == {"N": "1.5"} and by_id["p2"]["SK"] == {"S": "D#1.5"}  # not D#1.50
    assert by_id["p3"]["d"] == {"N": "1000000"} and by_id["p3"]["SK"] == {"S": "D#1000000"}  # not D#1e+6
    for raw in by_id.values():
        rendered = Price._from_item(raw).key_attributes()
        assert {a: raw[a]["S"] for a in rendered} == rendered
    with dynorm.capture() as c:
        got = Price.objects.get(price_id="p3", d=D("1000000.0000"))
    assert got.d == D("1E+6") and str(got.d) == "1000000"
    assert c.operations == ["GetItem"]


def test_saving_an_item_an_older_dynorm_keyed_names_the_stale_key_not_a_change(dynorm_tables: object) -> None:
    old = {"PK": {"S": "P#old"}, "SK": {"S": "D#1.50"}, "GSI1PK": {"S": "A#1.5"}, "GSI1SK": {"S": "P#old"},
           "entityType": {"S": "PRICE"}, "price_id": {"S": "old"}, "d": {"N": "1.50"}}  # as main~4 wrote D("1.50")
    dynorm.backend.call("PutItem", {"TableName": Prices.table_name(), "Item": old})
    found = Price.objects.filter(price_id="old").first()  # one Query of the partition finds it
    assert found is not None and found.d == D("1.5")
    with pytest.raises(dynorm.KeyChangeError) as exc:
        found.save()  # nothing was changed
    [raw] = _stored()
    assert raw["SK"] == {"S": "D#1.50"} and "note" not in raw  # refused before any write
    message = str(exc.value)
    assert "changed (key" not in message  # the old message said price_id and d changed: neither did
    assert "'D#1.50'" in message and "'D#1.5'" in message  # the key stored and the key rendered now
    assert "key_version" in message and "nothing was written" in message  # the remedy docs/modelling.md gives
