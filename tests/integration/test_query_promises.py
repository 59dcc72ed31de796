"""Issue 11: queries return exactly what they promise (sections 2, 3 and 5).

Each test here fails on the code before the one result pipeline: silent wrong orders,
defaults shown for fields not read, counts of other entity types, invalid requests,
prefetch ignored, contradictions that write another item, LSI ranges DynamoDB rejects,
one request per filtered-out item, and a cursor after the last item.
"""

from __future__ import annotations

import datetime as dt
import pickle
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dynorm
from dynorm import Entity, Index, Q, Table, backend, fields
from tests.models import Employment, Order, Person
from tests.tiers import examples


class Board(Table):
    class Meta:
        table_name = "q11-board"
        gsi_count = 1
        lsis = {"LSI1": "score", "LSI2": "label"}


class Task(Entity):
    project_id = fields.String()
    task_id = fields.String()
    status = fields.String(default="OPEN")
    priority = fields.Integer(default=3)
    score = fields.Integer(default=0)
    title = fields.String(null=True)

    class Meta:
        table = Board
        entity_type = "TASK"
        pk = "{version}#P#{project_id}"
        sk = "T#{task_id}"
        indexes = {"by_score": Index("LSI1"),
                   "by_status": Index("GSI1", pk="{version}#S#{project_id}#{status}", sk="{priority:03d}#{task_id}")}


class Note(Entity):
    """Shares the tasks' partitions; its sort key starts with a placeholder."""

    project_id = fields.String()
    note_id = fields.String()
    text = fields.String(default="")

    class Meta:
        table = Board
        entity_type = "NOTE"
        pk = "{version}#P#{project_id}"
        sk = "{note_id}"


class Part(Entity):
    machine = fields.String()
    part = fields.String()
    qty = fields.Integer(default=0)

    class Meta:
        table = Board
        entity_type = "PART"
        pk = "{version}#M#{machine}"
        sk = "PART#{part}"


class Wide(Entity):
    """Twelve fields: only() on all of them needs more than ten name placeholders."""

    wide_id = fields.String()
    f0 = fields.String(default="x")
    f1 = fields.String(default="x")
    f2 = fields.String(default="x")
    f3 = fields.String(default="x")
    f4 = fields.String(default="x")
    f5 = fields.String(default="x")
    f6 = fields.String(default="x")
    f7 = fields.String(default="x")
    f8 = fields.String(default="x")
    f9 = fields.String(default="x")
    f10 = fields.String(default="x")
    f11 = fields.String(default="x")

    class Meta:
        table = Board
        entity_type = "WIDE"
        pk = "{version}#W#{wide_id}"
        sk = "W#{f0}#{f1}"


PRIORITIES = [2, 4, 3, 5, 3, 3, 1, 3]


def _tasks() -> None:
    for i, pr in enumerate(PRIORITIES):
        Task.objects.create(project_id="p1", task_id=f"t{i}", priority=pr, score=i % 6, title=f"T{i}")


def _table_items() -> list[dict[str, Any]]:
    return sorted(backend.call("Scan", {"TableName": Board.table_name()}).get("Items", []),
                  key=lambda it: (it["PK"]["S"], it["SK"]["S"]))


# -- order_by ----------------------------------------------------------------------------
def test_order_by_a_field_the_sort_key_does_not_order_by_is_refused() -> None:
    _tasks()
    qs = Task.objects.filter(project_id="p1", status__in=["OPEN"]).order_by("-priority")
    with dynorm.capture() as c, pytest.raises(dynorm.InvalidQuery) as err:
        list(qs)
    assert c.count == 0
    msg = str(err.value)
    assert "Task" in msg and "priority" in msg and "primary: sk, task_id" in msg and "by_score: sk, score" in msg
    # with the status pinned, the GSI whose sort key starts with the priority serves it
    got = [t.priority for t in Task.objects.filter(project_id="p1", status="OPEN").order_by("-priority")]
    assert got == sorted(PRIORITIES, reverse=True)


def test_order_by_picks_the_access_path_that_orders_by_the_field() -> None:
    _tasks()
    by_score = list(Task.objects.filter(project_id="p1").order_by("-score"))
    assert [t.score for t in by_score] == sorted((i % 6 for i in range(8)), reverse=True)
    assert Task.objects.filter(project_id="p1").order_by("-score").explain().index == "LSI1"
    # the GSI's sort key starts with the priority: pinned status, ordered by priority
    got = [t.priority for t in Task.objects.filter(project_id="p1", status="OPEN").using("by_status")
           .order_by("-priority")]
    assert got == sorted(PRIORITIES, reverse=True)


