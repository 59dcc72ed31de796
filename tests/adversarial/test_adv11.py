"""Adversarial tests for issue 11 ("Queries return exactly what they promise"), session adv11.

Each test fails on the code at 34e0e74 and passes once the bug it names is fixed.
"""

from __future__ import annotations

import datetime as dt

import pytest

import dynorm
from dynorm import Entity, Index, Table, backend, fields

UTC = dt.timezone.utc


class AdvOrdered(Table):
    class Meta:
        table_name = "adv11-ordered"


class AdvPercent(Table):
    class Meta:
        table_name = "adv11-percent"
        key_encoding = "percent"


class AdvEvent(Entity):
    """A lossy date spec followed by another field: the key orders by date, then by eid."""

    g = fields.String()
    day = fields.DateTime()
    eid = fields.String()

    class Meta:
        table = AdvOrdered
        entity_type = "ADVEV"
        pk = "EV#{g}"
        sk = "D#{day:%Y-%m-%d}#{eid}"


class AdvDotted(Entity):
    """An unordered spec (day first): the key text does not sort like the datetime."""

    g = fields.String()
    day = fields.DateTime()

    class Meta:
        table = AdvOrdered
        entity_type = "ADVDM"
        pk = "DM#{g}"
        sk = "D#{day:%d.%m.%Y %H%M%S%f}"


class AdvTrunc(Entity):
    g = fields.String()
    name = fields.String()
    tag = fields.String(default="a")

    class Meta:
        table = AdvOrdered
        entity_type = "ADVTR"
        pk = "TR#{g}"
        sk = "N#{name:.3}"


class AdvWord(Entity):
    g = fields.String()
    k = fields.String()

    class Meta:
        table = AdvOrdered
        entity_type = "ADVWORD"
        pk = "W#{g}"
        sk = "K#{k}"


class AdvLegacyName(Entity):
    """A percent-encoded (legacy) table: its key text does not sort like the names."""

    g = fields.String()
    name = fields.String()

    class Meta:
        table = AdvPercent
        entity_type = "ADVPN"
        pk = "PN#{g}"
        sk = "N#{name}"


@pytest.mark.usefixtures("dynorm_tables")
def test_order_by_a_field_behind_a_lossy_spec_is_refused_or_exact() -> None:
    """order_by("day") on sk "D#{day:%Y-%m-%d}#{eid}": within one date the key orders by eid,
    not by day, yet the order is accepted and returned silently in eid order."""
    hours = [9, 3, 15, 1]
    for i, h in enumerate(hours):
        AdvEvent.objects.create(g="g", day=dt.datetime(2024, 3, 1, h, tzinfo=UTC), eid="abcd"[i])
    try:
        got = [e.day.hour for e in AdvEvent.objects.filter(g="g").order_by("day")]
    except dynorm.InvalidQuery:
        return  # refused: fine
    assert got == sorted(hours)


@pytest.mark.usefixtures("dynorm_tables")
def test_order_by_a_field_behind_an_unordered_spec_is_refused_or_exact() -> None:
    """order_by("day") on sk "D#{day:%d.%m.%Y ...}" (an *unordered* spec per docs/modelling.md)
    is accepted and returns day-of-month order."""
    days = [dt.datetime(2024, 1, 31, tzinfo=UTC), dt.datetime(2024, 2, 1, tzinfo=UTC),
            dt.datetime(2023, 12, 15, tzinfo=UTC)]
    for d in days:
        AdvDotted.objects.create(g="g", day=d)
    try:
        got = [e.day for e in AdvDotted.objects.filter(g="g").order_by("day")]
    except dynorm.InvalidQuery:
        return
    assert got == sorted(days)


