"""Multi-attribute GSIs (issue 13): binary key attributes, ordering by several sort attributes,
the primary key preferred over an index, and copies of one item under two key versions.

Sync and asyncio (the ``io`` fixture) alike: every fix lives in the shared steps.
"""

from __future__ import annotations

from typing import Any

import pytest

import dynorm
from dynorm import Entity, Index, InvalidQuery, ModelError, Table, ValidationError, fields
from dynorm.exceptions import InvalidKeyValue
from tests.integration.test_multi_keys import Film, _seed, ids


class Blobs(Table):
    class Meta:
        table_name = "blobs"
        gsis = {"ByDigest": {"pk": {"owner": "S"}, "sk": {"digest": "B"}}}


class Blob(Entity):
    owner = fields.String()
    blob_id = fields.String()
    digest = fields.Binary(null=True)
    payload = fields.Binary(null=True)

    class Meta:
        table = Blobs
        entity_type = "blob"
        pk = "O#{owner}"
        sk = "B#{blob_id}"
        indexes = {"by_digest": Index("ByDigest", pk=("owner",), sk=("digest",))}


DIGESTS = [b"\x00", b"\x00\x00", b"\x01", b"\x7f", b"\x80", b"\xff", b"\xff\x00", b"a\xe9"]


def _blobs() -> None:
    Blob.objects.bulk_create([Blob(owner="o", blob_id=f"b{i}", digest=d) for i, d in enumerate(DIGESTS)]
                             + [Blob(owner="o", blob_id="none", digest=None, payload=b"")])


def _digests(objs: list[Any]) -> list[bytes]:
    return [o.digest for o in objs]


# -- Binary fields --------------------------------------------------------------------------
def test_a_binary_key_attribute_is_created_as_b_and_items_sort_by_unsigned_bytes(io: Any) -> None:
    desc = Blobs.describe()
    assert desc is not None
    types = {d["AttributeName"]: d["AttributeType"] for d in desc["AttributeDefinitions"]}
    assert types["digest"] == "B" and types["owner"] == "S"
    _blobs()
    # digest__exists=True: a blob without a digest is not wanted, so ByDigest holds every match
    # (the condition is met by every item of the index: it is not sent)
    qs = Blob.objects.filter(owner="o", digest__exists=True).order_by("digest")
    assert qs.explain().index == "ByDigest" and "FilterExpression" not in qs.explain().params
    assert _digests(io.list(qs)) == sorted(DIGESTS)  # unsigned byte order; "none" is not in the index
    assert _digests(io.list(qs.reverse())) == sorted(DIGESTS, reverse=True)
    assert _digests(io.list(qs.filter(digest__gt=b"\x00\x00"))) == [d for d in sorted(DIGESTS) if d > b"\x00\x00"]
    assert _digests(io.list(qs.filter(digest__between=(b"\x01", b"\xff")))) == [
        d for d in sorted(DIGESTS) if b"\x01" <= d <= b"\xff"]
    assert _digests(io.list(qs.filter(digest__lte=bytearray(b"\x7f")))) == [d for d in sorted(DIGESTS)
                                                                             if d <= b"\x7f"]
    assert io(qs.filter(digest=b"\x80"), "get").blob_id == "b4"
    raw = dynorm.backend.call("GetItem", {"TableName": Blobs.table_name(),
                                          "Key": {"PK": {"S": "O#o"}, "SK": {"S": "B#none"}}})["Item"]
    assert raw["payload"] == {"B": b""} and "digest" not in raw  # empty bytes stored outside keys


def test_pages_of_a_binary_sort_attribute_carry_the_bytes_in_the_cursor(io: Any) -> None:
    _blobs()
    qs = Blob.objects.using("by_digest").filter(owner="o").order_by("digest")
    got: list[bytes] = []
    cursor = None
    for _ in range(10):
        page = io(qs, "page", size=3, cursor=cursor)
        got += _digests(page.items)
        cursor = page.cursor
        if cursor is None:
            break
    assert got == sorted(DIGESTS)


