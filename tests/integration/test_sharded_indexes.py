"""Write-sharded GSIs (``Index(..., shards=N)``): bucketed keys on writes, the fan-out and merge on reads.

Every test runs on DynamoDB Local and pins the requests sent (``dynorm.capture()``).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import zlib

import pytest

import dynorm
from dynorm import InvalidCursor, InvalidQuery, backend
from dynorm.iterables import cursor_context
from tests.models import SensorAlarm, SensorReading

SHARDS = 4


def bucket(sensor_id: str, reading_id: str) -> int:
    """The oracle's bucket: CRC-32 of the primary-key fields' key text (plain strings here), mod 4."""
    return zlib.crc32(f"{sensor_id}\x00{reading_id}".encode()) % SHARDS


def seed(day: str = "d1", n: int = 24) -> list[SensorReading]:
    out = [SensorReading.objects.create(sensor_id=f"s{i % 3}", reading_id=f"r{i:02d}", day=day, at=(i * 7) % 10)
           for i in range(n)]
    SensorAlarm.objects.create(alarm_id="a1", day=day, at=3)  # same GSI1 partitions, another type
    return out


def expected(readings: list[SensorReading], reverse: bool = False) -> list[tuple[int, int]]:
    """``(sort key, bucket)`` of each result in the merge's order: by sort key, ties by bucket (DynamoDB
    orders the items of one bucket that share a sort key)."""
    return sorted(shape(readings), reverse=reverse)


def partition(params: dict) -> str:
    """The partition-key value of a request to the index."""
    (value,) = [v["S"] for v in params["ExpressionAttributeValues"].values() if v.get("S", "").startswith("v1#DAY#")]
    return value


def shape(items: list[SensorReading]) -> list[tuple[int, int]]:
    return [(r.at, bucket(r.sensor_id, r.reading_id)) for r in items]


def test_writes_put_each_item_in_its_bucket(dynorm_tables):
    r = SensorReading.objects.create(sensor_id="s1", reading_id="r7", day="d1", at=5)
    raw = backend.call("GetItem", {"TableName": SensorReading._meta.table.table_name(),
                                   "Key": SensorReading._meta.primary_key({"sensor_id": "s1", "reading_id": "r7"})})
    assert raw["Item"]["GSI1PK"] == {"S": f"v1#DAY#d1#{bucket('s1', 'r7')}"}
    assert raw["Item"]["GSI1SK"]["S"] == SensorReading._meta.indexes["by_day"].sk.fill({"at": 5})
    # an update of a field the index uses rewrites the key in the same request, bucket and all
    with dynorm.capture() as c:
        r.update(day="d2")
    assert c.operations == ["UpdateItem"]
    raw = backend.call("GetItem", {"TableName": SensorReading._meta.table.table_name(),
                                   "Key": SensorReading._meta.primary_key({"sensor_id": "s1", "reading_id": "r7"})})
    assert raw["Item"]["GSI1PK"] == {"S": f"v1#DAY#d2#{bucket('s1', 'r7')}"}


def test_a_query_without_the_bucket_sends_one_query_per_bucket_and_merges_in_sort_key_order(dynorm_tables):
    readings = seed()
    qs = SensorReading.objects.filter(day="d1")
    plan = qs.explain()
    assert len(plan.requests) == SHARDS and "Fan-out: 4 Queries" in str(plan)
    assert [partition(r) for r in plan.requests] == [f"v1#DAY#d1#{b}" for b in range(SHARDS)]
    with dynorm.capture() as c:
        got = list(qs)
    assert c.operations == ["Query"] * SHARDS
    assert qs.stats.requests == SHARDS and qs.stats.items == len(readings)  # figures of every bucket's request
    assert sorted(partition(q.params) for q in c.requests) == [f"v1#DAY#d1#{b}" for b in range(SHARDS)]
    assert all(q.params["IndexName"] == "GSI1" for q in c.requests)
    assert all(isinstance(r, SensorReading) for r in got)  # the alarm in the same partitions is left out
    assert shape(got) == expected(readings)
    assert sorted(r.reading_id for r in got) == sorted(r.reading_id for r in readings)


def test_reverse_limit_first_exists_count(dynorm_tables):
    readings = seed()
    qs = SensorReading.objects.filter(day="d1")
    assert shape(list(qs.order_by("-sk"))) == expected(readings, reverse=True)
    with dynorm.capture() as c:
        top = list(qs.order_by("-sk")[:3])
    assert shape(top) == expected(readings, reverse=True)[:3]
    # a limit of 3 reads 3 items per bucket, not every bucket to the end
    assert c.operations == ["Query"] * SHARDS and all(q.params["Limit"] == 3 for q in c.requests)
    assert sum(q.items for q in c.requests) <= 3 * SHARDS
    assert shape([qs.first()]) == expected(readings)[:1]
    assert qs.filter(at__gte=9).exists()
    with dynorm.capture() as c:
        assert qs.count() == len(readings)
    assert c.operations == ["Query"] * SHARDS and all(q.params["Select"] == "COUNT" for q in c.requests)
    assert qs.filter(at__gte=5, at__lt=7).count() == sum(1 for r in readings if 5 <= r.at < 7)


def test_pages_resume_every_bucket_exactly(dynorm_tables):
    seed(n=30)
    qs = SensorReading.objects.filter(day="d1")
    whole = [r.reading_id for r in qs]
    for reverse in (False, True):
        q = qs.order_by("-sk") if reverse else qs
        whole = [r.reading_id for r in q]
        paged, cursor, pages = [], None, 0
        while True:
            page = q.page(size=7, cursor=cursor)
            paged += [r.reading_id for r in page]
            pages += 1
            cursor = page.cursor
            if cursor is None:
                break
        assert paged == whole and pages == 5


def test_a_cursor_only_resumes_its_own_fan_out(dynorm_tables):
    seed()
    qs = SensorReading.objects.filter(day="d1")
    cursor = qs.page(size=5).cursor
    assert cursor is not None
    with dynorm.capture() as c, pytest.raises(InvalidCursor):
        qs.filter(at__gte=2).page(size=5, cursor=cursor)
    assert c.requests == []
    with pytest.raises(InvalidCursor):
        qs.page(size=5, cursor=cursor[:-2] + ("A" if cursor[-1] != "A" else "B") + cursor[-1])


def _in_bucket(b: int, prefix: str) -> str:
    """A reading id of sensor ``s1`` whose item lands in bucket ``b``."""
    return next(f"{prefix}{k}" for k in itertools.count() if bucket("s1", f"{prefix}{k}") == b)


def _rest(qs, cursor: str | None, size: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    while cursor is not None:
        page = qs.page(size=size, cursor=cursor)
        out += shape(list(page))
        cursor = page.cursor
    return out


@pytest.mark.parametrize("reverse", [False, True])
def test_items_written_between_pages_are_returned_when_they_sort_after_the_last_item_returned(dynorm_tables,
                                                                                             reverse):
    """Paging a fan-out behaves like paging one Query by LastEvaluatedKey: an item written between pages
    comes on a later page when it sorts after the last item returned, in whichever bucket it lands (one
    already read to its end, one not read yet), and never when it sorts before (pages stay in order)."""
    sign = -1 if reverse else 1  # order_by("-sk") of -at is the ascending order of at; ties by bucket reversed

    def put(b: int, at: int, prefix: str = "r") -> SensorReading:
        return SensorReading.objects.create(sensor_id="s1", reading_id=_in_bucket(b, prefix), day="d1", at=sign * at)

    # bucket 0: 1 (read to its end by page 1); 1: 2, 60; 2: 3, 70; 3: 80 (not read by page 1)
    put(0, 1)
    put(1, 2), put(1, 60, "q")
    last = put(2, 3)
    put(2, 70, "q")
    put(3, 80)
    qs = SensorReading.objects.filter(day="d1").order_by("-sk" if reverse else "sk")
    first = qs.page(size=3)
    assert shape(list(first)) == [(sign * 1, 0), (sign * 2, 1), (sign * 3, 2)] and first.cursor

    tie_after, tie_before = (1, 3) if reverse else (3, 1)  # the merge's ties follow the bucket number
    put(0, 40, "n")   # after, in the bucket page 1 read to its end
    put(3, 45, "n")   # after, in the bucket page 1 did not read
    put(2, 50, "n")   # after, in the bucket of the last item returned
    put(tie_after, 3, "t")   # same sort key as the last item, a bucket that comes after it
    put(tie_before, 3, "t")  # same sort key, a bucket that comes before it: before the cursor
    put(3, 0, "b")    # before the cursor, in the bucket page 1 did not read
    put(0, 2, "b")    # before the cursor, in a bucket read to its end
    last.delete()     # the last item returned is gone: its position still resumes bucket 2 exactly

    want = [(sign * 3, tie_after), (sign * 40, 0), (sign * 45, 3), (sign * 50, 2), (sign * 60, 1),
            (sign * 70, 2), (sign * 80, 3)]
    with dynorm.capture() as c:
        assert _rest(qs, first.cursor, 2) == want
    assert set(c.operations) == {"Query"}


def _payload(cursor: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(cursor.split(".")[0] + "=="))


def _resigned(qs, positions: list) -> str:
    """A cursor of ``qs`` holding ``positions``, signed as dynorm signs (what an earlier version issued)."""
    from dynorm import cursor as cursors

    context, secret, _ = cursor_context(qs, qs._plan(limit=3))
    return cursors._sign({"s": positions}, context, secret)


def test_a_cursor_of_an_earlier_version_that_marked_a_bucket_done_is_refused(dynorm_tables):
    """Cursors issued before the merge-position cursors marked a bucket read to its end ``"done"`` and lost
    its position: when the last item returned came from it, no cursor of today resumes it exactly (that
    item came again). Every such cursor is refused, before any request, naming what to do."""
    for b, at, prefix in [(0, 1, "r"), (1, 2, "r"), (0, 3, "q"), (1, 5, "q"), (2, 6, "r"), (3, 7, "r")]:
        SensorReading.objects.create(sensor_id="s1", reading_id=_in_bucket(b, prefix), day="d1", at=at)
    qs = SensorReading.objects.filter(day="d1")
    first = qs.page(size=3)
    assert shape(list(first)) == [(1, 0), (2, 1), (3, 0)]  # bucket 0 read to its end, its item last
    positions = _payload(first.cursor)["s"]
    assert positions[0] is not None and positions[1] is not None and positions[3] is None
    positions[0] = "done"  # as the earlier dynorm wrote it
    with dynorm.capture() as c, pytest.raises(InvalidCursor, match="earlier dynorm version.*first page"):
        qs.page(size=2, cursor=_resigned(qs, positions))
    assert c.requests == []
    assert _rest(qs, first.cursor, 2) == [(5, 1), (6, 2), (7, 3)]  # today's cursor resumes exactly


@pytest.mark.parametrize("change", ["no sort key", "a number sort key", "an empty key", "another attribute"])
def test_a_signed_cursor_whose_positions_do_not_hold_the_index_keys_is_refused_before_any_request(
        dynorm_tables, change):
    seed()
    qs = SensorReading.objects.filter(day="d1")
    positions = _payload(qs.page(size=5).cursor)["s"]
    pos = next(p for p in positions if p is not None)
    assert set(pos) == {"PK", "SK", "GSI1PK", "GSI1SK"}
    if change == "no sort key":
        del pos["GSI1SK"]
    elif change == "a number sort key":
        pos["GSI1SK"] = {"N": "3"}
    elif change == "an empty key":
        pos["SK"] = {"S": ""}
    else:
        pos["GSI2PK"] = {"S": "x"}
    with dynorm.capture() as c, pytest.raises(InvalidCursor, match="invalid key"):
        qs.page(size=5, cursor=_resigned(qs, positions))
    assert c.requests == []


def test_a_cursor_made_before_shard_by_changed_is_refused(dynorm_tables, monkeypatch):
    """The bucket of an item follows ``shard_by``: after a change (same count) every bucket's position
    is another's, so a cursor from before resumes nothing exactly and is refused, as after a count change."""
    seed()
    qs = SensorReading.objects.filter(day="d1")
    cursor = qs.page(size=5).cursor
    by_day = SensorReading._meta.indexes["by_day"]
    assert by_day.shard_by == ("sensor_id", "reading_id")
    monkeypatch.setitem(SensorReading._meta.indexes, "by_day", by_day.replace(shard_by=("sensor_id",)))
    changed = SensorReading.objects.filter(day="d1")
    with dynorm.capture() as c, pytest.raises(InvalidCursor, match="shard_by"):
        changed.page(size=5, cursor=cursor)
    assert c.requests == []
    assert len(changed.page(size=5, cursor=changed.page(size=5).cursor)) == 5
    monkeypatch.setitem(SensorReading._meta.indexes, "by_day", by_day.replace(shards=SHARDS + 1))
    with pytest.raises(InvalidCursor, match="shards"):
        SensorReading.objects.filter(day="d1").page(size=5, cursor=cursor)