# -- only() ------------------------------------------------------------------------------
def test_only_never_shows_a_default_or_none_for_a_field_it_did_not_read() -> None:
    Task.objects.create(project_id="p1", task_id="t1", priority=2, title="Ship")
    obj = Task.objects.filter(project_id="p1").only("title").first()
    assert obj is not None
    assert obj.project_id == "p1" and obj.task_id == "t1"  # keys are always read
    with dynorm.capture() as c:
        assert obj.priority == 2  # deferred: loaded, not the default 3
        assert obj.status == "OPEN" and obj.score == 0
    assert c.operations == ["GetItem"]  # one GetItem loads every deferred field
    again = pickle.loads(pickle.dumps(Task.objects.filter(project_id="p1").only("title").first()))
    assert again.priority == 2  # deferred fields survive pickling
    obj.title = "Shipped"
    obj.save()  # all fields are known now: saving is safe
    assert Task.objects.get(project_id="p1", task_id="t1").priority == 2


def test_deferred_field_of_a_deleted_item_raises_does_not_exist() -> None:
    Task.objects.create(project_id="p1", task_id="t1", priority=2)
    obj = Task.objects.filter(project_id="p1").only("title").first()
    Task.objects.get(project_id="p1", task_id="t1").delete()
    with pytest.raises(Task.DoesNotExist, match="deferred"):
        _ = obj.priority


# -- count() -----------------------------------------------------------------------------
def test_count_in_a_shared_partition_counts_only_this_entity() -> None:
    _tasks()
    for n in ("n1", "n2", "n3"):
        Note.objects.create(project_id="p1", note_id=n)
    assert len(list(Note.objects.filter(project_id="p1"))) == 3
    assert Note.objects.filter(project_id="p1").count() == 3  # not 11: the tasks share the partition
    assert Task.objects.filter(project_id="p1").count() == 8
    with dynorm.capture() as c:
        assert list(Note.objects.filter(project_id="p1")[:2]) and Note.objects.filter(project_id="p1").exists()
    assert all(r.params.get("FilterExpression") for r in c.requests)


def test_count_on_only_with_many_name_placeholders() -> None:
    for i in range(3):
        Wide.objects.create(wide_id="a", f0=f"v{i}")
    names = [f"f{i}" for i in range(12)]
    qs = Wide.objects.filter(wide_id="a", f5="x", f6="x", f7="x", f8="x", f9="x", f10="x", f11="x").only(*names)
    with dynorm.capture() as c:
        assert qs.count() == 3
    assert c.requests[0].params == qs.explain(count=True).params
    assert "ProjectionExpression" not in c.requests[0].params


# -- prefetch ----------------------------------------------------------------------------
def _staff() -> None:
    Person.objects.bulk_create([Person(person_id=f"e{i}", name=f"E{i}") for i in range(5)])
    Employment.objects.bulk_create([Employment(store_id="s1", person_id=f"e{i}", person=f"e{i}") for i in range(5)])


@pytest.mark.parametrize("path", ["page", "iterator", "get", "first"])
def test_prefetch_is_honoured_by_every_path(path: str) -> None:
    _staff()
    qs = Employment.objects.filter(store_id="s1").prefetch("person")
    with dynorm.capture() as c:
        if path == "page":
            jobs = qs.page(size=3).items
        elif path == "iterator":
            jobs = list(qs.iterator())
        elif path == "get":
            jobs = [qs.get(person_id="e2")]
        else:
            jobs = [qs.first()]
        names = [j.related("person").name for j in jobs]
    assert names and all(n.startswith("E") for n in names)
    read = "GetItem" if path == "get" else "Query"
    assert c.operations == [read, "BatchGetItem"]