@pytest.mark.usefixtures("dynorm_tables")
def test_order_by_string_key_field_on_percent_encoded_table_is_refused_or_exact() -> None:
    """key_encoding='percent' "does not preserve order" (docs), yet order_by("name") is accepted
    and returns a#, a#z after a$ (percent text order)."""
    names = ["a#", "a$", "a", "a%", "a#z", "b"]
    for n in names:
        AdvLegacyName.objects.create(g="g", name=n)
    try:
        got = [p.name for p in AdvLegacyName.objects.filter(g="g").order_by("name")]
    except dynorm.InvalidQuery:
        return
    assert got == sorted(names)


@pytest.mark.usefixtures("dynorm_tables")
def test_in_bulk_through_a_lossy_key_returns_only_matching_items() -> None:
    """in_bulk([{"name": "abcz"}]) on sk "N#{name:.3}" returns the stored item "abcq" (same
    truncated key), while get()/filter() correctly add the exact value as a filter."""
    AdvTrunc.objects.create(g="g", name="abcq", tag="q")
    with pytest.raises(AdvTrunc.DoesNotExist):
        AdvTrunc.objects.get(g="g", name="abcz")  # the documented behaviour for equality
    try:
        got = AdvTrunc.objects.in_bulk([{"g": "g", "name": "abcz"}])
    except dynorm.InvalidQuery:
        return
    assert {obj.name for obj in got.values()} == set()


def _put_foreign(sk: str, k: str) -> None:
    """Another writer (e.g. the legacy percent encoding) stores an item whose key text is not
    this version's encoding of its attribute."""
    backend.call("PutItem", {"TableName": AdvOrdered.table_name(), "Item": {
        "PK": {"S": "W#g"}, "SK": {"S": sk}, "entityType": {"S": "ADVWORD"},
        "g": {"S": "g"}, "k": {"S": k}}})


@pytest.mark.usefixtures("dynorm_tables")
def test_begins_with_on_key_field_checks_the_value_not_only_the_key_text() -> None:
    """begins_with on the sort-key field goes into the KeyConditionExpression only (unlike a
    range, which keeps its lookup in the filter): an item written by another writer with the
    percent encoding (k="a#x" keyed "K#a%23x") comes back for k__begins_with="a%"."""
    AdvWord.objects.create(g="g", k="a%b")
    _put_foreign("K#a%23x", "a#x")
    got = sorted(o.k for o in AdvWord.objects.filter(g="g", k__begins_with="a%"))
    assert got == ["a%b"]
    # a range on the same field is exact (its lookup stays in the FilterExpression)
    assert sorted(o.k for o in AdvWord.objects.filter(g="g", k__gte="a%")) == ["a%b"]


@pytest.mark.usefixtures("dynorm_tables")
def test_get_by_key_never_returns_an_item_whose_key_field_differs() -> None:
    """get(k="a%23x") is a GetItem of "K#a%23x"; the item there (written by a percent-encoding
    writer) has k="a#x", and dynorm returns it as the answer to k="a%23x"."""
    _put_foreign("K#a%23x", "a#x")
    try:
        obj = AdvWord.objects.get(g="g", k="a%23x")
    except (AdvWord.DoesNotExist, dynorm.UnreadableItems):
        return
    assert obj.k == "a%23x"


class AdvLsiTable(Table):
    class Meta:
        table_name = "adv11-lsi"
        lsis = {"LSI1": "score", "LSI2": "label"}


class AdvScore(Entity):
    g = fields.String()
    sid = fields.String()
    score = fields.Decimal(null=True)
    label = fields.String(null=True)
    note = fields.Integer(null=True)

    class Meta:
        table = AdvLsiTable
        entity_type = "ADVSC"
        pk = "SC#{g}"
        sk = "S#{sid}"
        indexes = {"by_score": Index("LSI1"), "by_label": Index("LSI2")}