def test_naming_the_bucket_source_reads_one_bucket(dynorm_tables):
    seed()
    qs = SensorReading.objects.using("by_day").filter(day="d1", sensor_id="s1", reading_id="r01")
    plan = qs.explain()
    assert plan.fanout == () and partition(plan.params) == f"v1#DAY#d1#{bucket('s1', 'r01')}"
    with dynorm.capture() as c:
        assert [r.reading_id for r in qs] == ["r01"]
    assert c.operations == ["Query"]


def test_consistent_read_is_refused_before_any_request(dynorm_tables):
    with dynorm.capture() as c, pytest.raises(InvalidQuery, match="ConsistentRead"):
        list(SensorReading.objects.filter(day="d1").consistent())
    assert c.requests == []


def test_async_fan_out_gathers_the_buckets(dynorm_tables):
    readings = seed()

    async def run():
        qs = SensorReading.objects.filter(day="d1")
        got = [r async for r in qs]
        return got, await SensorReading.objects.filter(day="d1").acount()

    with dynorm.capture() as c:
        got, count = asyncio.run(run())
    assert shape(got) == expected(readings) and count == len(readings)
    assert c.operations == ["Query"] * (2 * SHARDS)


def test_a_failing_bucket_fails_the_query(dynorm_tables):
    seed()
    calls = []

    def fail_bucket_2(params, **kwargs):
        calls.append(1)
        if any(v.get("S", "").endswith("#2") for v in params.get("ExpressionAttributeValues", {}).values()):
            raise RuntimeError("boom")

    client = backend.client()
    client.meta.events.register("provide-client-params.dynamodb.Query", fail_bucket_2)
    try:
        with pytest.raises(RuntimeError, match="boom"):
            list(SensorReading.objects.filter(day="d1"))
    finally:
        client.meta.events.unregister("provide-client-params.dynamodb.Query", fail_bucket_2)
    assert len(calls) == SHARDS