# -- contradictions ----------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: Part.objects.filter(machine="m", part="p").filter(part="q"),
    lambda: Part.objects.filter(Q(machine="m") & Q(part="p") & Q(part="q")),
])
def test_contradictory_equalities_are_refused_and_never_write(make: Any) -> None:
    Part.objects.create(machine="m", part="p", qty=1)
    Part.objects.create(machine="m", part="q", qty=1)
    before = _table_items()
    with dynorm.capture() as c:
        with pytest.raises(dynorm.InvalidQuery, match="Part.part must equal both"):
            make().explain()
        with pytest.raises(dynorm.InvalidQuery, match="Part.part"):
            make().update(qty=5)
        with pytest.raises(dynorm.InvalidQuery, match="Part.part"):
            list(make())
    assert c.count == 0
    assert _table_items() == before
    # the same value twice is no contradiction
    assert Part.objects.filter(machine="m", part="p").filter(part="p").update(qty=2).qty == 2


# -- LSI sort attribute ranges -----------------------------------------------------------
def test_two_conditions_on_an_lsi_sort_attribute_make_one_key_condition() -> None:
    _tasks()
    qs = Task.objects.filter(project_id="p1", score__gte=2, score__lt=5)
    p = qs.explain()
    assert p.index == "LSI1" and "BETWEEN" in (p.key_condition or "") and p.filter is None
    assert sorted(t.score for t in qs) == sorted(s for s in (i % 6 for i in range(8)) if 2 <= s < 5)
    assert qs.count() == len(list(qs))


def test_the_docs_placed_at_window_on_an_lsi() -> None:
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    for day in range(10):
        Order.objects.create(customer_id="c1", placed_at=start + dt.timedelta(days=day))
    lo, hi = start + dt.timedelta(days=2), start + dt.timedelta(days=5)
    got = Order.objects.filter(customer_id="c1", placed_at__gte=lo, placed_at__lt=hi)
    assert [o.placed_at for o in got] == [start + dt.timedelta(days=d) for d in (2, 3, 4)]
    assert got.explain().filter is None
    empty = Order.objects.filter(customer_id="c1", placed_at__gt=hi, placed_at__lt=lo)
    with dynorm.capture() as c, pytest.raises(dynorm.InvalidQuery, match="no value of placed_at"):
        list(empty)
    assert c.count == 0


def test_lsi_ranges_match_a_brute_force_oracle() -> None:
    scores = [-7, -1, 0, 0, 1, 2, 2, 3, 5, 8, 13, 21, 10**12]
    for i, s in enumerate(scores):
        Task.objects.create(project_id="p1", task_id=f"t{i:02d}", score=s)
    lookups = st.sampled_from(["gt", "gte", "lt", "lte", "exact"])
    values = st.one_of(st.sampled_from(scores), st.integers(-30, 30))

    ops = {"gt": lambda a, b: a > b, "gte": lambda a, b: a >= b, "lt": lambda a, b: a < b,
           "lte": lambda a, b: a <= b, "exact": lambda a, b: a == b}

    @settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
    @given(conds=st.lists(st.tuples(lookups, values), min_size=1, max_size=3), desc=st.booleans())
    def check(conds: list[tuple[str, int]], desc: bool) -> None:
        expected = sorted((s for s in scores if all(ops[lk](s, v) for lk, v in conds)), reverse=desc)
        qs = Task.objects.filter(Q(project_id="p1"), *[Q(**{f"score__{lk}": v}) for lk, v in conds])
        if desc:
            qs = qs.order_by("-score")
        try:
            got = [t.score for t in qs]
        except dynorm.InvalidQuery as exc:  # refused only when nothing can match
            assert expected == [] and "no value of score" in str(exc) or "score must equal both" in str(exc)
            return
        assert got == expected
        assert qs.count() == len(expected)

    check()


# -- first() / exists() ------------------------------------------------------------------
def test_first_and_exists_behind_a_selective_filter_take_a_few_requests() -> None:
    Task.objects.bulk_create([Task(project_id="p1", task_id=f"t{i:02d}", status="DONE" if i < 59 else "OPEN")
                              for i in range(60)])
    qs = Task.objects.filter(project_id="p1", status__in=["OPEN"])
    with dynorm.capture() as c:
        assert qs.first().task_id == "t59"
    assert c.count <= 4
    with dynorm.capture() as c:
        assert qs.exists()
    assert c.count <= 4
    with dynorm.capture() as c:
        assert not Task.objects.filter(project_id="p1", status__in=["GONE"]).exists()
    assert c.count <= 4


