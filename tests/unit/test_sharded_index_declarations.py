"""Write-sharded indexes without I/O: declarations refused when the class is created, the bucket, the plan,
the merge order, the cursor, and makemigrations refusing a change of the bucket count."""

from __future__ import annotations

import zlib
from decimal import Decimal

import pytest

import dynorm
from dynorm import Entity, Index, fields
from dynorm.cursor import decode_shard_cursor, encode_shard_cursor
from dynorm.migrations.autodetector import detect_changes
from dynorm.migrations.state import ProjectState, entity_state, table_state
from dynorm.shard_merge import ShardMerge
from dynorm.shards import bucket_of, sort_value
from tests.models import SensorReading, Telemetry


def declare(**index_kwargs):
    class Bad(Entity):
        a = fields.String()
        b = fields.String()
        day = fields.String()

        class Meta:
            table = Telemetry
            entity_type = "BAD"
            pk = "B#{a}"
            sk = "B#{b}"
            indexes = {"by_day": Index("GSI1", pk="D#{day}", sk="{a}", **index_kwargs)}
    return Bad


@pytest.mark.parametrize("kwargs, message", [
    ({"shards": 1}, "from 2 to 1000"),
    ({"shards": 1001}, "from 2 to 1000"),
    ({"shards": True}, "from 2 to 1000"),
    ({"shards": "4"}, "from 2 to 1000"),
    ({"shards": 4, "shard_by": "day"}, "shard_by must name primary-key fields"),
    ({"shards": 4, "shard_by": ("a", "a")}, "each once"),
    ({"shard_by": "a"}, "shard_by= without shards="),
])
def test_declarations_that_would_corrupt_keys_are_refused_when_the_class_is_created(kwargs, message):
    with pytest.raises(dynorm.ModelError, match=message) as exc:
        declare(**kwargs)
    assert "Bad.Meta.indexes['by_day']" in str(exc.value)


def test_shards_on_a_local_secondary_index_is_refused():
    from tests.models import Retail

    with pytest.raises(dynorm.ModelError, match="local secondary index"):
        class OnLsi(Entity):
            a = fields.String()
            placed_at = fields.DateTime()

            class Meta:
                table = Retail
                entity_type = "ONLSI"
                pk = "L#{a}"
                sk = "L"
                indexes = {"by_placed": Index("LSI1", shards=4)}


def test_the_bucket_is_crc32_of_the_primary_key_fields_and_stable():
    bound = SensorReading._meta.indexes["by_day"]
    assert bound.shards == 4 and bound.shard_by == ("sensor_id", "reading_id")
    # pinned: the same bucket in every process and Python version (a change here moves every stored item)
    assert bucket_of(bound, {"sensor_id": "s1", "reading_id": "r7"}) == zlib.crc32(b"s1\x00r7") % 4 == 1
    keys = SensorReading._meta.key_attributes({"sensor_id": "s1", "reading_id": "r7", "day": "d1", "at": 5})
    assert keys["GSI1PK"] == "v1#DAY#d1#1"
    with pytest.raises(dynorm.InvalidKeyValue, match="reading_id"):
        bucket_of(bound, {"sensor_id": "s1"})


def test_explain_shows_one_request_per_bucket_without_io():
    with dynorm.capture() as c:
        plan = SensorReading.objects.filter(day="d1", at__gte=3).order_by("-sk")[:5].explain()
    assert c.requests == []
    assert len(plan.requests) == 4 and plan.params == plan.requests[0]
    pks = [v["S"] for r in plan.requests for v in r["ExpressionAttributeValues"].values() if "#DAY#" in v.get("S", "")]
    assert pks == [f"v1#DAY#d1#{b}" for b in range(4)]
    assert all(r["ScanIndexForward"] is False and r["Limit"] == 5 and r["IndexName"] == "GSI1"
               for r in plan.requests)
    assert "Fan-out: 4 Queries" in str(plan)


def test_sort_values_order_as_dynamodb_does():
    assert sort_value({"S": "\uffff"}) < sort_value({"S": "\U0001f600"})  # UTF-8 bytes, not UTF-16 units
    assert sort_value({"N": "9"}) < sort_value({"N": "10"})
    assert sort_value({"N": "-1e2"}) < sort_value({"N": "0.5"}) == (1, Decimal("0.5"))
    assert sort_value({"B": b"\x01"}) < sort_value({"B": b"\x01\x00"})


def test_the_merge_reads_a_bucket_again_only_when_its_page_is_used_up():
    reqs = [{"TableName": "t", "b": b} for b in range(2)]
    merge = ShardMerge(reqs, "SK")
    steps = merge.steps()
    step = next(steps)
    assert [s.params["b"] for s in step.sends] == [0, 1]
    page = lambda *sks, more=False: {"Items": [{"SK": {"S": s}} for s in sks],  # noqa: E731
                                     **({"LastEvaluatedKey": {"SK": {"S": sks[-1]}}} if more else {})}
    emitted = steps.send([page("a", "c", more=True), page("b", "d")])
    # "a", "b", "c" merge; bucket 0's page is used up and it has more: stop before "d"
    assert [(b, r["SK"]["S"]) for b, r in emitted.value] == [(0, "a"), (1, "b"), (0, "c")]
    step = next(steps)
    assert [s.params["b"] for s in step.sends] == [0]
    assert step.sends[0].params["ExclusiveStartKey"] == {"SK": {"S": "c"}}
    emitted = steps.send([page("e")])
    assert [(b, r["SK"]["S"]) for b, r in emitted.value] == [(1, "d"), (0, "e")]
    with pytest.raises(StopIteration):
        next(steps)
    assert merge.finished(0) and merge.finished(1)


