"""The planner never silently leaves matching items out by choosing a sparse index.

DynamoDB indexes an item only when it holds every key attribute of the index. An index is chosen
automatically only when the conditions or the fields' declarations guarantee those attributes;
otherwise the table serves the query (its partition given), or InvalidQuery is raised before any
request. ``using()`` reads an index knowingly. Template GSI, multi-attribute GSI, LSI on an
attribute and LSI with a template, through every read path, sync and asyncio.
"""

from __future__ import annotations

from typing import Any

import pytest

import dynorm
from dynorm import Entity, Index, InvalidQuery, Q, Table, fields


class Tracks(Table):
    class Meta:
        table_name = "sparse_tracks"
        gsis = {
            "GSI1": ("GSI1PK", "GSI1SK"),
            "ByLabel": {"pk": {"label": "S"}, "sk": {"year": "N", "title": "S"}},
        }
        lsis = {"LSI1": "rank", "LSI2": "LSI2SK"}


class Track(Entity):
    album_id = fields.String()
    track_id = fields.String()
    label = fields.String()                 # never missing: not null=True
    genre = fields.String(null=True)
    year = fields.Integer(null=True)
    title = fields.String(null=True)
    rank = fields.Integer(null=True)
    note = fields.String(null=True)

    class Meta:
        table = Tracks
        entity_type = "track"
        pk = "A#{album_id}"
        sk = "T#{track_id}"
        indexes = {
            "by_genre": Index("GSI1", pk="G#{genre}", sk="Y#{year}#T#{title}"),      # template GSI
            "by_label": Index("ByLabel", pk=("label",), sk=("year", "title")),     # multi-attribute GSI
            "by_rank": Index("LSI1"),                                              # LSI on an attribute
            "by_year": Index("LSI2", sk="Y#{year}"),                               # LSI with a template
        }


def _seed() -> None:
    Track.objects.create(album_id="a", track_id="1", label="L", genre="rock", year=2001, title="Intro", rank=2)
    Track.objects.create(album_id="a", track_id="2", label="L", genre="rock", year=2001)   # no title, no rank
    Track.objects.create(album_id="a", track_id="3", label="L", genre="rock", title="Coda", rank=1)  # no year
    Track.objects.create(album_id="b", track_id="9", label="L", genre="rock", year=2001, title="B-side", rank=5)


def tids(objs: Any) -> list[str]:
    return [o.track_id if isinstance(o, Track) else o["track_id"] for o in objs]


def _refused(call: Any, index: str, *names: str) -> None:
    """``call()`` raises InvalidQuery naming the entity, the index, the fields and the remedies; no request."""
    with dynorm.capture() as cap:
        with pytest.raises(InvalidQuery) as info:
            call()
    assert cap.requests == []
    text = str(info.value)
    assert "Track" in text and index in text and "may leave matching items out" in text, text
    assert ".using(" in text and "__exists=True" in text, text
    for n in names:
        assert n in text, text


def test_the_raw_table_shows_which_items_each_index_holds() -> None:
    _seed()
    def keys(index: str) -> list[str]:
        items = dynorm.backend.call("Scan", {"TableName": Tracks.table_name(), "IndexName": index})["Items"]
        return sorted(i["SK"]["S"] for i in items)
    assert keys("GSI1") == ["T#1", "T#9"]           # track 2 has no title, track 3 no year
    assert keys("ByLabel") == ["T#1", "T#9"]
    assert keys("LSI1") == ["T#1", "T#3", "T#9"]    # track 2 has no rank
    assert keys("LSI2") == ["T#1", "T#2", "T#9"]    # track 3 has no year