# -- page() cursors ----------------------------------------------------------------------
@pytest.mark.parametrize("n,size", [(6, 3), (6, 6), (5, 3), (1, 1)])
def test_a_page_that_took_the_last_item_has_no_cursor(n: int, size: int) -> None:
    for i in range(n):
        Task.objects.create(project_id="p1", task_id=f"t{i}")
    qs = Task.objects.filter(project_id="p1")
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = qs.page(size=size, cursor=cursor)
        pages += 1
        seen += [t.task_id for t in page]
        assert page.items  # never an empty page after a cursor
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == [f"t{i}" for i in range(n)] and pages == -(-n // size)


def test_pages_behind_a_filter_resume_at_the_last_item_returned() -> None:
    for i in range(20):
        Task.objects.create(project_id="p1", task_id=f"t{i:02d}", status="OPEN" if i % 3 == 0 else "DONE")
    qs = Task.objects.filter(project_id="p1", status__in=["OPEN"])
    seen: list[str] = []
    cursor = None
    while True:
        page = qs.page(size=2, cursor=cursor)
        seen += [t.task_id for t in page]
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == [f"t{i:02d}" for i in range(0, 20, 3)]


# -- explain() is what is sent, on every path ---------------------------------------------
def test_explain_shows_exactly_the_first_request_of_every_path() -> None:
    _tasks()
    Task.objects.create(project_id="p2", task_id="only")
    def base() -> Any:
        return Task.objects.filter(project_id="p1", status__in=["OPEN", "DONE"])

    def one() -> Any:
        return Task.objects.filter(project_id="p2")

    def key() -> Any:
        return Task.objects.filter(project_id="p1", task_id="t1")

    cases: list[tuple[Any, Any]] = [
        (lambda: list(base()), base().explain()),
        (lambda: list(base().iterator()), base().explain()),
        (lambda: list(base()[2:5]), base()[2:5].explain()),
        (lambda: base().first(), base()[:1].explain()),
        (lambda: base().exists(), base()[:1].explain()),
        (lambda: base().last(), base().reverse()[:1].explain()),
        (lambda: base().count(), base().explain(count=True)),
        (lambda: base().page(size=3), base()[:4].explain()),
        (lambda: one().get(), one()[:2].explain()),
        (lambda: Task.objects.get(project_id="p1", task_id="t1"), key().explain()),
        (lambda: key().count(), key().explain(count=True)),
        (lambda: key().only("title").first(), key().only("title").explain()),
        (lambda: Task.objects.scan().count(), Task.objects.scan().explain(count=True)),
        (lambda: list(Task.objects.scan()[:3]), Task.objects.scan()[:3].explain()),
    ]
    for run, expected in cases:
        with dynorm.capture() as c:
            run()
        assert c.requests[0].operation == expected.operation
        assert c.requests[0].params == expected.params, expected


# -- errors that point at the fix ----------------------------------------------------------
def test_unknown_lookup_is_named_with_the_supported_ones() -> None:
    with dynorm.capture() as c, pytest.raises(dynorm.InvalidQuery) as err:
        list(Task.objects.filter(project_id="p1", title__icontains="x"))
    assert c.count == 0
    msg = str(err.value)
    assert "unknown lookup 'icontains'" in msg and "Task.title" in msg and "begins_with" in msg
    assert "has no field" not in msg


@pytest.mark.parametrize("make,says", [
    (lambda: Task.objects.all(), "without conditions"),
    (lambda: Task.objects.filter(Q(project_id="a") | Q(project_id="b")), "inside OR/NOT (project_id)"),
    (lambda: Task.objects.filter(title="x"), "a filter on title"),
])
def test_scan_required_says_which_fields_make_it_one_request(make: Any, says: str) -> None:
    for evaluate in (list, lambda qs: qs.count()):
        with dynorm.capture() as c, pytest.raises(dynorm.ScanRequired) as err:
            evaluate(make())
        assert c.count == 0
        msg = str(err.value)
        assert says in msg and "nothing" not in msg
        assert "project_id for primary" in msg and "by_score" in msg and "by_status" in msg and ".scan()" in msg


# -- the pipeline against a brute-force oracle ---------------------------------------------
def test_pipeline_matches_a_brute_force_oracle() -> None:
    """Slices, pages, first/exists/count, reverse and filters, in order, against Python."""
    rows = [(f"t{i:02d}", ["OPEN", "DONE", "HOLD"][(i * 7) % 3], (i * 5) % 11) for i in range(40)]
    Task.objects.bulk_create([Task(project_id="p1", task_id=t, status=s, priority=p) for t, s, p in rows])
    for n in ("a", "b"):  # other entity types in the same partition
        Note.objects.create(project_id="p1", note_id=n)

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    @given(statuses=st.sets(st.sampled_from(["OPEN", "DONE", "HOLD", "GONE"]), min_size=1),
           min_priority=st.integers(0, 11), desc=st.booleans(),
           start=st.integers(0, 30), length=st.one_of(st.none(), st.integers(0, 30)),
           size=st.integers(1, 12), only=st.booleans())
    def check(statuses: set[str], min_priority: int, desc: bool, start: int, length: int | None,
              size: int, only: bool) -> None:
        expected = [t for t, s, p in sorted(rows, reverse=desc) if s in statuses and p >= min_priority]
        qs = Task.objects.filter(project_id="p1", status__in=sorted(statuses), priority__gte=min_priority)
        if desc:
            qs = qs.order_by("-sk")
        if only:
            qs = qs.only("priority")
        stop = None if length is None else start + length
        assert [t.task_id for t in qs[start:stop]] == expected[start:stop]
        assert [t.task_id for t in qs[start:stop].iterator()] == expected[start:stop]
        assert qs.count() == len(expected) and qs[start:stop].count() == len(expected[start:stop])
        first = qs.first()
        assert (first.task_id if first else None) == (expected[0] if expected else None)
        assert qs.exists() == bool(expected)
        seen: list[str] = []
        cursor = None
        while True:
            page = qs.page(size=size, cursor=cursor)
            assert page.items or not seen  # never an empty page after a cursor
            seen += [t.task_id for t in page]
            cursor = page.cursor
            if cursor is None:
                break
        assert seen == expected

    check()

# -- LSI conditions, count() vs iteration, evaluated querysets (issue 11) -------------------------


class Scored(Entity):
    g = fields.String()
    sid = fields.String()
    score = fields.Decimal(null=True)
    label = fields.String(null=True)
    note = fields.Integer(null=True)

    class Meta:
        table = Board
        entity_type = "SCORED"
        pk = "SC#{g}"
        sk = "S#{sid}"
        indexes = {"by_score": Index("LSI1"), "by_label": Index("LSI2")}


class CollTable(Table):
    """The physical table "keyorder" of tests/integration/test_key_order.py (same definition):
    dynorm_tables creates each physical table once, and every test creates them all."""

    class Meta:
        table_name = "keyorder"


class CollMember(Entity):
    a = fields.String()
    m = fields.String()

    class Meta:
        table = CollTable
        entity_type = "COLL_MEMBER"
        pk = "A#{a}"
        sk = "M#{m}"


class CollNote(Entity):
    """Its sort key starts with CollMember's: "M#{m}#N#{k}" (a member and its notes)."""

    a = fields.String()
    m = fields.String()
    k = fields.String()

    class Meta:
        table = CollTable
        entity_type = "COLL_NOTE"
        pk = "A#{a}"
        sk = "M#{m}#N#{k}"


class CollFree(Entity):
    """Its sort key starts with a placeholder: it shares every partition of the table."""

    a = fields.String()
    x = fields.String()

    class Meta:
        table = CollTable
        entity_type = "COLL_FREE"
        pk = "A#{a}"
        sk = "{x}"


def _scores() -> None:
    import decimal

    Scored.objects.create(g="g", sid="a", score=decimal.Decimal(5), label="x", note=5)
    Scored.objects.create(g="g", sid="b", score=decimal.Decimal(1), label="y", note=1)


def _answer(qs: object) -> object:
    """The result ids, or "refused" for InvalidQuery (raised before any request)."""
    try:
        return sorted(o.sid for o in qs)  # type: ignore[attr-defined]
    except dynorm.InvalidQuery:
        return "refused"


@pytest.mark.usefixtures("dynorm_tables")
@pytest.mark.parametrize("extra", ["exclude", "ne", "in", "or"])
def test_lsi_range_with_another_condition_on_the_lsi_attribute(extra: str) -> None:
    """filter(score__gte=0) picks LSI1; a second, non-range condition on score (exclude, ne, in,
    Q|Q) goes into the FilterExpression, which DynamoDB rejects for a key attribute of the index:
    ServiceError (ValidationException) instead of ['b']."""
    import decimal

    _scores()
    qs = Scored.objects.filter(g="g", score__gte=decimal.Decimal(0))
    qs = {"exclude": qs.exclude(score=decimal.Decimal(5)),
          "ne": qs.filter(score__ne=decimal.Decimal(5)),
          "in": qs.filter(score__in=[decimal.Decimal(1)]),
          "or": qs.filter(dynorm.Q(score=decimal.Decimal(1)) | dynorm.Q(score=decimal.Decimal(7)))}[extra]
    assert _answer(qs) == ["b"]
    assert qs.explain().index is None  # the table Query, where score is a plain attribute
    assert qs.count() == 1


@pytest.mark.usefixtures("dynorm_tables")
def test_a_condition_the_lsi_key_cannot_carry_is_refused_when_the_lsi_is_required() -> None:
    """order_by("score") or using("by_score") need LSI1, whose sort attribute DynamoDB refuses in
    a FilterExpression: refused before any request, naming the condition."""
    import decimal

    _scores()
    base = Scored.objects.filter(g="g", score__gte=decimal.Decimal(0)).exclude(score=decimal.Decimal(5))
    for qs in (base.order_by("score"), base.using("by_score")):
        with dynorm.capture() as c:
            with pytest.raises(dynorm.InvalidQuery, match="score"):
                list(qs)
        assert c.count == 0


@pytest.mark.usefixtures("dynorm_tables")
def test_an_empty_string_on_an_lsi_string_attribute() -> None:
    """'' cannot be an index key value: equality / upper bounds on it match nothing and are
    refused before any request; a lower bound of '' (or between('', x)) is every item with the attribute."""
    _scores()
    Scored.objects.create(g="g", sid="c")  # no label: not in LSI2
    for lookups in ({"label": ""}, {"label__lte": ""}, {"label__lt": ""}):
        with dynorm.capture() as c:
            assert _answer(Scored.objects.filter(g="g", **lookups)) == "refused"
        assert c.count == 0
    assert _answer(Scored.objects.filter(g="g", label__between=("", "x"))) == ["a"]
    assert _answer(Scored.objects.filter(g="g", label__begins_with="")) == ["a", "b"]
    assert Scored.objects.filter(g="g", label__gte="").count() == 2


@pytest.mark.usefixtures("dynorm_tables")
@pytest.mark.parametrize("lookup", ["gt", "gte"])
def test_lsi_string_lower_bound_empty_string(lookup: str) -> None:
    """label__gte="" (every label) / label__gt="" on an LSI over a string attribute sends an
    empty string as a key-condition value: ServiceError instead of both items."""
    _scores()
    assert _answer(Scored.objects.filter(g="g", **{f"label__{lookup}": ""})) == ["a", "b"]


@pytest.mark.usefixtures("dynorm_tables")
@pytest.mark.parametrize("field,bounds", [("sid", ("b", "a")), ("label", ("y", "x")), ("score", (5, 1)),
                                           ("note", (5, 1))])
def test_reversed_between_is_refused_before_any_request(field: str, bounds: tuple) -> None:
    """between=(high, low) matches nothing; docs/querying.md: "Bounds that no value can meet are
    refused before any request". dynorm sends BETWEEN high AND low and DynamoDB answers
    ValidationException (ServiceError) on the sort key, an LSI attribute and a plain attribute."""
    _scores()
    with dynorm.capture() as c:
        got = _answer(Scored.objects.filter(g="g", **{f"{field}__between": bounds}))
    assert got == "refused" and c.count == 0


def _collection() -> None:
    for m in "abc":
        CollMember.objects.create(a="1", m=m)
    for k in "xyz":
        CollNote.objects.create(a="1", m="a", k=k)
    for x in ("p", "q"):
        CollFree.objects.create(a="1", x=x)


@pytest.mark.usefixtures("dynorm_tables")
@pytest.mark.parametrize("lookups", [{}, {"m__gte": "a"}, {"m__begins_with": "a"}])
def test_count_matches_iteration_when_another_template_extends_the_prefix(lookups: dict) -> None:
    """CollMember "M#{m}" and CollNote "M#{m}#N#{k}" share the prefix "M#": iteration drops the
    notes, but count() (Select=COUNT) counts them: 6 where list() has 3 (1 vs 4 with
    begins_with). Table.check() reports nothing."""
    _collection()
    qs = CollMember.objects.filter(a="1", **lookups)
    assert qs.count() == len(list(CollMember.objects.filter(a="1", **lookups)))


@pytest.mark.usefixtures("dynorm_tables")
def test_collection_of_placeholder_sk_entity_count_matches_iteration() -> None:
    """collection(a=...).of(CollFree) iterates the 2 CollFree items but count() counts the whole
    partition (8): the issue's "count() in a shared partition" case on the collection path."""
    _collection()
    of = CollMember.objects.collection(a="1").of(CollFree)
    assert len(list(of)) == 2
    assert CollMember.objects.collection(a="1").of(CollFree).count() == 2


@pytest.mark.usefixtures("dynorm_tables")
def test_count_ignores_an_undeclared_type_under_the_prefix_like_iteration() -> None:
    """An item of a type no model declares, written under "M#" by another service: iteration
    skips it, count() counts it (4 vs 3)."""
    _collection()
    backend.call("PutItem", {"TableName": CollTable.table_name(), "Item": {
        "PK": {"S": "A#2"}, "SK": {"S": "M#zzz"}, "entityType": {"S": "ALIEN"}, "a": {"S": "2"}, "m": {"S": "zzz"}}})
    CollMember.objects.create(a="2", m="a")
    qs = CollMember.objects.filter(a="2")
    assert qs.count() == len(list(CollMember.objects.filter(a="2")))


@pytest.mark.usefixtures("dynorm_tables")
@pytest.mark.parametrize("method", ["first", "earliest"])
def test_first_and_earliest_on_an_evaluated_queryset(method: str) -> None:
    """Django habit: evaluate a queryset, then call first()/earliest() on it. dynorm raises
    AssertionError (query.py first(): self[:1] on a cached queryset is a list)."""
    _collection()
    qs = CollMember.objects.filter(a="1")
    assert [o.m for o in qs] == ["a", "b", "c"]
    assert getattr(qs, method)().m == "a"


@pytest.mark.usefixtures("dynorm_tables")
def test_count_matches_iteration_and_an_oracle_over_random_layouts() -> None:
    """Differential: members, their notes (sk extends the member's), placeholder-sk items and
    undeclared types share random partitions; for random lookups on m, count() == len(list())
    == the brute-force answer, and collection().of(X).count() == len(list()) for every X."""
    counter = iter(range(10_000))
    text = st.text(alphabet="ab#%M", min_size=1, max_size=3)

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(members=st.sets(text, max_size=4), notes=st.sets(st.tuples(text, text), max_size=4),
           free=st.sets(st.text(alphabet="M#ab", min_size=1, max_size=3), max_size=3),
           aliens=st.sets(text, max_size=2),
           lookup=st.sampled_from(["all", "exact", "gte", "lte", "gt", "lt", "begins_with"]), value=text)
    def check(members: set[str], notes: set[tuple[str, str]], free: set[str], aliens: set[str],
              lookup: str, value: str) -> None:
        a = f"h{next(counter)}"
        for m in members:
            CollMember.objects.create(a=a, m=m)
        for m, k in notes:
            CollNote.objects.create(a=a, m=m, k=k)
        for x in free:
            CollFree.objects.create(a=a, x=x)
        for m in aliens:  # another service's type, keyed like a member
            backend.call("PutItem", {"TableName": CollTable.table_name(), "Item": {
                "PK": {"S": f"A#{a}"}, "SK": {"S": f"M#{m}~zz"}, "entityType": {"S": "ALIEN"},
                "a": {"S": a}, "m": {"S": m}}})
        ops = {"all": lambda m: True, "exact": lambda m: m == value, "gte": lambda m: m >= value,
               "lte": lambda m: m <= value, "gt": lambda m: m > value, "lt": lambda m: m < value,
               "begins_with": lambda m: m.startswith(value)}
        expected = sorted(m for m in members if ops[lookup](m))
        lookups = {} if lookup == "all" else {"m": value} if lookup == "exact" else {f"m__{lookup}": value}
        qs = CollMember.objects.filter(a=a, **lookups)
        assert sorted(o.m for o in qs) == expected
        assert CollMember.objects.filter(a=a, **lookups).count() == len(expected)
        for entity, n in ((CollMember, len(members)), (CollNote, len(notes)), (CollFree, len(free))):
            of = CollMember.objects.collection(a=a).of(entity)
            assert len(list(of)) == n
            assert CollMember.objects.collection(a=a).of(entity).count() == n

    check()