def test_a_shard_cursor_round_trips_and_refuses_another_count():
    ctx = {"t": "t", "kv": "v1", "n": 2}
    c = encode_shard_cursor([None, {"PK": {"S": "x"}}], ctx, "secret")
    assert decode_shard_cursor(c, ctx, "secret", {"PK"}, 2) == [None, {"PK": {"S": "x"}}]
    with pytest.raises(dynorm.InvalidCursor):
        decode_shard_cursor(c, {**ctx, "n": 3}, "secret", {"PK"}, 3)
    with pytest.raises(dynorm.InvalidCursor):
        decode_shard_cursor(c, ctx, "secret", {"SK"}, 2)


def _states():
    old, new = ProjectState(), ProjectState()
    for s in (old, new):
        s.tables["telemetry"] = table_state(Telemetry)
        s.entities[("telemetry", "SENSOR_READING")] = entity_state(SensorReading)
    return old, new


@pytest.mark.parametrize("before, what", [({"shards": {"GSI1": 8}}, "count"), ({"shards": {}, "shard_by": {}}, "none"),
                                          ({"shard_by": {"GSI1": ["sensor_id"]}}, "shard_by")])
def test_makemigrations_rekeys_a_change_of_the_bucket_count_or_its_fields(before, what):
    """A new count, sharding an index that had none, or a new ``shard_by`` moves most items to another
    bucket: makemigrations writes a RekeyEntity (as for a new template) whose new layout carries the
    sharding, and the migration file round-trips it."""
    from dynorm.migrations.operations import RekeyEntity

    old, new = _states()
    now = new.entities[("telemetry", "SENSOR_READING")]
    assert now.shards == {"GSI1": 4} and now.definition()["shards"] == {"GSI1": 4}
    assert now.definition()["shard_by"] == {"GSI1": ["sensor_id", "reading_id"]}
    assert detect_changes(old, new) == []
    for k, v in before.items():
        setattr(old.entities[("telemetry", "SENSOR_READING")], k, v)
    (op,) = detect_changes(old, new)
    assert isinstance(op, RekeyEntity) and (op.from_version, op.to_version) == ("v1", "v1")
    made = op.deconstruct()
    assert made["new"]["shards"] == {"GSI1": 4} and made["new"]["shard_by"] == {"GSI1": ["sensor_id", "reading_id"]}
    again = RekeyEntity(**made)
    assert (again.new.shards, again.new.shard_by, again.old.shards) == (now.shards, now.shard_by, op.old.shards)
    state = old.clone()
    again.state_forwards(state)
    assert detect_changes(state, new) == []  # makemigrations --check is clean once it is written


def test_the_rekey_renders_each_items_bucket_as_the_entitys_writes_do():
    from dynorm.migrations.operations import RekeyEntity
    from dynorm.migrations.rekey import Counts, Rekeyer

    old, new = _states()
    old.entities[("telemetry", "SENSOR_READING")].shards = {"GSI1": 8}
    (op,) = detect_changes(old, new)
    assert isinstance(op, RekeyEntity)
    rekeyer = Rekeyer(op, new.tables["telemetry"], "t", "move", Counts())
    values = {"sensor_id": "s1", "reading_id": "r7", "day": "d1", "at": 5}
    stored = SensorReading._meta.key_attributes(values)  # the one key renderer of the entity's writes
    raw = {**{a: {"S": v} for a, v in stored.items() if v is not None},
           "sensor_id": {"S": "s1"}, "reading_id": {"S": "r7"}, "day": {"S": "d1"}, "at": {"N": "5"},
           "entityType": {"S": "SENSOR_READING"}}
    assert raw["GSI1PK"] == {"S": f"v1#DAY#d1#{bucket_of(SensorReading._meta.indexes['by_day'], values)}"}
    wrong = dict(raw, GSI1PK={"S": "v1#DAY#d1#7"})
    assert rekeyer.new_item(wrong)["GSI1PK"] == raw["GSI1PK"]
    assert rekeyer.new_item(raw) is None  # already in its bucket: not rewritten


def test_the_access_pattern_document_shows_the_buckets():
    from dynorm.patterns import build_document

    text = str(build_document([Telemetry]))
    assert "write-sharded: GSI1PK ends in #0 .. #3, CRC-32 of sensor_id, reading_id mod 4" in text


def test_sharding_an_index_on_the_tables_own_key_attribute_is_refused():
    from tests.models import Retail

    with pytest.raises(dynorm.ModelError, match="also written by another key"):
        class Inverted(Entity):
            a = fields.String()
            b = fields.String()

            class Meta:
                table = Retail
                entity_type = "INVERTED"
                pk = "I#{a}"
                sk = "J#{b}"
                indexes = {"by_b": Index("INV", pk="J#{b}", sk="I#{a}", shards=4)}