def test_bad_binary_values_are_refused_before_any_request() -> None:
    with dynorm.capture() as cap:
        with pytest.raises(ValidationError, match=r"Blob\.digest='ab'.*bytes"):
            Blob.objects.create(owner="o", blob_id="x", digest="ab")
        with pytest.raises(InvalidKeyValue, match=r"Blob\.digest.*ByDigest"):
            Blob.objects.create(owner="o", blob_id="x", digest=b"")
        with pytest.raises(InvalidKeyValue, match=r"Blob\.digest.*1025 bytes"):
            Blob.objects.create(owner="o", blob_id="x", digest=b"\x01" * 1025)
        with pytest.raises(InvalidQuery, match="begins_with"):
            list(Blob.objects.filter(owner="o", digest__begins_with=b"\x00"))
        with pytest.raises(ValidationError, match="digest"):
            list(Blob.objects.filter(owner="o", digest__gt="text"))
    assert cap.requests == []


def test_a_binary_field_in_a_key_template_is_refused_at_class_creation() -> None:
    with pytest.raises(ModelError, match=r"BadBlob\.Meta\.pk.*\{digest\}.*binary"):
        class BadBlob(Entity):
            digest = fields.Binary()

            class Meta:
                table = Blobs
                entity_type = "bad_blob"
                pk = "D#{digest}"
                sk = "X"


# -- order_by on several sort attributes ---------------------------------------------------
def test_order_by_several_sort_attributes_in_their_order(io: Any) -> None:
    _seed()
    qs = Film.objects.using("by_region").filter(tenant_id="t1", region="eu")
    want = ["f4", "f1", "f3", "f2", "f6"]  # (year, title): 10, 1999, (2001, Alpha), (2001, Beta), 2024
    assert ids(io.list(qs.order_by("year", "title"))) == want
    assert ids(io.list(qs.order_by("-year", "-title"))) == want[::-1]
    assert qs.order_by("year", "title").explain().index == "ByRegion"
    assert qs.order_by("-year", "-title").explain().params["ScanIndexForward"] is False
    # a field pinned by an equality is constant over the results: it may stand anywhere
    assert ids(io.list(qs.filter(year=2001).order_by("year", "title"))) == ["f3", "f2"]
    assert ids(io.list(qs.filter(year=2001).order_by("title", "year"))) == ["f3", "f2"]
    assert ids(io.list(qs.order_by("region", "year"))) == want


def test_order_by_several_keys_that_no_access_path_gives_is_refused() -> None:
    qs = Film.objects.filter(tenant_id="t1", region="eu")
    with dynorm.capture() as cap:
        with pytest.raises(InvalidQuery, match=r"order_by\('title', 'year'\) cannot be served"):
            qs.order_by("title", "year").explain()
        with pytest.raises(InvalidQuery, match="one direction"):
            qs.order_by("year", "-title")
        with pytest.raises(InvalidQuery, match="'sk' is the whole sort key"):
            qs.order_by("sk", "year")
        with pytest.raises(InvalidQuery, match="no field"):
            qs.order_by("year", "nope")
        with pytest.raises(InvalidQuery, match="order_by needs a key"):
            qs.order_by()
        with pytest.raises(InvalidQuery, match="cannot be served"):
            list(qs.using("by_year_text").order_by("year", "title"))  # key text orders by year only
    assert cap.requests == []


# -- the primary key beats an index --------------------------------------------------------
def test_the_whole_primary_key_plus_other_equalities_is_one_getitem_with_checks(io: Any) -> None:
    _seed()
    qs = Film.objects.filter(tenant_id="t1", film_id="f2", region="eu", year=2001)
    p = qs.explain()
    assert (p.operation, dict(p.checks)) == ("GetItem", {"region": {"S": "eu"}, "year": {"N": "2001"}})
    assert "Checked on the item read" in str(p)
    with dynorm.capture() as cap:
        assert ids(io.list(qs)) == ["f2"]
        assert ids(io.list(qs.consistent())) == ["f2"]
        assert io(qs, "count") == 1
        assert ids(io.list(Film.objects.filter(tenant_id="t1", film_id="f2", region="us"))) == []
        assert io(Film.objects.filter(tenant_id="t1", film_id="f2", title="Alpha"), "count") == 0
        only = io.list(Film.objects.filter(tenant_id="t1", film_id="f2", region="eu").only("title"))
        assert [(o.film_id, o.title) for o in only] == [("f2", "Beta")]
    assert cap.operations == ["GetItem"] * 5  # count() of an evaluated queryset reads nothing
    assert [r.params.get("ConsistentRead") for r in cap.requests][:2] == [None, True]
    with pytest.raises(InvalidQuery, match="primary-key fields"):
        Film.objects.filter(tenant_id="t1", film_id="f2", region="us").update(rating=1)
    assert Film.objects.get(tenant_id="t1", film_id="f2").rating is None


