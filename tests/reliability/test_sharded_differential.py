"""The fan-out over a write-sharded GSI against a brute-force oracle, pages included.

Random sensor readings (sensor, sort key ``at`` from a small pool so sort keys tie, a note or
none) and alarms (another entity type in the same GSI1 partitions) under a fresh day; random
queries on that day (no sort-key condition, ``gte``/``lt``/``between`` on ``at``, maybe a filter
on the note), maybe reversed, maybe sliced, read whole and in pages of a random size. The oracle
filters the readings written and sorts them by ``(at, bucket)`` — the merge's order: sort key,
ties by bucket number, reversed as a whole by ``order_by("-sk")`` — the bucket being CRC-32 of the
primary-key fields' text mod 4, computed here independently. DynamoDB itself orders the items of
one bucket that share a sort key, so the results must equal the oracle's ``(at, bucket)``
sequence exactly and hold the oracle's items in each such group; the pages concatenated must
equal the unpaged result exactly (no item lost or repeated), a slice must be the result's
prefix, and ``count()`` the oracle's length. Then the query is paged again with random readings
written between pages, and must behave like one Query paged by LastEvaluatedKey: every reading
present throughout returned once, the pages in merge order, a reading written after a page
returned when it sorts after that page's last item and never when it sorts before.
"""

from __future__ import annotations

import itertools
import zlib
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import dynorm
from tests.models import SensorAlarm, SensorReading
from tests.tiers import examples

_runs = itertools.count()
SHARDS = 4
ATS = [-3, 0, 1, 2, 10]


def _bucket(sensor_id: str, reading_id: str) -> int:
    return zlib.crc32(f"{sensor_id}\x00{reading_id}".encode()) % SHARDS


def _holds(item: dict[str, Any], cond: tuple[str, Any] | None) -> bool:
    if cond is None:
        return True
    lookup, value = cond
    at = item["at"]
    return bool({"gte": lambda: at >= value, "lt": lambda: at < value,
                 "between": lambda: value[0] <= at <= value[1]}[lookup]())


