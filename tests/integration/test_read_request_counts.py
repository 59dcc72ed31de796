"""The requests every read path sends: how many, of which kind, with which Limit and start key.

One line per request (see ``_shapes``): ``"Query F L2"`` is a Query with a FilterExpression and
Limit 2; ``ESK`` marks a later page (ExclusiveStartKey), ``COUNT`` Select=COUNT, ``DESC``
ScanIndexForward false, ``CR`` ConsistentRead, ``P`` a ProjectionExpression, ``I:GSI1`` an index,
``@v1`` the key version in the key asked for, ``n3`` the keys of a BatchGetItem. The sync and the
asyncio API send the same requests (the ``io`` fixture runs each test through both).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import dynorm
from dynorm import Entity, Index, Table, backend, fields
from tests.models import Customer, Employment, Order, Person, Reading


class PinRollouts(Table):
    class Meta:
        table_name = "pin_rollouts"
        gsi_count = 1


class Gadget(Entity):
    """Mid-rollout: current key version v2, items at v1 still read (``Meta.read_versions``)."""

    gid = fields.String()
    maker = fields.String()
    size = fields.Integer(default=0)

    class Meta:
        table = PinRollouts
        entity_type = "GADGET"
        key_version = "v2"
        read_versions = ["v2", "v1"]
        pk = "{version}#G#{gid}"
        sk = "METADATA"
        # version-blind: the index key is the same text at every key version
        indexes = {"by_maker": Index("GSI1", pk="M#{maker}", sk="G#{gid}")}


_VERSION = re.compile(r"^(v\d+)#")


def _version_of(params: dict[str, Any]) -> str | None:
    values = list(params.get("Key", {}).values()) + list(params.get("ExpressionAttributeValues", {}).values())
    for av in values:
        found = _VERSION.match(str(av.get("S", "")))
        if found:
            return found.group(1)
    return None


def _shape(record: backend.RequestRecord) -> str:
    p = record.params
    tokens = [record.operation]
    if record.operation == "BatchGetItem":
        tokens.append(f"n{sum(len(spec['Keys']) for spec in p['RequestItems'].values())}")
        return " ".join(tokens)
    flags = [("IndexName" in p, f"I:{p.get('IndexName')}"), (p.get("Select") == "COUNT", "COUNT"),
             ("FilterExpression" in p, "F"), ("ProjectionExpression" in p, "P"),
             (p.get("ScanIndexForward") is False, "DESC"), (bool(p.get("ConsistentRead")), "CR"),
             ("Limit" in p, f"L{p.get('Limit')}"), ("ExclusiveStartKey" in p, "ESK")]
    tokens += [token for present, token in flags if present]
    version = _version_of(p)
    if version and record.table and record.table.endswith("pin_rollouts"):
        tokens.append(f"@{version}")
    return " ".join(tokens)


def _shapes(c: backend.Capture) -> list[str]:
    return [_shape(r) for r in c.requests]


def _readings(n: int, sensor: str = "s1") -> None:
    """``n`` readings of one year, ``value == seq``: a filter on value keeps a known tail."""
    Reading.objects.bulk_create([Reading(sensor=sensor, year=2020, seq=i, value=i) for i in range(n)])


def _run(io: Any, fn: Any) -> list[str]:
    with dynorm.capture() as c:
        fn()
    return _shapes(c)


# -- iteration, slicing, iterator -------------------------------------------------------------
def test_iteration(io: Any) -> None:
    _readings(40)
    qs = Reading.objects.filter(sensor="s1")
    assert _run(io, lambda: io.list(qs)) == ["Query"]
    assert _run(io, lambda: io.list(Reading.objects.filter(sensor="s1")[:5])) == ["Query L5"]
    assert _run(io, lambda: io.list(Reading.objects.filter(sensor="s1")[2:5])) == ["Query L5"]
    # behind a filter, later requests read ahead eightfold (the matches are seq 30..39)
    shapes = _run(io, lambda: io.list(Reading.objects.filter(sensor="s1", value__gte=30)[:2]))
    assert shapes == ["Query F L2", "Query F L16 ESK", "Query F L128 ESK"]
    shapes = _run(io, lambda: io.list(Reading.objects.filter(sensor="s1", value__gte=30)))
    assert shapes == ["Query F"]
    assert _run(io, lambda: io.list(Reading.objects.filter(sensor="s2"))) == ["Query"]
    assert _run(io, lambda: io.list(Reading.objects.filter(sensor="s1")[:0])) == []
    assert _run(io, lambda: io.list(qs)) == []  # qs holds its results
    assert _run(io, lambda: io.list(Reading.objects.scan().filter(value__gte=35))) == ["Scan F"]


def test_iterator_sends_what_iteration_sends() -> None:
    _readings(40)
    with dynorm.capture() as c:
        assert len(list(Reading.objects.filter(sensor="s1").iterator())) == 40
        assert [r.seq for r in Reading.objects.filter(sensor="s1", value__gte=30)[:2].iterator()] == [30, 31]
    assert _shapes(c) == ["Query", "Query F L2", "Query F L16 ESK", "Query F L128 ESK"]

    async def run() -> list[int]:
        try:
            return [r.seq async for r in Reading.objects.filter(sensor="s1", value__gte=30)[:2].aiterator()]
        finally:
            await dynorm.aclose()

    import asyncio

    with dynorm.capture() as c:
        assert asyncio.run(run()) == [30, 31]
    assert _shapes(c) == ["Query F L2", "Query F L16 ESK", "Query F L128 ESK"]


def test_len_bool_repr_and_index() -> None:
    _readings(30)
    with dynorm.capture() as c:
        assert len(Reading.objects.filter(sensor="s1")) == 30
        assert bool(Reading.objects.filter(sensor="s1"))
        assert "remaining elements truncated" in repr(Reading.objects.filter(sensor="s1"))
        assert Reading.objects.filter(sensor="s1")[3].seq == 3
        assert [r.seq for r in Reading.objects.filter(sensor="s1")[1:7:2]] == [1, 3, 5]
    assert _shapes(c) == ["Query", "Query", "Query L21", "Query L4", "Query L7"]


# -- get, first, last, exists, latest, earliest ------------------------------------------------
def test_get(io: Any) -> None:
    _readings(12)
    assert _run(io, lambda: io(Reading.objects, "get", sensor="s1", year=2020, seq=3)) == ["GetItem"]
    assert _run(io, lambda: io(Reading.objects, "get", sensor="s1", year=2020, seq=3, value=3)) == ["GetItem"]

    def missing() -> None:
        with pytest.raises(Reading.DoesNotExist):
            io(Reading.objects, "get", sensor="s1", year=2020, seq=99)

    assert _run(io, missing) == ["GetItem"]
    # a Query reads at most two matches; behind a filter it reads ahead
    assert _run(io, lambda: io(Reading.objects, "get", sensor="s1", value=3)) == ["Query F L2", "Query F L16 ESK"]

    def two() -> None:
        with pytest.raises(Reading.MultipleObjectsReturned):
            io(Reading.objects.filter(sensor="s1"), "get")

    assert _run(io, two) == ["Query L2"]


def test_first_last_exists_latest_earliest(io: Any) -> None:
    _readings(40)
    qs = Reading.objects.filter(sensor="s1")
    assert _run(io, lambda: io(qs, "first")) == ["Query L1"]
    assert _run(io, lambda: io(qs, "last")) == ["Query DESC L1"]
    assert _run(io, lambda: io(qs, "exists")) == ["Query L1"]
    assert _run(io, lambda: io(qs, "latest")) == ["Query DESC L1"]
    assert _run(io, lambda: io(qs, "earliest")) == ["Query L1"]
    late = Reading.objects.filter(sensor="s1", value__gte=30)
    assert _run(io, lambda: io(late, "first")) == ["Query F L1", "Query F L8 ESK", "Query F L64 ESK"]
    assert _run(io, lambda: io(Reading.objects.filter(sensor="s2"), "exists")) == ["Query L1"]
    assert _run(io, lambda: io(Reading.objects.filter(sensor="s1", year=2020, seq=5), "first")) == ["GetItem"]


# -- count ----------------------------------------------------------------------------------
def test_count(io: Any) -> None:
    _readings(12)
    assert _run(io, lambda: io(Reading.objects.filter(sensor="s1"), "count")) == ["Query COUNT F"]
    assert _run(io, lambda: io(Reading.objects.filter(sensor="s1", value__gte=5), "count")) == ["Query COUNT F"]
    assert _run(io, lambda: io(Reading.objects.filter(sensor="s1", year=2020, seq=5), "count")) == ["GetItem"]
    assert _run(io, lambda: io(Reading.objects.filter(sensor="s1")[:3], "count")) == ["Query L3"]
    evaluated = Reading.objects.filter(sensor="s1")
    list(evaluated)
    assert _run(io, lambda: io(evaluated, "count")) == []


# -- page -----------------------------------------------------------------------------------
def test_page_with_and_without_cursor(io: Any) -> None:
    _readings(7)
    qs = Reading.objects.filter(sensor="s1")
    pages: list[Any] = []
    assert _run(io, lambda: pages.append(io(qs, "page", 3))) == ["Query L4"]
    assert [r.seq for r in pages[-1]] == [0, 1, 2] and pages[-1].cursor
    assert _run(io, lambda: pages.append(io(qs, "page", 3, pages[-1].cursor))) == ["Query L4 ESK"]
    assert [r.seq for r in pages[-1]] == [3, 4, 5] and pages[-1].cursor
    assert _run(io, lambda: pages.append(io(qs, "page", 3, pages[-1].cursor))) == ["Query L4 ESK"]
    assert [r.seq for r in pages[-1]] == [6] and pages[-1].cursor is None
    # a page that takes the last item carries no cursor: one item more is read to know
    assert _run(io, lambda: pages.append(io(qs, "page", 7))) == ["Query L8"]
    assert len(pages[-1]) == 7 and pages[-1].cursor is None
    late = Reading.objects.filter(sensor="s1", value__gte=5)
    assert _run(io, lambda: pages.append(io(late, "page", 1))) == ["Query F L2", "Query F L16 ESK"]
    assert [r.seq for r in pages[-1]] == [5] and pages[-1].cursor
    assert _run(io, lambda: pages.append(io(late, "page", 1, pages[-1].cursor))) == ["Query F L2 ESK"]
    assert [r.seq for r in pages[-1]] == [6] and pages[-1].cursor is None
    one = Reading.objects.filter(sensor="s1", year=2020, seq=2)
    assert _run(io, lambda: pages.append(io(one, "page", 5))) == ["GetItem"]
    assert [r.seq for r in pages[-1]] == [2] and pages[-1].cursor is None


# -- values, values_list, in_bulk, collections ------------------------------------------------
def test_values_values_list_in_bulk_and_collections(io: Any) -> None:
    _readings(5)
    qs = Reading.objects.filter(sensor="s1")
    assert _run(io, lambda: io(qs, "values", "seq")) == ["Query P"]
    assert _run(io, lambda: io(qs, "values")) == ["Query"]
    assert _run(io, lambda: io(qs, "values_list", "seq", flat=True)) == ["Query P"]
    keys = [{"sensor": "s1", "year": 2020, "seq": i} for i in (0, 2, 9)]
    assert _run(io, lambda: io(Reading.objects, "in_bulk", keys)) == ["BatchGetItem n3"]
    assert _run(io, lambda: io(Reading.objects.filter(sensor="s1"), "in_bulk")) == ["Query"]
    Customer.objects.create(customer_id="c1", email="e@x")
    Order.objects.create(customer_id="c1")
    assert _run(io, lambda: io(Customer.objects.collection(customer_id="c1"), "grouped")) == ["Query"]
    assert _run(io, lambda: io.list(Customer.objects.collection(customer_id="c1").of(Order))) == ["Query"]


# -- prefetch --------------------------------------------------------------------------------
def test_prefetch_reads_references_per_page(io: Any) -> None:
    Person.objects.bulk_create([Person(person_id=f"e{i}", name=f"E{i}") for i in range(5)])
    Employment.objects.bulk_create([Employment(store_id="s1", person_id=f"e{i}", person=f"e{i}",
                                               role="boss" if i % 2 else "clerk") for i in range(5)])
    def qs() -> Any:
        return Employment.objects.filter(store_id="s1").prefetch("person")

    assert _run(io, lambda: io.list(qs())) == ["Query", "BatchGetItem n5"]
    assert _run(io, lambda: io(qs(), "get", person_id="e2")) == ["GetItem", "BatchGetItem n1"]
    assert _run(io, lambda: io(qs(), "first")) == ["Query L1", "BatchGetItem n1"]
    assert _run(io, lambda: io(qs(), "page", 2)) == ["Query L3", "BatchGetItem n2"]
    bosses = Employment.objects.filter(store_id="s1", role="boss").prefetch("person")[:2]
    shapes = _run(io, lambda: io.list(bosses))
    assert shapes == ["Query F L2", "BatchGetItem n1", "Query F L16 ESK", "BatchGetItem n1"]
    with dynorm.capture() as c:
        assert [j.person_id for j in bosses.iterator()] == ["e1", "e3"]
    assert _shapes(c) == ["Query F L2", "BatchGetItem n1", "Query F L16 ESK", "BatchGetItem n1"]
    assert _run(io, lambda: io(qs(), "count")) == ["Query COUNT F"]


# -- key-version rollout (Meta.read_versions) ---------------------------------------------------
def _put(version: str, gid: str, maker: str = "m", size: int = 1) -> None:
    backend.call("PutItem", {"TableName": PinRollouts.table_name(), "Item": {
        "PK": {"S": f"{version}#G#{gid}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "GADGET"},
        "GSI1PK": {"S": f"M#{maker}"}, "GSI1SK": {"S": f"G#{gid}"},
        "gid": {"S": gid}, "maker": {"S": maker}, "size": {"N": str(size)}}})


def _stage_rollout() -> None:
    _put("v2", "a")   # current only
    _put("v1", "b")   # old only: found through the fallback
    _put("v2", "c")   # both: the current copy shadows the old one
    _put("v1", "c")


def test_rollout_get_falls_back_to_older_key_versions(io: Any) -> None:
    _stage_rollout()
    assert _run(io, lambda: io(Gadget.objects, "get", gid="a")) == ["GetItem @v2"]
    assert _run(io, lambda: io(Gadget.objects, "get", gid="b")) == ["GetItem @v2", "GetItem @v1"]
    assert _run(io, lambda: io(Gadget.objects, "get", gid="c")) == ["GetItem @v2"]

    def missing() -> None:
        with pytest.raises(Gadget.DoesNotExist):
            io(Gadget.objects, "get", gid="zz")

    assert _run(io, missing) == ["GetItem @v2", "GetItem @v1", "GetItem CR @v2"]

    def shadowed() -> None:  # the current item fails the check: it shadows the older copy
        with pytest.raises(Gadget.DoesNotExist):
            io(Gadget.objects, "get", gid="c", size=7)

    assert _run(io, shadowed) == ["GetItem @v2"]
    assert _run(io, lambda: io(Gadget.objects.filter(gid="b"), "count")) == ["GetItem @v2"]


def test_rollout_query_on_one_whole_key_asks_older_versions(io: Any) -> None:
    _stage_rollout()
    old = Gadget.objects.filter(gid="b", size__gte=1)
    assert _run(io, lambda: io.list(old)) == ["Query F @v2", "Query F @v1"]
    assert _run(io, lambda: io(Gadget.objects.filter(gid="b", size__gte=1), "first")) == ["Query F L1 @v2",
                                                                                          "Query F L1 @v1"]
    assert _run(io, lambda: io(Gadget.objects.filter(gid="b", size__gte=1), "count")) == ["Query COUNT F @v2",
                                                                                          "Query COUNT F @v1"]
    assert _run(io, lambda: io(Gadget.objects.filter(gid="a", size__gte=1), "count")) == ["Query COUNT F @v2"]
    assert _run(io, lambda: io.list(Gadget.objects.filter(gid="zz", size__gte=1))) == ["Query F @v2", "Query F @v1"]


def test_rollout_version_blind_index_reads_current_copies(io: Any) -> None:
    _stage_rollout()
    qs = Gadget.objects.filter(maker="m")
    got: list[Any] = []
    # b's only copy is at v1: one BatchGetItem asks whether it exists at v2; c's v2 copy is in the page
    assert _run(io, lambda: got.extend(io.list(qs))) == ["Query I:GSI1", "BatchGetItem n1"]
    assert sorted(g.gid for g in got) == ["a", "b", "c"]
    fresh = Gadget.objects.filter(maker="m")
    assert _run(io, lambda: io(fresh, "count")) == ["Query I:GSI1 P", "BatchGetItem n1"]
    assert _run(io, lambda: io(Gadget.objects.filter(maker="m"), "first")) == ["Query I:GSI1 L1"]
    assert _run(io, lambda: io(Gadget.objects.filter(maker="m"), "page", 2)) == [
        "Query I:GSI1 L3", "BatchGetItem n1"]