def _scores() -> None:
    import decimal

    AdvScore.objects.create(g="g", sid="a", score=decimal.Decimal(5), label="x", note=5)
    AdvScore.objects.create(g="g", sid="b", score=decimal.Decimal(1), label="y", note=1)


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
    qs = AdvScore.objects.filter(g="g", score__gte=decimal.Decimal(0))
    qs = {"exclude": qs.exclude(score=decimal.Decimal(5)),
          "ne": qs.filter(score__ne=decimal.Decimal(5)),
          "in": qs.filter(score__in=[decimal.Decimal(1)]),
          "or": qs.filter(dynorm.Q(score=decimal.Decimal(1)) | dynorm.Q(score=decimal.Decimal(7)))}[extra]
    assert _answer(qs) == ["b"]


@pytest.mark.usefixtures("dynorm_tables")
@pytest.mark.parametrize("lookup", ["gt", "gte"])
def test_lsi_string_lower_bound_empty_string(lookup: str) -> None:
    """label__gte="" (every label) / label__gt="" on an LSI over a string attribute sends an
    empty string as a key-condition value: ServiceError instead of both items."""
    _scores()
    assert _answer(AdvScore.objects.filter(g="g", **{f"label__{lookup}": ""})) == ["a", "b"]


@pytest.mark.usefixtures("dynorm_tables")
@pytest.mark.parametrize("field,bounds", [("sid", ("b", "a")), ("label", ("y", "x")), ("score", (5, 1)),
                                           ("note", (5, 1))])
def test_reversed_between_is_empty_or_refused_before_any_request(field: str, bounds: tuple) -> None:
    """between=(high, low) matches nothing; docs/querying.md: "Bounds that no value can meet are
    refused before any request". dynorm sends BETWEEN high AND low and DynamoDB answers
    ValidationException (ServiceError) on the sort key, an LSI attribute and a plain attribute."""
    _scores()
    with dynorm.capture() as c:
        got = _answer(AdvScore.objects.filter(g="g", **{f"{field}__between": bounds}))
    assert got == [] or (got == "refused" and c.count == 0)


class AdvCollTable(Table):
    class Meta:
        table_name = "adv11-coll"


class AdvMember(Entity):
    a = fields.String()
    m = fields.String()

    class Meta:
        table = AdvCollTable
        entity_type = "ADVMEMB"
        pk = "A#{a}"
        sk = "M#{m}"


class AdvNote(Entity):
    """Its sort key starts with AdvMember's: "M#{m}#N#{k}" (a member and its notes)."""

    a = fields.String()
    m = fields.String()
    k = fields.String()

    class Meta:
        table = AdvCollTable
        entity_type = "ADVNOTE"
        pk = "A#{a}"
        sk = "M#{m}#N#{k}"


class AdvFree(Entity):
    """Its sort key starts with a placeholder: it shares every partition of the table."""

    a = fields.String()
    x = fields.String()

    class Meta:
        table = AdvCollTable
        entity_type = "ADVFREE"
        pk = "A#{a}"
        sk = "{x}"


def _collection() -> None:
    for m in "abc":
        AdvMember.objects.create(a="1", m=m)
    for k in "xyz":
        AdvNote.objects.create(a="1", m="a", k=k)
    for x in ("p", "q"):
        AdvFree.objects.create(a="1", x=x)


@pytest.mark.usefixtures("dynorm_tables")
@pytest.mark.parametrize("lookups", [{}, {"m__gte": "a"}, {"m__begins_with": "a"}])
def test_count_matches_iteration_when_another_template_extends_the_prefix(lookups: dict) -> None:
    """AdvMember "M#{m}" and AdvNote "M#{m}#N#{k}" share the prefix "M#": iteration drops the
    notes, but count() (Select=COUNT) counts them: 6 where list() has 3 (1 vs 4 with
    begins_with). Table.check() reports nothing."""
    _collection()
    qs = AdvMember.objects.filter(a="1", **lookups)
    assert qs.count() == len(list(AdvMember.objects.filter(a="1", **lookups)))