def _check(data: Any) -> None:
    n = next(_runs)
    day = f"d{n}"
    reading = st.tuples(st.sampled_from(["s1", "s2", "s3"]), st.sampled_from(ATS), st.sampled_from([None, "x", "y"]))
    readings = data.draw(st.lists(reading, min_size=8, max_size=30), label="readings")
    alarms = data.draw(st.lists(st.sampled_from(ATS), max_size=4), label="alarms")
    items = [{"sensor_id": s, "reading_id": f"r{i}", "day": day, "at": at, "note": note}
             for i, (s, at, note) in enumerate(readings)]
    SensorReading.objects.bulk_create([SensorReading(**it) for it in items])
    SensorAlarm.objects.bulk_create([SensorAlarm(alarm_id=f"a{n}-{i}", day=day, at=at) for i, at in enumerate(alarms)])

    cond = data.draw(st.one_of(st.none(), st.tuples(st.sampled_from(["gte", "lt"]), st.sampled_from(ATS)),
                               st.tuples(st.just("between"), st.tuples(st.sampled_from(ATS), st.sampled_from(ATS))
                                         .map(sorted).map(tuple))), label="sort-key condition")
    note = data.draw(st.sampled_from([None, "x"]), label="note filter")
    reverse = data.draw(st.booleans(), label="reverse")
    qs = SensorReading.objects.filter(day=day)
    if cond is not None:
        qs = qs.filter(**{f"at__{cond[0]}": cond[1]})
    if note is not None:
        qs = qs.filter(note=note)
    if reverse:
        qs = qs.order_by("-sk")

    want = [it for it in items if _holds(it, cond) and (note is None or it["note"] == note)]
    order = sorted(want, key=lambda it: (it["at"], _bucket(it["sensor_id"], it["reading_id"])), reverse=reverse)

    def shape(rows: list[Any]) -> list[tuple[int, int]]:
        return [(r.at, _bucket(r.sensor_id, r.reading_id)) for r in rows]

    def groups(rows: list[tuple[int, int, str]]) -> dict[tuple[int, int], set[str]]:
        out: dict[tuple[int, int], set[str]] = {}
        for at, b, rid in rows:
            out.setdefault((at, b), set()).add(rid)
        return out

    with dynorm.capture() as c:
        got = list(qs._clone())
    assert c.operations[:SHARDS] == ["Query"] * SHARDS
    assert shape(got) == [(it["at"], _bucket(it["sensor_id"], it["reading_id"])) for it in order]
    assert groups([(r.at, _bucket(r.sensor_id, r.reading_id), r.reading_id) for r in got]) == groups(
        [(it["at"], _bucket(it["sensor_id"], it["reading_id"]), it["reading_id"]) for it in order])
    ids = [r.reading_id for r in got]

    limit = data.draw(st.integers(min_value=1, max_value=8), label="limit")
    assert [r.reading_id for r in qs._clone()[:limit]] == ids[:limit]
    assert qs._clone().count() == len(want)

    size = data.draw(st.integers(min_value=1, max_value=6), label="page size")
    paged: list[str] = []
    cursor = None
    for _ in range(len(want) + 2):
        page = qs._clone().page(size=size, cursor=cursor)
        assert len(page.items) <= size
        paged += [r.reading_id for r in page]
        cursor = page.cursor
        if cursor is None:
            break
    assert cursor is None and paged == ids

    # pages again, readings written between them: as one Query paged by LastEvaluatedKey, each page
    # resumes from the merge position of the last item returned (its (at, bucket), reversed by "-sk")
    rows: list[tuple[str, int, int]] = []
    late: list[tuple[dict[str, Any], tuple[int, int]]] = []  # a reading written, the position then
    cursor = None
    for _ in range(200):
        page = qs._clone().page(size=size, cursor=cursor)
        got_rows = [(r.reading_id, r.at, _bucket(r.sensor_id, r.reading_id)) for r in page]
        rows += got_rows
        cursor = page.cursor
        if cursor is None:
            break
        position = got_rows[-1][1:]
        for s, at, note_ in data.draw(st.lists(reading, max_size=3), label="written between pages"):
            it = {"sensor_id": s, "reading_id": f"w{len(late)}", "day": day, "at": at, "note": note_}
            # ids (so buckets) the same when hypothesis replays; a put overwrites an earlier example's
            SensorReading.objects.bulk_create([SensorReading(**it)])
            late.append((it, position))
    assert cursor is None
    seen = [rid for rid, _, _ in rows]
    assert len(seen) == len(set(seen))  # nothing twice
    merge_order = [(at, b) for _, at, b in rows]
    assert merge_order == sorted(merge_order, reverse=reverse)  # one order across the pages
    assert {it["reading_id"] for it in want} <= set(seen)  # every item present throughout
    for it, position in late:
        at_b = (it["at"], _bucket(it["sensor_id"], it["reading_id"]))
        if not (_holds(it, cond) and (note is None or it["note"] == note)):
            assert it["reading_id"] not in seen
        elif (at_b > position) != reverse and at_b != position:
            assert it["reading_id"] in seen, (it, position)  # after the last item returned then
        elif at_b != position:
            assert it["reading_id"] not in seen, (it, position)  # before it: never out of order
        # the same (at, bucket) as that item: DynamoDB orders the bucket's ties; either is right
    assert set(seen) <= {it["reading_id"] for it in want} | {it["reading_id"] for it, _ in late}


@pytest.mark.usefixtures("dynorm_tables")
@settings(max_examples=examples(60, 20), deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_sharded_queries_equal_the_oracle_pages_included(data: Any) -> None:
    _check(data)


@pytest.mark.slow(reason="a longer differential run of the shard fan-out: 300 examples, about 3 minutes")
@pytest.mark.usefixtures("dynorm_tables")
@settings(max_examples=300, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_sharded_queries_equal_the_oracle_long_run(data: Any) -> None:
    _check(data)