# -- template GSI ------------------------------------------------------------------------------
def test_template_gsi_with_an_unasked_nullable_field_is_refused_before_any_request() -> None:
    _seed()
    qs = Track.objects.filter(genre="rock", year=2001)
    _refused(qs.explain, "GSI1", "title", "using('by_genre')", "title__exists=True", "album_id")
    _refused(lambda: list(qs), "GSI1", "title")
    # ne is true on a missing attribute: it does not ask for a title
    _refused(lambda: list(qs.filter(title__ne="x")), "GSI1", "title")
    # an OR asks for title only when every branch does
    _refused(lambda: list(qs.filter(Q(title="Intro") | Q(rank=1))), "GSI1", "title")
    assert tids(qs.filter(Q(title="Intro") | Q(title="B-side"))) == ["9", "1"] or \
        sorted(tids(qs.filter(Q(title="Intro") | Q(title="B-side")))) == ["1", "9"]
    # both fields missing: both named
    _refused(lambda: Track.objects.filter(genre="rock").count(), "GSI1", "year, title")


def test_template_gsi_serves_once_the_conditions_ask_for_every_key_field() -> None:
    _seed()
    with dynorm.capture() as cap:
        got = tids(Track.objects.filter(genre="rock", year=2001, title__exists=True))
    assert sorted(got) == ["1", "9"]
    assert [(r.operation, r.params.get("IndexName")) for r in cap.requests] == [("Query", "GSI1")]
    assert tids(Track.objects.filter(genre="rock", year=2001, title__gte="B")) == ["9", "1"]  # B-side, Intro
    assert Track.objects.filter(genre="rock", year__gte=2000, title__begins_with="I").explain().index == "GSI1"
    # exclude(title__exists=False) asks for a title too (NOT attribute_not_exists)
    qs = Track.objects.filter(genre="rock", year=2001).exclude(title__exists=False)
    assert qs.explain().index == "GSI1" and sorted(tids(qs)) == ["1", "9"]


def test_template_gsi_falls_back_to_the_table_when_its_partition_is_given() -> None:
    _seed()
    qs = Track.objects.filter(album_id="a", genre="rock")
    with dynorm.capture() as cap:
        assert tids(qs) == ["1", "2", "3"]      # track 2 (no title) and 3 (no year) are returned
    assert len(cap.requests) == 1 and cap.requests[0].operation == "Query"
    assert "IndexName" not in cap.requests[0].params
    assert qs.explain().params == cap.requests[0].params   # explain() shows the same choice
    # year asked for: LSI2 (sort key Y#{year}) holds every match, and is the more selective path
    qs = Track.objects.filter(album_id="a", genre="rock", year=2001)
    assert qs.explain().index == "LSI2" and sorted(tids(qs)) == ["1", "2"]


def test_using_reads_only_the_items_in_the_index_knowingly() -> None:
    _seed()
    qs = Track.objects.using("by_genre").filter(genre="rock", year=2001)
    with dynorm.capture() as cap:
        assert sorted(tids(qs)) == ["1", "9"]   # track 2 is not in GSI1: left out, as asked
    assert cap.requests[0].params["IndexName"] == "GSI1"
    assert qs.count() == 2


# -- multi-attribute GSI -----------------------------------------------------------------------
def test_multi_attribute_gsi_needs_every_attribute_guaranteed() -> None:
    _seed()
    _refused(lambda: list(Track.objects.filter(label="L", year=2001)), "ByLabel", "title", "using('by_label')")
    _refused(lambda: list(Track.objects.filter(label="L")), "ByLabel", "year, title")
    # label can never be missing (not null=True): year and title asked for is enough
    qs = Track.objects.filter(label="L", year=2001, title="Intro")
    assert qs.explain().index == "ByLabel" and tids(qs) == ["1"]
    # exists=True on one of its own key attributes: every item of the index meets it, nothing more sent
    qs = Track.objects.filter(label="L", year=2001, title__exists=True)
    p = qs.explain()
    assert p.index == "ByLabel" and p.filter is None
    assert tids(qs) == ["9", "1"]               # (2001, "B-side") < (2001, "Intro")
    # the table, when its partition is given
    with dynorm.capture() as cap:
        assert sorted(tids(Track.objects.filter(album_id="a", label="L", year=2001))) == ["1", "2"]
    assert cap.requests[0].params["IndexName"] == "LSI2"      # holds every track with a year
    with dynorm.capture() as cap:
        assert tids(Track.objects.filter(album_id="a", label="L")) == ["1", "2", "3"]
    assert "IndexName" not in cap.requests[0].params
    assert tids(Track.objects.using("by_label").filter(label="L", year=2001)) == ["9", "1"]


