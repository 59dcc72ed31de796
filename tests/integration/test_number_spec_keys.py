"""A ``fields.Number`` rendered through a format spec (``{n:.1f}``) keys an item as the value reads back.

``Decimal("1.850")`` is stored as ``N "1.85"`` and reads back as the float 1.85, which ``.1f`` renders
``1.9`` (the Decimal, rounding half to even, gives ``1.8``). The item is written under ``F#1.9``, a query
by either spelling of the value reads that partition, and the stored keys are those rendered from the
stored fields (what a rekey, ``migrate --verify`` or a later save renders) -- on DynamoDB Local.
"""

from __future__ import annotations

import decimal

import pytest

import dynorm
from dynorm import Entity, Index, Table, fields


class Readings(Table):
    class Meta:
        table_name = "number-spec-keys"
        gsi_count = 1


class Reading(Entity):
    reading_id = fields.String()
    n = fields.Number()

    class Meta:
        table = Readings
        entity_type = "READING"
        pk = "R#{reading_id}"
        sk = "METADATA"
        indexes = {"by_rounded": Index("GSI1", pk="F#{n:.1f}", sk="R#{reading_id}")}


def _stored() -> list[dict]:
    return dynorm.backend.call("Scan", {"TableName": Readings.table_name(), "ConsistentRead": True})["Items"]


def test_a_decimal_under_a_float_spec_is_stored_and_found_under_the_key_of_the_value_it_reads_back_as(
        dynorm_tables: object) -> None:
    written = Reading.objects.create(reading_id="r1", n=decimal.Decimal("1.850"))
    assert written.n == decimal.Decimal("1.850")  # the instance keeps the value given

    [raw] = _stored()
    assert raw["n"] == {"N": "1.85"}
    assert raw["GSI1PK"] == {"S": "F#1.9"}  # the float 1.85's .1f, not the Decimal's 1.8
    rendered = Reading._from_item(raw).key_attributes()
    assert {a: raw[a]["S"] for a in rendered} == rendered  # the keys are those of the stored fields

    for given in (decimal.Decimal("1.850"), 1.85):
        qs = Reading.objects.filter(n=given).using("by_rounded")
        params = qs.explain().params
        assert params["KeyConditionExpression"] == "#n0 = :v0"
        assert params["ExpressionAttributeValues"][":v0"] == {"S": "F#1.9"}
        with dynorm.capture() as c:
            found = list(qs)
        assert [(r.reading_id, r.n) for r in found] == [("r1", 1.85)]
        assert c.operations == ["Query"]


def test_a_save_of_the_read_item_keeps_its_keys(dynorm_tables: object) -> None:
    # the float 0.35 is 0.34999..., so .1f gives 0.3; the Decimal 0.350 rounds half to even: 0.4
    Reading.objects.create(reading_id="r2", n=decimal.Decimal("0.350"))
    before = {a: v for a, v in _stored()[0].items() if a.endswith(("PK", "SK"))}
    assert before["GSI1PK"] == {"S": "F#0.3"}
    read = Reading.objects.get(reading_id="r2")
    read.save()
    after = {a: v for a, v in _stored()[0].items() if a.endswith(("PK", "SK"))}
    assert after == before


def test_an_item_an_older_dynorm_keyed_with_the_decimal_rendering_gets_its_index_keys_back_by_a_save(
        dynorm_tables: object) -> None:
    # as dynorm wrote it before: the GSI key from format(Decimal("0.350"), ".1f")
    dynorm.backend.call("PutItem", {"TableName": Readings.table_name(), "Item": {
        "PK": {"S": "R#old"}, "SK": {"S": "METADATA"}, "entityType": {"S": "READING"},
        "reading_id": {"S": "old"}, "n": {"N": "0.35"}, "GSI1PK": {"S": "F#0.4"}, "GSI1SK": {"S": "R#old"}}})
    assert list(Reading.objects.filter(n=decimal.Decimal("0.350")).using("by_rounded")) == []  # missed
    Reading.objects.get(reading_id="old").save()
    [raw] = _stored()
    assert raw["GSI1PK"] == {"S": "F#0.3"}
    assert [r.reading_id for r in Reading.objects.filter(n=decimal.Decimal("0.350")).using("by_rounded")] == ["old"]


class Sample(Entity):
    """A Number in the primary key, without a spec and through a lossy one."""
    n = fields.Number()

    class Meta:
        table = Readings
        entity_type = "SAMPLE"
        pk = "S#{n}"
        sk = "N#{n:.2f}"


def test_get_by_a_number_key_finds_the_item_whatever_type_the_value_is_given_in(dynorm_tables: object) -> None:
    # stored N "0.1" and N "1E+23" read back as the float 0.1 and the int 10**23; get() compares the
    # value asked with the value read back (so a percent-encoded foreign key text cannot pass for it)
    Sample.objects.create(n=decimal.Decimal("0.10"))
    Sample.objects.create(n=1e23)
    for given, read_back in ((decimal.Decimal("0.1"), 0.1), (0.1, 0.1), (decimal.Decimal("0.100"), 0.1),
                             (1e23, 10**23), (10**23, 10**23), (decimal.Decimal("1E+23"), 10**23)):
        with dynorm.capture() as c:
            got = Sample.objects.get(n=given)
        assert got.n == read_back and type(got.n) is type(read_back)
        assert c.operations == ["GetItem"]
    assert sorted(o.n for o in Sample.objects.in_bulk([decimal.Decimal("0.1"), 1e23]).values()) == [0.1, 10**23]
    with pytest.raises(Sample.DoesNotExist):
        Sample.objects.get(n=decimal.Decimal("0.1000000000000000000001"))