def test_get_or_create_with_index_fields_reads_the_primary_key(io: Any) -> None:
    _seed()
    with dynorm.capture() as cap:
        obj, created = io(Film.objects, "get_or_create", tenant_id="t1", film_id="f2", region="eu", year=2001)
    assert (obj.title, created, cap.operations) == ("Beta", False, ["GetItem"])
    from dynorm import AlreadyExists

    with dynorm.capture() as cap:
        with pytest.raises(AlreadyExists, match="fields differ from region='us'"):
            io(Film.objects, "get_or_create", tenant_id="t1", film_id="f2", region="us", year=2001)
    assert cap.operations == ["GetItem", "PutItem", "GetItem"]
    assert Film.objects.get(tenant_id="t1", film_id="f2").region == "eu"  # nothing overwritten


# -- copies of one item under two key versions ----------------------------------------------
class Rolls(Table):
    class Meta:
        table_name = "rolls"
        gsis = {"ByMaker": {"pk": {"maker": "S"}, "sk": {"size": "N"}}}


class Roll(Entity):
    roll_id = fields.String()
    maker = fields.String()
    size = fields.Integer(default=0)
    note = fields.String(null=True)

    class Meta:
        table = Rolls
        entity_type = "ROLL"
        key_version = "v3"
        read_versions = ["v3", "v2"]
        pk = "{version}#R#{roll_id}"
        sk = "METADATA"
        indexes = {"by_maker": Index("ByMaker", pk=("maker",), sk=("size",))}


def _put(version: str, roll_id: str, size: int, note: str) -> None:
    dynorm.backend.call("PutItem", {"TableName": Rolls.table_name(), "Item": {
        "PK": {"S": f"{version}#R#{roll_id}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
        "roll_id": {"S": roll_id}, "maker": {"S": "m"}, "size": {"N": str(size)}, "note": {"S": note}}})


def test_copies_under_several_key_versions_are_read_once_as_get_would(io: Any) -> None:
    # r1: current (v3) and older (v2) copies, r2: only at v2, r3: only at v1 (a version this app
    # does not read), r4: v3 copy and v1 copy
    _put("v3", "r1", 1, "current")
    _put("v2", "r1", 1, "old")
    _put("v2", "r2", 2, "old")
    _put("v1", "r3", 3, "ancient")
    _put("v3", "r4", 4, "current")
    _put("v1", "r4", 4, "ancient")
    qs = Roll.objects.filter(maker="m")
    with dynorm.capture() as cap:
        got = io.list(qs)
    assert [(r.roll_id, r.note, r._state.fallback) for r in got] == [
        ("r1", "current", None), ("r2", "old", "v2"), ("r4", "current", None)]
    assert cap.operations == ["Query", "BatchGetItem"]  # one BatchGetItem for the page's older copies
    assert io(qs, "count") == 3
    assert io(qs.filter(size__gte=2), "count") == 2
    assert [r.roll_id for r in io.list(Roll.objects.filter(maker="m")[:2])] == ["r1", "r2"]
    page = io(qs, "page", size=1)
    assert [r.roll_id for r in page.items] == ["r1"]
    page = io(qs, "page", size=1, cursor=page.cursor)
    assert [r.roll_id for r in page.items] == ["r2"]
    # the one read at v2 moves to v3 on its first write
    r2 = got[1]
    r2.note = "moved"
    io(r2, "save")
    keys = sorted(i["PK"]["S"] for i in dynorm.backend.call("Scan", {"TableName": Rolls.table_name()})["Items"])
    assert keys == ["v1#R#r3", "v1#R#r4", "v2#R#r1", "v3#R#r1", "v3#R#r2", "v3#R#r4"]
    assert [(r.roll_id, r.note) for r in io.list(qs)] == [("r1", "current"), ("r2", "moved"), ("r4", "current")]


def test_queryset_delete_removes_each_item_under_the_key_it_was_read_at() -> None:
    _put("v2", "r1", 1, "old")
    _put("v3", "r2", 2, "current")
    _put("v1", "r3", 3, "ancient")
    assert Roll.objects.filter(maker="m").delete() == 2
    keys = sorted(i["PK"]["S"] for i in dynorm.backend.call("Scan", {"TableName": Rolls.table_name()})["Items"])
    assert keys == ["v1#R#r3"]  # a copy at a version this app does not read is not its to delete