# -- LSIs -------------------------------------------------------------------------------------
def test_lsi_on_an_attribute_orders_only_when_the_attribute_is_asked_for() -> None:
    _seed()
    qs = Track.objects.filter(album_id="a")
    assert tids(qs) == ["1", "2", "3"] and qs.explain().index is None
    _refused(lambda: list(qs.order_by("rank")), "LSI1", "rank", "sort the results yourself")
    ranked = qs.filter(rank__exists=True).order_by("rank")
    p = ranked.explain()
    assert p.index == "LSI1" and p.filter is None   # every item of LSI1 has a rank: nothing more sent
    assert tids(ranked) == ["3", "1"]
    assert tids(qs.filter(rank__gte=0)) == ["3", "1"]
    assert tids(qs.using("by_rank").order_by("-rank")) == ["1", "3"]


def test_lsi_with_a_template_sort_key() -> None:
    _seed()
    qs = Track.objects.filter(album_id="a")
    assert qs.filter(year__gte=2000).explain().index == "LSI2"
    assert sorted(tids(qs.filter(year__gte=2000))) == ["1", "2"]
    assert sorted(tids(qs.filter(year__exists=True))) == ["1", "2"]
    assert sorted(tids(qs.using("by_year"))) == ["1", "2"]
    # year not asked for: LSI2 is not chosen (track 3 has no year), the table is
    assert qs.filter(rank__lte=5, note__exists=False).explain().index != "LSI2"


# -- every read path -------------------------------------------------------------------------
REFUSED = {"genre": "rock"}                        # only GSI1 could serve; year and title unasked
FALLBACK = {"album_id": "a", "genre": "rock"}      # the table serves; track 2 has no title, 3 no year


def test_every_read_path_refuses_or_returns_the_item_without_the_attribute(io: Any) -> None:
    _seed()
    bad = Track.objects.filter(**REFUSED)
    ok = Track.objects.filter(**FALLBACK)
    paths: list[tuple[str, Any, Any]] = [
        ("list", lambda q: io.list(q), lambda r: sorted(tids(r)) == ["1", "2", "3"]),
        ("count", lambda q: io(q, "count"), lambda r: r == 3),
        ("exists", lambda q: io(q.filter(title__exists=False), "exists"), lambda r: r is True),
        ("first", lambda q: io(q.filter(title__exists=False), "first"), lambda r: r.track_id == "2"),
        ("last", lambda q: io(q.filter(title__exists=False), "last"), lambda r: r.track_id == "2"),
        ("get", lambda q: io(q.filter(title__exists=False), "get"), lambda r: r.track_id == "2"),
        ("values", lambda q: io(q, "values", "track_id"), lambda r: sorted(tids(r)) == ["1", "2", "3"]),
        ("values_list", lambda q: io(q, "values_list", "track_id", flat=True), lambda r: sorted(r) == ["1", "2", "3"]),
        ("page", lambda q: io(q, "page", size=5), lambda r: sorted(tids(r.items)) == ["1", "2", "3"]),
        ("in_bulk", lambda q: io(q, "in_bulk"), lambda r: sorted(k[1] for k in r) == ["1", "2", "3"]),
        ("latest", lambda q: io(q.filter(title__exists=False), "latest", "track_id"),
         lambda r: r.track_id == "2"),
        ("slice", lambda q: list(q[:5]), lambda r: sorted(tids(r)) == ["1", "2", "3"]),
    ]
    for name, call, check in paths:
        _refused(lambda call=call: call(bad), "GSI1", "year, title")
        with dynorm.capture() as cap:
            got = call(ok)
        assert check(got), (name, got)
        assert all("IndexName" not in r.params for r in cap.requests), name


def test_delete_reads_every_match_first(io: Any) -> None:
    _seed()
    _refused(lambda: io(Track.objects.filter(**REFUSED), "delete"), "GSI1", "year, title")
    _refused(lambda: io(Track.objects.filter(genre="rock", year=2001), "delete"), "GSI1", "title")
    raw = dynorm.backend.call("Scan", {"TableName": Tracks.table_name()})["Items"]
    assert len(raw) == 4                                        # refused: nothing deleted
    assert io(Track.objects.filter(**FALLBACK), "delete") == 3  # tracks without a title or year too
    raw = dynorm.backend.call("Scan", {"TableName": Tracks.table_name()})["Items"]
    assert [i["SK"]["S"] for i in raw] == ["T#9"]


