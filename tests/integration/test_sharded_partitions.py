"""The partitions a write-sharded index's keys share with other entity types on the same GSI.

A sharded key is the template's text, the delimiter and the bucket (``V#{day}`` -> ``V#d1#2``):
``Table.check()`` must see it meet an unsharded ``V#{day}#{n}``, and entities whose templates share
a partition must shard it alike (refused when the second class is created). Shown on DynamoDB Local
by the stored keys, read back raw.
"""

from __future__ import annotations

import pytest

import dynorm
from dynorm import Entity, Index, ModelError, Table, backend, fields


class Visits(Table):
    class Meta:
        table_name = "visits"
        gsi_count = 1


class BucketedVisit(Entity):
    """Every visit of a day on GSI1, spread over 4 buckets: ``V#<day>#<bucket>``."""

    visit_id = fields.String()
    day = fields.String()
    at = fields.Integer()

    class Meta:
        table = Visits
        entity_type = "BUCKETED_VISIT"
        pk = "BV#{visit_id}"
        sk = "V"
        indexes = {"by_day": Index("GSI1", pk="V#{day}", sk="{at}", shards=4)}


class NumberedVisit(Entity):
    """An unsharded template whose last placeholder can render a bucket number: ``V#<day>#<n>``."""

    visit_id = fields.String()
    day = fields.String()
    n = fields.Integer()
    at = fields.Integer()

    class Meta:
        table = Visits
        entity_type = "NUMBERED_VISIT"
        pk = "NV#{visit_id}"
        sk = "V"
        indexes = {"by_day_n": Index("GSI1", pk="V#{day}#{n}", sk="{at}")}


def _gsi1pk(entity: type[Entity], **key: str) -> str:
    raw = backend.call("GetItem", {"TableName": Visits.table_name(), "Key": entity._meta.primary_key(key)})
    return str(raw["Item"]["GSI1PK"]["S"])


def test_check_reports_an_unsharded_template_that_renders_a_sharded_key(dynorm_tables):
    # the two really meet in one GSI1 partition on DynamoDB
    BucketedVisit.objects.create(visit_id="b1", day="d1", at=1)
    sharded = _gsi1pk(BucketedVisit, visit_id="b1")
    bucket = int(sharded.rsplit("#", 1)[1])
    NumberedVisit.objects.create(visit_id="n1", day="d1", n=bucket, at=2)
    assert _gsi1pk(NumberedVisit, visit_id="n1") == sharded == f"V#d1#{bucket}"

    problems = Visits.check()
    assert len(problems) == 1, problems
    assert "BucketedVisit(BUCKETED_VISIT) and NumberedVisit(NUMBERED_VISIT) on index GSI1" in problems[0]
    assert "'V#{day}' + '#0..3' (write-sharded)" in problems[0] and "'V#{day}#{n}'" in problems[0]
    # reads keep to their own entity type in the shared partition
    assert [type(v) for v in NumberedVisit.objects.filter(day="d1", n=bucket)] == [NumberedVisit]
    assert NumberedVisit.objects.filter(day="d1", n=bucket).count() == 1
    assert [type(v) for v in BucketedVisit.objects.filter(day="d1")] == [BucketedVisit]


@pytest.mark.parametrize("last", ["V#{day}#x{n}", "V#{day}#{n}#{at}", "V#{day}#12"])
def test_check_is_silent_when_no_bucket_can_be_rendered(last):
    from dynorm.checks import could_collide
    from dynorm.keys import KeyTemplate

    v = BucketedVisit._meta.key_version
    sharded = BucketedVisit._meta.indexes["by_day"]
    assert not could_collide(sharded.pk, v, KeyTemplate(last), v, 4, 0)  # "x…", a 4th segment, 12 >= 4 buckets
    assert could_collide(sharded.pk, v, KeyTemplate("V#{day}#3"), v, 4, 0)
    assert not could_collide(sharded.pk, v, KeyTemplate("V#{day}"), v, 4, 0)  # V#d1 never equals V#d1#2


def _declare(name: str, **index_kwargs: int):
    class Late(Entity):
        visit_id = fields.String()
        day = fields.String()
        at = fields.Integer()

        class Meta:
            table = Visits
            entity_type = name
            pk = f"{name}#{{visit_id}}"
            sk = "L"
            indexes = {"by_day": Index("GSI1", pk="V#{day}", sk="L#{at}", **index_kwargs)}
    return Late


@pytest.mark.parametrize("kwargs, says", [({"shards": 6}, "shards=6"), ({}, "no shards")])
def test_a_gsi_partition_shared_with_another_bucket_count_is_refused_when_the_class_is_created(
        dynorm_tables, kwargs, says):
    with dynorm.capture() as c, pytest.raises(ModelError) as exc:
        _declare("LATE", **kwargs)
    assert c.requests == []
    message = str(exc.value)
    assert message.startswith("Late and BucketedVisit share partitions of GSI GSI1")
    assert f"Late declares {says} and BucketedVisit shards=4" in message
    assert "Declare the same shards= on both" in message
    assert "LATE" not in Visits._entities  # nothing registered: the class can be declared again, fixed


def test_a_gsi_partition_shared_with_the_same_bucket_count_is_one_collection(dynorm_tables):
    late = _declare("LATE_OK", shards=4)
    try:
        BucketedVisit.objects.create(visit_id="b1", day="d1", at=1)
        late.objects.create(visit_id="l1", day="d1", at=2)
        for asking in (BucketedVisit, late):
            with dynorm.capture() as c:
                grouped = asking.objects.collection(using="by_day", day="d1").grouped()
            assert c.operations == ["Query"] * 4
            assert {k.__name__: len(v) for k, v in grouped.items()} == {"BucketedVisit": 1, "Late": 1}
    finally:
        Visits._entities.pop("LATE_OK", None)
