"""Issue 13: multi-attribute GSI keys on DynamoDB Local.

Declaration, creation (several HASH and RANGE elements), every planner case, sparse absence,
cursors, and bad declarations or values refused before any request.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

import dynorm
from dynorm import Entity, Index, InvalidQuery, ModelError, Table, fields
from dynorm.exceptions import InvalidKeyValue


class Regions(Table):
    class Meta:
        table_name = "regions"
        gsis = {
            "GSI1": ("GSI1PK", "GSI1SK"),
            "ByRegion": {"pk": {"tenant_id": "S", "region": "S"}, "sk": {"year": "N", "title": "S"}},
        }


class Film(Entity):
    tenant_id = fields.String()
    film_id = fields.String()
    region = fields.String(null=True)
    year = fields.Integer(null=True)
    title = fields.String(null=True)
    rating = fields.Number(null=True)

    class Meta:
        table = Regions
        entity_type = "film"
        pk = "T#{tenant_id}"
        sk = "F#{film_id}"
        indexes = {
            "by_region": Index("ByRegion", pk=("tenant_id", "region"), sk=("year", "title"),
                               comment="a tenant's films of a region by year, then title"),
            "by_year_text": Index("GSI1", pk="T#{tenant_id}#R#{region}", sk="Y#{year}#{title}"),
        }


class Note(Entity):
    """Another entity type of the table; it stores no region, so it is never in ByRegion."""

    tenant_id = fields.String()
    note_id = fields.String()
    body = fields.String()

    class Meta:
        table = Regions
        entity_type = "note"
        pk = "T#{tenant_id}"
        sk = "N#{note_id}"


FILMS = [
    ("f1", "eu", 1999, "Alpha"), ("f2", "eu", 2001, "Beta"), ("f3", "eu", 2001, "Alpha"),
    ("f4", "eu", 10, "Old"), ("f5", "us", 2001, "Gamma"), ("f6", "eu", 2024, "Zeta"),
]


def _seed() -> None:
    for fid, region, year, title in FILMS:
        Film.objects.create(tenant_id="t1", film_id=fid, region=region, year=year, title=title)
    Film.objects.create(tenant_id="t2", film_id="x", region="eu", year=2001, title="Other tenant")
    Film.objects.create(tenant_id="t1", film_id="sparse", region="eu", year=None, title="No year")
    Note.objects.create(tenant_id="t1", note_id="n", body="hello")


def ids(qs: object) -> list[str]:
    return [f.film_id for f in qs]  # type: ignore[attr-defined]


def test_create_table_writes_several_hash_and_range_elements() -> None:
    desc = Regions.describe()
    assert desc is not None
    gsi = next(g for g in desc["GlobalSecondaryIndexes"] if g["IndexName"] == "ByRegion")
    assert [(k["AttributeName"], k["KeyType"]) for k in gsi["KeySchema"]] == [
        ("tenant_id", "HASH"), ("region", "HASH"), ("year", "RANGE"), ("title", "RANGE")]
    defs = {d["AttributeName"]: d["AttributeType"] for d in desc["AttributeDefinitions"]}
    assert defs["year"] == "N" and defs["tenant_id"] == "S" and defs["title"] == "S"
    assert Regions.sync(dry_run=True) == []  # up to date: nothing to add


def test_items_hold_plain_typed_attributes_and_absence_keeps_them_out() -> None:
    _seed()
    raw = dynorm.backend.call("GetItem", {"TableName": Regions.table_name(),
                                          "Key": {"PK": {"S": "T#t1"}, "SK": {"S": "F#f1"}}})["Item"]
    assert raw["year"] == {"N": "1999"} and raw["region"] == {"S": "eu"}
    scanned = dynorm.backend.call("Scan", {"TableName": Regions.table_name(), "IndexName": "ByRegion"})["Items"]
    assert sorted(i["SK"]["S"] for i in scanned) == sorted(
        ["F#f1", "F#f2", "F#f3", "F#f4", "F#f5", "F#f6", "F#x"])  # no year: not in the index; no note


def test_partition_equality_orders_by_number_then_title() -> None:
    _seed()
    # using(): the items in ByRegion only, knowingly (film "sparse" has no year: not in it)
    by_region = Film.objects.using("by_region")
    with dynorm.capture() as cap:
        assert ids(by_region.filter(tenant_id="t1", region="eu")) == ["f4", "f1", "f3", "f2", "f6"]
    assert [r.operation for r in cap.requests] == ["Query"]
    params = cap.requests[0].params
    assert params["IndexName"] == "ByRegion"
    assert "FilterExpression" not in params  # a note stores no region: no type filter needed
    assert ids(by_region.filter(tenant_id="t1", region="eu").reverse()) == ["f6", "f2", "f3", "f1", "f4"]
    # chosen automatically, ByRegion could leave "sparse" out: the table's partition serves it
    with dynorm.capture() as cap:
        assert ids(Film.objects.filter(tenant_id="t1", region="eu")) == ["f1", "f2", "f3", "f4", "f6", "sparse"]
    assert [(r.operation, r.params.get("IndexName")) for r in cap.requests] == [("Query", None)]


def test_sort_prefix_and_range_on_the_next_attribute() -> None:
    _seed()
    qs = Film.objects.using("by_region").filter(tenant_id="t1", region="eu")
    assert ids(qs.filter(year=2001)) == ["f3", "f2"]
    assert ids(qs.filter(year=2001, title="Beta")) == ["f2"]
    assert ids(qs.filter(year__gt=1999)) == ["f3", "f2", "f6"]
    assert ids(qs.filter(year__gte=1999)) == ["f1", "f3", "f2", "f6"]
    assert ids(qs.filter(year__lt=2001)) == ["f4", "f1"]
    assert ids(qs.filter(year__lte=2001)) == ["f4", "f1", "f3", "f2"]
    assert ids(qs.filter(year__between=(11, 2001))) == ["f1", "f3", "f2"]
    assert ids(qs.filter(year=2001, title__begins_with="B")) == ["f2"]
    assert ids(qs.filter(year=2001, title__gt="Alpha")) == ["f2"]
    # the empty string is never stored in a key: no condition for begins_with/gt/gte, refused for lt/lte/=
    assert ids(qs.filter(year=2001, title__begins_with="")) == ["f3", "f2"]
    assert ids(qs.filter(year=2001, title__gte="")) == ["f3", "f2"]
    assert ids(qs.filter(year=2001, title__between=("", "Alpha"))) == ["f3"]
    for bad in ({"title__lt": ""}, {"title__between": ("", "")}):
        with pytest.raises(InvalidQuery, match="refused before any request"):
            qs.filter(year=2001, **bad).explain()
    with pytest.raises((InvalidQuery, InvalidKeyValue), match="empty"):
        qs.filter(year=2001, title="").explain()  # (the template index GSI1 says so first)
    p = qs.filter(year__gt=1999).explain()
    assert p.readable(p.key_condition) == 'tenant_id = "t1" AND region = "eu" AND year > 1999'
    assert p.index == "ByRegion" and p.access_path == "by_region"
    text = str(qs.filter(year=2001, title__begins_with="B").explain())
    assert "index ByRegion" in text and 'begins_with(title, "B")' in text


def test_non_key_filters_stay_filters_and_results_are_exact() -> None:
    _seed()
    Film.objects.filter(tenant_id="t1", film_id="f2").update(rating=Decimal("4.5"))
    qs = Film.objects.using("by_region").filter(tenant_id="t1", region="eu", rating__gt=4)
    assert ids(qs) == ["f2"]
    assert qs.explain().index == "ByRegion"
    assert ids(Film.objects.filter(tenant_id="t1", region="eu", rating__gt=4)) == ["f2"]  # the table


def test_order_by_validation() -> None:
    qs = Film.objects.using("by_region").filter(tenant_id="t1", region="eu")
    assert qs.order_by("year").explain().index == "ByRegion"
    assert qs.order_by("-year").explain().params["ScanIndexForward"] is False
    assert qs.filter(year=2001).order_by("title").explain().index == "ByRegion"
    with pytest.raises(InvalidQuery, match="title"):
        qs.order_by("title").explain()


def test_begins_with_on_a_number_and_filters_on_key_attributes_are_refused() -> None:
    qs = Film.objects.using("by_region").filter(tenant_id="t1", region="eu")
    with pytest.raises(InvalidQuery, match="begins_with"):
        qs.filter(year__begins_with="19").explain()
    with dynorm.capture() as cap:
        with pytest.raises(InvalidQuery, match="title"):
            list(Film.objects.filter(tenant_id="t1", region="eu", title="Alpha").using("by_region"))
        with pytest.raises(InvalidQuery, match="year__between"):
            list(qs.filter(year__between=(2001, 1999)))
    assert cap.requests == []


def test_template_index_is_still_chosen_when_the_multi_index_cannot_take_the_conditions() -> None:
    _seed()
    # title without year: ByRegion cannot take title (no filter on its key attributes); the
    # template index can (title is a filter on the plain attribute there), once year__exists
    # says that items without a year are not wanted (else neither index holds every match)
    qs = Film.objects.filter(tenant_id="t1", region="eu", title="Alpha", year__exists=True)
    assert qs.explain().index == "GSI1"
    assert ids(qs) == ["f1", "f3"]


def test_cursors_page_through_a_multi_attribute_index() -> None:
    _seed()
    qs = Film.objects.using("by_region").filter(tenant_id="t1", region="eu")
    seen: list[str] = []
    cursor = None
    while True:
        page = qs.page(size=2, cursor=cursor)
        seen += [f.film_id for f in page.items]
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == ["f4", "f1", "f3", "f2", "f6"]


def test_count_and_first() -> None:
    _seed()
    qs = Film.objects.filter(tenant_id="t1", region="eu", year__gte=2001)
    assert qs.count() == 3
    assert qs.explain().index is None  # a film without a title could match: not ByRegion
    first = qs.first()
    assert first is not None and first.film_id == "f2"  # the table's order
    first = qs.using("by_region").first()
    assert first is not None and first.film_id == "f3"
    assert qs.using("by_region").count() == 3


def test_empty_key_value_refused_before_any_request() -> None:
    f = Film.objects.create(tenant_id="t1", film_id="ok", region="eu", year=1, title="x")
    with dynorm.capture() as cap:
        with pytest.raises(InvalidKeyValue, match="region"):
            Film.objects.create(tenant_id="t1", film_id="e", region="", year=1, title="x")
        with pytest.raises(InvalidKeyValue, match="title"):
            Film.objects.bulk_create([Film(tenant_id="t1", film_id="e2", region="eu", year=1, title="")])
        f.title = ""
        with pytest.raises(InvalidKeyValue, match="title"):
            f.save(update_fields=["title"])
        with pytest.raises(InvalidKeyValue, match="GSI ByRegion"):
            Film.objects.filter(tenant_id="t1", film_id="ok").update(region="")
    assert cap.requests == []
    assert Film.objects.get(tenant_id="t1", film_id="ok").title == "x"


def test_removing_a_key_field_takes_the_item_out_of_the_index() -> None:
    _seed()
    f = Film.objects.get(tenant_id="t1", film_id="f2")
    f.year = None
    f.save()
    assert ids(Film.objects.using("by_region").filter(tenant_id="t1", region="eu")) == ["f4", "f1", "f3", "f6"]
    assert "f2" in ids(Film.objects.filter(tenant_id="t1", region="eu"))  # not lost: the table holds it
    raw = dynorm.backend.call("GetItem", {"TableName": Regions.table_name(),
                                          "Key": {"PK": {"S": "T#t1"}, "SK": {"S": "F#f2"}}})["Item"]
    assert "year" not in raw and "GSI1PK" not in raw  # absent: out of both indexes
    f.year = 1500
    f.save()
    assert ids(Film.objects.using("by_region").filter(tenant_id="t1", region="eu", year__lt=1999)) == ["f4", "f2"]
    assert ids(Film.objects.filter(tenant_id="t1", region="eu", year__lt=1999)) == ["f2", "f4"]


def test_declarations_are_validated() -> None:
    with pytest.raises(ModelError, match="'S', 'N' or 'B'"):
        class Bad1(Table):
            class Meta:
                table_name = "bad1"
                gsis = {"X": {"pk": {"a": "BOOL"}}}
    with pytest.raises(ModelError, match="1 to 4"):
        class Bad2(Table):
            class Meta:
                table_name = "bad2"
                gsis = {"X": {"pk": {"a": "S", "b": "S", "c": "S", "d": "S", "e": "S"}}}
    with pytest.raises(ModelError, match="0 to 4"):
        class Bad3(Table):
            class Meta:
                table_name = "bad3"
                gsis = {"X": {"pk": {"a": "S"}, "sk": {"b": "S", "c": "S", "d": "S", "e": "S", "f": "S"}}}
    with pytest.raises(ModelError, match="stored as type S"):
        class BadEntity(Entity):
            tenant_id = fields.String()
            region = fields.String()
            year = fields.String()
            title = fields.String()

            class Meta:
                table = Regions
                entity_type = "bad_entity"
                pk = "B#{tenant_id}"
                sk = "B#{title}"
                indexes = {"r": Index("ByRegion", pk=("tenant_id", "region"), sk=("year", "title"))}
    with pytest.raises(ModelError, match="in this order"):
        class BadOrder(Entity):
            tenant_id = fields.String()
            region = fields.String()

            class Meta:
                table = Regions
                entity_type = "bad_order"
                pk = "B#{tenant_id}"
                sk = "B#{region}"
                indexes = {"r": Index("ByRegion", pk=("region", "tenant_id"))}


def test_check_reports_an_entity_storing_a_key_attribute_with_another_type() -> None:
    class Clash(Table):
        class Meta:
            table_name = "clash"
            gsis = {"ByYear": {"pk": {"kind": "S"}, "sk": {"year": "N"}}}

    class A(Entity):
        kind = fields.String()
        year = fields.Integer()
        a_id = fields.String()

        class Meta:
            table = Clash
            entity_type = "a"
            pk = "A#{a_id}"
            sk = "A"
            indexes = {"by_year": Index("ByYear", pk=("kind",), sk=("year",))}

    class B(Entity):
        b_id = fields.String()
        year = fields.String()

        class Meta:
            table = Clash
            entity_type = "b"
            pk = "B#{b_id}"
            sk = "B"

    problems = Clash.check()
    assert len(problems) == 1 and "B(b).year" in problems[0] and "ByYear" in problems[0]


def test_library_demo_category_index_is_multi_attribute() -> None:
    from demo_project.library import load as library_load
    from demo_project.library.models import Article, Library
    from dynorm.patterns import build_document, render

    ids = library_load.load()
    cat = ids["category"]
    with dynorm.capture() as cap:
        arts = list(Article.objects.in_category(cat))
    assert cap.operations == ["Query"] and cap.requests[0].params["IndexName"] == "ByCategory"
    assert arts and all(a.category == cat for a in arts)
    assert [a.year for a in arts] == sorted(a.year for a in arts)
    raw = dynorm.backend.call("Scan", {"TableName": Library.table_name()})["Items"]
    assert not any("GSI1PK" in i or "GSI1SK" in i for i in raw)  # no key text written for the index
    doc = render(build_document([Library]), "markdown")
    assert "multi-attribute GSI on category HASH, year RANGE" in doc
    assert "IndexName" not in doc or "ByCategory" in doc


def test_scan_required_and_using_name_the_multi_attribute_path() -> None:
    from dynorm import ScanRequired

    shown = r"by_region \(ByRegion: partition tenant_id \+ region, sort year \+ title\)"
    with pytest.raises(ScanRequired, match=shown):
        Film.objects.filter(year=3).explain()
    with pytest.raises(InvalidQuery, match="region"):
        Film.objects.filter(tenant_id="t1").using("by_region").explain()