def test_explain_count_matches_what_count_sends() -> None:
    _seed()
    qs = Track.objects.filter(**FALLBACK)
    with dynorm.capture() as cap:
        assert qs.count() == 3
    assert cap.requests[0].params == qs.explain(count=True).params
    _refused(lambda: Track.objects.filter(**REFUSED).explain(count=True), "GSI1", "year, title")


def test_a_named_access_pattern_picks_its_index_by_the_same_rule() -> None:
    class TrackQuerySet(dynorm.QuerySet):  # type: ignore[type-arg]
        def of_genre_year(self, genre: str, year: int) -> Any:
            """tracks of a genre in a year"""
            return self.filter(genre=genre, year=year)

    _seed()
    qs = TrackQuerySet(Track).of_genre_year("rock", 2001)
    _refused(lambda: list(qs), "GSI1", "title")
    assert sorted(tids(qs.filter(title__exists=True))) == ["1", "9"]


# -- a non-null field added later (two app versions): older items lack it ---------------------------
class LateScoresV1(Table):
    class Meta:
        table_name = "sparse_late_scores"


class LateScoredV1(Entity):
    """What the application stored before it had ``score`` (and the index on it)."""

    owner = fields.String()
    vid = fields.String()
    grp = fields.String()

    class Meta:
        table = LateScoresV1
        entity_type = "late_scored"
        pk = "O#{owner}"
        sk = "V#{vid}"


class LateScores(Table):
    class Meta:
        table_name = "sparse_late_scores"
        gsis = {"ByGrp": {"pk": {"grp": "S"}, "sk": {"score": "N"}}}


class LateScored(Entity):
    """v2: ``score`` added, not null=True (with a default), and a multi-attribute GSI over it
    (docs/modelling.md: DynamoDB backfills it from the attributes items already hold)."""

    owner = fields.String()
    vid = fields.String()
    grp = fields.String()
    score = fields.Integer(default=0)

    class Meta:
        table = LateScores
        entity_type = "late_scored"
        pk = "O#{owner}"
        sk = "V#{vid}"
        indexes = {"by_grp": Index("ByGrp", pk=("grp",), sk=("score",))}


@pytest.mark.xfail(strict=True, reason="open (issue note, session 4): the sparse-index rule trusts field declarations; "
                   "items written before a non-null field existed lack it and are not in an index on it. Needs a "
                   "backfill migration for added fields, or indexes on non-key fields treated as sparse")
def test_index_on_a_non_null_field_added_later_never_leaves_older_items_out() -> None:
    """An item stored before ``score`` existed has no ``score`` attribute, so it is not in ByGrp.
    get() and the table's partition read it (score = the default); a query the planner sends to
    ByGrp on its own must not silently leave it out: every match, or InvalidQuery before any request."""
    LateScoredV1.objects.create(owner="o", vid="old", grp="g")          # the v1 application
    LateScored.objects.create(owner="o", vid="new", grp="g", score=1)   # the v2 application
    assert LateScored.objects.get(owner="o", vid="old").vid == "old"    # v2 reads the old item
    table_path = sorted(x.vid for x in LateScored.objects.filter(owner="o", grp="g"))
    assert table_path == ["new", "old"]
    with dynorm.capture() as cap:
        try:
            got: Any = sorted(x.vid for x in LateScored.objects.filter(grp="g"))
        except InvalidQuery:
            got = "refused"
    if got == "refused":
        assert cap.requests == []
    else:  # on the buggy code: ['new'] (the planner chose ByGrp, which does not hold 'old')
        assert got == ["new", "old"]
    with dynorm.capture() as cap:
        try:
            n: Any = LateScored.objects.filter(grp="g").count()
        except InvalidQuery:
            n = "refused"
    assert n in (2, "refused") and (n != "refused" or cap.requests == [])