@pytest.mark.usefixtures("dynorm_tables")
def test_collection_of_placeholder_sk_entity_count_matches_iteration() -> None:
    """collection(a=...).of(AdvFree) iterates the 2 AdvFree items but count() counts the whole
    partition (8): the issue's "count() in a shared partition" case on the collection path."""
    _collection()
    of = AdvMember.objects.collection(a="1").of(AdvFree)
    assert len(list(of)) == 2
    assert AdvMember.objects.collection(a="1").of(AdvFree).count() == 2


@pytest.mark.usefixtures("dynorm_tables")
def test_count_ignores_an_undeclared_type_under_the_prefix_like_iteration() -> None:
    """An item of a type no model declares, written under "M#" by another service: iteration
    skips it, count() counts it (4 vs 3)."""
    _collection()
    backend.call("PutItem", {"TableName": AdvCollTable.table_name(), "Item": {
        "PK": {"S": "A#2"}, "SK": {"S": "M#zzz"}, "entityType": {"S": "ALIEN"}, "a": {"S": "2"}, "m": {"S": "zzz"}}})
    AdvMember.objects.create(a="2", m="a")
    qs = AdvMember.objects.filter(a="2")
    assert qs.count() == len(list(AdvMember.objects.filter(a="2")))


@pytest.mark.usefixtures("dynorm_tables")
@pytest.mark.parametrize("method", ["first", "earliest"])
def test_first_and_earliest_on_an_evaluated_queryset(method: str) -> None:
    """Django habit: evaluate a queryset, then call first()/earliest() on it. dynorm raises
    AssertionError (query.py first(): self[:1] on a cached queryset is a list)."""
    _collection()
    qs = AdvMember.objects.filter(a="1")
    assert [o.m for o in qs] == ["a", "b", "c"]
    assert getattr(qs, method)().m == "a"


@pytest.mark.usefixtures("dynorm_tables")
def test_earliest_by_a_field_behind_a_lossy_spec_is_refused_or_exact() -> None:
    """earliest("day") on sk "D#{day:%Y-%m-%d}#{eid}" returns the item with the smallest eid of
    the date (9:00), not the earliest day (3:00)."""
    for h, e in ((9, "a"), (3, "b"), (15, "c")):
        AdvEvent.objects.create(g="g", day=dt.datetime(2024, 3, 1, h, tzinfo=UTC), eid=e)
    try:
        got = AdvEvent.objects.filter(g="g").earliest("day")
    except dynorm.InvalidQuery:
        return
    assert got.day.hour == 3


@pytest.mark.usefixtures("dynorm_tables")
def test_in_bulk_through_a_lossy_date_spec_in_the_middle_of_the_key() -> None:
    """in_bulk([{g, day=8:00, eid}]) returns the 9:00 item (same "D#2024-03-01#a" key)."""
    AdvEvent.objects.create(g="g", day=dt.datetime(2024, 3, 1, 9, tzinfo=UTC), eid="a")
    eight = dt.datetime(2024, 3, 1, 8, tzinfo=UTC)
    with pytest.raises(AdvEvent.DoesNotExist):
        AdvEvent.objects.get(g="g", day=eight, eid="a")
    try:
        got = AdvEvent.objects.in_bulk([{"g": "g", "day": eight, "eid": "a"}])
    except dynorm.InvalidQuery:
        return
    assert got == {}


@pytest.mark.parametrize("host", ["127.dynamodb.corp.example", "127.attacker.example"])
def test_a_dns_name_starting_with_127_is_not_loopback(host: str) -> None:
    """Settings.is_local is `host.startswith("127.")`: a DNS name such as "127.dynamodb.corp.example"
    counts as DynamoDB Local, so cursors are issued and read without cursor_secret (a per-process
    key: cursors break across processes instead of the documented ConfigurationError), and the CLI
    skips its confirmation for that endpoint."""
    from dynorm import conf

    settings = dataclasses_replace(conf.get_settings(), endpoint=f"https://{host}:8000", cursor_secret=None)
    assert settings.is_local is False


def dataclasses_replace(obj: object, **changes: object) -> object:
    import dataclasses

    return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