def test_values_get_offset_slices_and_queryset_delete_go_through_the_fan_out(dynorm_tables):
    readings = seed()
    qs = SensorReading.objects.filter(day="d1")
    ids = [r.reading_id for r in qs]
    assert [v["reading_id"] for v in qs._clone().values("reading_id")] == ids
    assert [r.reading_id for r in qs._clone()[5:9]] == ids[5:9]
    assert qs._clone().last().reading_id == ids[-1]
    one = readings[0]
    assert qs._clone().filter(at=one.at).get(reading_id=one.reading_id).sensor_id == one.sensor_id
    with pytest.raises(SensorReading.MultipleObjectsReturned):
        qs._clone().get()
    with dynorm.capture() as c:
        deleted = SensorReading.objects.filter(day="d1", at__lt=5).delete()
    assert c.operations[:SHARDS] == ["Query"] * SHARDS
    left = sorted(r.reading_id for r in SensorReading.objects.filter(day="d1"))
    assert left == sorted(r.reading_id for r in readings if r.at >= 5)
    assert deleted == len(readings) - len(left) == sum(1 for r in readings if r.at < 5)


def test_ctrl_c_during_a_fan_out_surfaces_while_a_bucket_still_hangs(dynorm_tables):
    """A KeyboardInterrupt reaches the caller at once, not after the slowest bucket answers: the
    fan-out's threads are daemons the caller does not wait for (a hung request never holds Ctrl-C,
    nor the process's exit)."""
    import _thread
    import threading

    seed()
    release = threading.Event()
    hung = threading.Event()
    answered = threading.Event()

    def hang_bucket_2(params, **kwargs):
        if any(v.get("S", "").endswith("#2") for v in params.get("ExpressionAttributeValues", {}).values()):
            hung.set()
            release.wait(10)  # the request of bucket 2 hangs until the test releases it
            answered.set()

    def interrupt_once_hung() -> None:
        if hung.wait(30):
            _thread.interrupt_main()

    client = backend.client()
    client.meta.events.register("provide-client-params.dynamodb.Query", hang_bucket_2)
    threading.Thread(target=interrupt_once_hung, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            list(SensorReading.objects.filter(day="d1"))
        assert not answered.is_set()  # the interrupt arrived while bucket 2 still hung
    finally:
        release.set()
        client.meta.events.unregister("provide-client-params.dynamodb.Query", hang_bucket_2)
