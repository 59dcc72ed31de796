"""Issue 11, sections 1, 2 (keys) and 4 on DynamoDB Local: range lookups on escaped and
formatted key text are exact, numbers and datetimes have one canonical key, lossy specs do not
widen equalities, multi-character delimiters cannot be forged, cursors are bound and unforgeable."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
from typing import Any

import pytest

import dynorm
from dynorm import Entity, Table, backend, fields
from dynorm.cursor import encode_cursor


class KeyTable(Table):
    class Meta:
        table_name = "keyorder"


class ColonTable(Table):
    class Meta:
        table_name = "keyorder-colon"
        delimiter = "::"


class Word(Entity):
    group = fields.String()
    name = fields.String()

    class Meta:
        table = KeyTable
        entity_type = "WORD"
        pk = "G#{group}"
        sk = "W#{name}"


class Tick(Entity):
    sensor = fields.String()
    seq = fields.Integer()

    class Meta:
        table = KeyTable
        entity_type = "TICK"
        pk = "S#{sensor}"
        sk = "Q#{seq:04d}"


class Price(Entity):
    item = fields.String()
    amount = fields.Number()
    note = fields.String(null=True)

    class Meta:
        table = KeyTable
        entity_type = "PRICE"
        pk = "I#{item}"
        sk = "A#{amount}"


class Visit(Entity):
    site = fields.String()
    at = fields.DateTime()
    note = fields.String(null=True)

    class Meta:
        table = KeyTable
        entity_type = "VISIT"
        pk = "SITE#{site}"
        sk = "AT#{at:%Y-%m-%d}"


class Member(Entity):
    org = fields.String()
    user = fields.String()

    class Meta:
        table = ColonTable
        entity_type = "MEMBER"
        pk = "ORG::{org}::{user}"
        sk = "M"


def _names(qs: Any) -> list[str]:
    return [w.name for w in qs]


@pytest.fixture
def words() -> list[str]:
    values = ["a", "a b", "a!", "a#", "a#z", "a$", "a%", "a0", "aa", "b", "\U0010ffff", "\U0010ffffz", "é"]
    Word.objects.bulk_create([Word(group="g", name=v) for v in values])
    return sorted(values)


def test_range_lookups_on_escaped_text_are_exact(words: list[str]) -> None:
    qs = Word.objects.filter(group="g")
    assert _names(qs) == words                                  # key order is value order
    assert _names(qs.filter(name__lt="a$")) == [w for w in words if w < "a$"]      # a# and a#z too
    assert _names(qs.filter(name__gt="a#")) == [w for w in words if w > "a#"]      # a$ too
    assert _names(qs.filter(name__gte="a#")) == [w for w in words if w >= "a#"]
    assert _names(qs.filter(name__between=("a#", "a$"))) == ["a#", "a#z", "a$"]   # no ValidationException
    assert _names(qs.filter(name__begins_with="a#")) == ["a#", "a#z"]
    for bound in ("a", "a#", "\U0010ffff", "é"):
        with dynorm.capture() as c:
            got = _names(qs.filter(name__gte=bound))
        assert got == [w for w in words if w >= bound] and c.count == 1    # the U+10FFFF values too
        assert "\U0010ffff" not in qs.filter(name__gte=bound).explain().values.__repr__()


def test_reversed_between_is_refused_before_any_request_not_a_service_error(words: list[str]) -> None:
    # like contradictory equalities: no item can match, so the query is refused (swap the bounds)
    for qs in (Word.objects.filter(group="g", name__between=("a$", "a#")),
               Word.objects.filter(group="g", name__between=("b", "a"))):
        with dynorm.capture() as c, pytest.raises(dynorm.InvalidQuery, match="low bound is above the high bound"):
            list(qs)
        assert c.count == 0
    assert _names(Word.objects.filter(group="g", name__between=("a#", "a$"))) == sorted(
        w for w in words if "a#" <= w <= "a$")


def test_padded_integer_spec_refuses_before_any_request_and_orders() -> None:
    Tick.objects.bulk_create([Tick(sensor="s", seq=v) for v in (0, 5, 20, 9999)])
    for bad in (-5, 12345):
        with dynorm.capture() as c, pytest.raises(dynorm.InvalidKeyValue) as err:
            Tick(sensor="s", seq=bad).save()
        assert c.count == 0 and "Tick.seq" in str(err.value) and str(bad) in str(err.value)
    assert sorted(t.seq for t in Tick.objects.filter(sensor="s")) == [0, 5, 20, 9999]   # table unchanged
    qs = Tick.objects.filter(sensor="s")
    assert [t.seq for t in qs.filter(seq__gt=-10)] == [0, 5, 20, 9999]
    assert [t.seq for t in qs.filter(seq__lt=-10)] == []
    assert [t.seq for t in qs.filter(seq__gt=9999)] == []
    assert [t.seq for t in qs.filter(seq__gte=5, seq__lt=10000)] == [5, 20, 9999]


def test_numbers_have_one_canonical_key() -> None:
    Price.objects.create(item="x", amount=1.5)
    for same in (decimal.Decimal("1.50"), decimal.Decimal("1.500")):
        with pytest.raises(dynorm.AlreadyExists):
            Price.objects.create(item="x", amount=same)
    Price.objects.create(item="x", amount=2)
    with pytest.raises(dynorm.AlreadyExists):
        Price.objects.create(item="x", amount=2.0)
    assert len(list(Price.objects.filter(item="x"))) == 2
    got = Price.objects.get(item="x", amount=decimal.Decimal("1.50"))
    got.note = "read back, changed, saved"
    got.save()                                                   # no KeyChangeError (1.50 -> 1.5)
    Price.objects.create(item="big", amount=1e20)
    back = next(iter(Price.objects.filter(item="big")))
    assert Price.objects.get(item="big", amount=back.amount).amount == back.amount
    Price.objects.bulk_create([Price(item="n", amount=v) for v in (-20, -5, -1.5, 0, 0.25, 3, 1e20)])
    assert [p.amount for p in Price.objects.filter(item="n")] == [-20, -5, -1.5, 0, 0.25, 3, 1e20]
    assert [p.amount for p in Price.objects.filter(item="n", amount__gt=-10)] == [-5, -1.5, 0, 0.25, 3, 1e20]
    assert [p.amount for p in Price.objects.filter(item="n", amount__lt=-10)] == [-20]


def test_datetimes_in_keys_render_utc() -> None:
    late = dt.datetime(2024, 3, 1, 23, 0, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
    Visit.objects.create(site="s", at=late)
    assert Visit(site="s", at=late).key_attributes()["SK"] == "AT#2024-03-02"
    same = late.astimezone(dt.timezone.utc)
    got = Visit.objects.get(site="s", at=same)
    got.note = "edited"
    got.save()                                                   # no KeyChangeError


def test_equality_through_a_lossy_spec_is_exact() -> None:
    day = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
    Visit.objects.create(site="l", at=day.replace(hour=8))
    Visit.objects.create(site="l2", at=day.replace(hour=9))
    qs = Visit.objects.filter(site="l", at=day.replace(hour=8))
    assert [v.at.hour for v in qs] == [8]
    assert list(Visit.objects.filter(site="l", at=day.replace(hour=7))) == []
    p = qs.explain()  # the whole primary key: one GetItem, the exact value checked on the item read
    assert (p.operation, dict(p.checks)) == ("GetItem", {"at": {"S": "2024-05-01T08:00:00.000000Z"}})
    with pytest.raises(Visit.DoesNotExist):
        Visit.objects.get(site="l", at=day.replace(hour=7))      # not the 8:00 item of that day
    assert Visit.objects.get(site="l", at=day.replace(hour=8)).at.hour == 8


def test_multi_character_delimiter_cannot_overwrite_another_tenant() -> None:
    Member.objects.create(org="acme:", user="bob")
    Member.objects.create(org="acme", user=":bob")               # was an AlreadyExists/overwrite
    assert Member.objects.get(org="acme:", user="bob").org == "acme:"
    assert Member.objects.get(org="acme", user=":bob").user == ":bob"
    assert ColonTable.check() == []


def test_forged_and_foreign_cursors_raise_invalid_cursor(words: list[str]) -> None:
    qs = Word.objects.filter(group="g")
    page = qs.page(size=3)
    assert page.cursor
    with dynorm.capture() as c:
        with pytest.raises(dynorm.InvalidCursor):
            Word.objects.filter(group="g", name__gte="a").page(size=3, cursor=page.cursor)  # another filter
        with pytest.raises(dynorm.InvalidCursor):
            Word.objects.filter(group="h").page(size=3, cursor=page.cursor)                 # another partition
        with pytest.raises(dynorm.InvalidCursor):
            qs.reverse().page(size=3, cursor=page.cursor)                                    # another direction
        # a cursor signed with the key old dynorm derived from the table name
        p = qs.explain()
        context = {"t": p.table, "e": "WORD", "i": "", "kv": "v1", "q": p.fingerprint()}
        forged = encode_cursor({"PK": {"S": "G#other"}, "SK": {"S": "W#zzz"}}, context,
                               f"dynorm-cursor:{p.table}")
        with pytest.raises(dynorm.InvalidCursor):
            qs.page(size=3, cursor=forged)
    assert c.count == 0
    assert [w.name for w in qs.page(size=3, cursor=page.cursor).items] == words[3:6]


def test_cursors_need_a_secret_off_loopback(words: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    real = dynorm.conf.get_settings()
    remote = dataclasses.replace(real, endpoint="https://dynamodb.eu-west-1.amazonaws.com", cursor_secret=None)
    monkeypatch.setattr(dynorm.conf, "get_settings", lambda: remote)
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ConfigurationError, match="cursor_secret"):
            Word.objects.filter(group="g").page(size=3)
    assert c.count == 0
    secret = dataclasses.replace(real, cursor_secret="a-long-random-secret")
    monkeypatch.setattr(dynorm.conf, "get_settings", lambda: secret)
    page = Word.objects.filter(group="g").page(size=3)
    assert Word.objects.filter(group="g").page(size=3, cursor=page.cursor).items

# -- order, lossy keys and foreign key text (issue 11) -------------------------------------------
# These entities live in the physical table "keyorder" (KeyTable): dynorm_tables creates every
# registered table for every test, so no new physical table is declared for them except the one
# percent-encoded table a legacy layout needs.


UTC = dt.timezone.utc


class PercentTable(Table):
    class Meta:
        table_name = "keyorder-percent"
        key_encoding = "percent"


class DayEvent(Entity):
    """A lossy date spec followed by another field: the key orders by date, then by eid."""

    g = fields.String()
    day = fields.DateTime()
    eid = fields.String()

    class Meta:
        table = KeyTable
        entity_type = "DAY_EVENT"
        pk = "EV#{g}"
        sk = "D#{day:%Y-%m-%d}#{eid}"


class DottedDay(Entity):
    """An unordered spec (day first): the key text does not sort like the datetime."""

    g = fields.String()
    day = fields.DateTime()

    class Meta:
        table = KeyTable
        entity_type = "DOTTED_DAY"
        pk = "DM#{g}"
        sk = "D#{day:%d.%m.%Y %H%M%S%f}"


class Truncated(Entity):
    g = fields.String()
    name = fields.String()
    tag = fields.String(default="a")

    class Meta:
        table = KeyTable
        entity_type = "TRUNCATED"
        pk = "TR#{g}"
        sk = "N#{name:.3}"


class KeyWord(Entity):
    g = fields.String()
    k = fields.String()

    class Meta:
        table = KeyTable
        entity_type = "KEY_WORD"
        pk = "KW#{g}"
        sk = "K#{k}"


class LegacyName(Entity):
    """A percent-encoded (legacy) table: its key text does not sort like the names."""

    g = fields.String()
    name = fields.String()

    class Meta:
        table = PercentTable
        entity_type = "LEGACY_NAME"
        pk = "PN#{g}"
        sk = "N#{name}"


def _refused(qs: Any, says: str) -> None:
    """Evaluating ``qs`` raises InvalidQuery naming ``says``, before any request."""
    with dynorm.capture() as c:
        with pytest.raises(dynorm.InvalidQuery, match=says):
            list(qs)
    assert c.count == 0


@pytest.mark.usefixtures("dynorm_tables")
def test_order_by_a_field_behind_a_lossy_spec_is_refused() -> None:
    """order_by("day") on sk "D#{day:%Y-%m-%d}#{eid}": within one date the key orders by eid,
    not by day (it returned hours [9, 3, 15, 1]); refused, naming what can be ordered."""
    for i, h in enumerate([9, 3, 15, 1]):
        DayEvent.objects.create(g="g", day=dt.datetime(2024, 3, 1, h, tzinfo=UTC), eid="abcd"[i])
    _refused(DayEvent.objects.filter(g="g").order_by("day"), r"can order by: primary: sk")
    _refused(DayEvent.objects.filter(g="g").order_by("-day"), "order_by")
    assert [e.day.hour for e in DayEvent.objects.filter(g="g")] == [9, 3, 15, 1]  # sk order, as documented


@pytest.mark.usefixtures("dynorm_tables")
def test_order_by_a_field_behind_an_unordered_spec_is_refused() -> None:
    """order_by("day") on sk "D#{day:%d.%m.%Y ...}" (an unordered spec) returned day-of-month order."""
    for d in (dt.datetime(2024, 1, 31, tzinfo=UTC), dt.datetime(2024, 2, 1, tzinfo=UTC),
              dt.datetime(2023, 12, 15, tzinfo=UTC)):
        DottedDay.objects.create(g="g", day=d)
    _refused(DottedDay.objects.filter(g="g").order_by("day"), "cannot be served")


@pytest.mark.usefixtures("dynorm_tables")
def test_order_by_string_key_field_on_percent_encoded_table_is_refused() -> None:
    """key_encoding='percent' does not preserve order: order_by("name") returned a#, a#z after a$."""
    for n in ["a#", "a$", "a", "a%", "a#z", "b"]:
        LegacyName.objects.create(g="g", name=n)
    _refused(LegacyName.objects.filter(g="g").order_by("name"), "cannot be served")
    assert sorted(p.name for p in LegacyName.objects.filter(g="g")) == sorted(["a#", "a$", "a", "a%", "a#z", "b"])


@pytest.mark.usefixtures("dynorm_tables")
def test_earliest_by_a_field_behind_a_lossy_spec_is_refused() -> None:
    """earliest("day") returned the smallest eid of the date (9:00), not the earliest day (3:00)."""
    for h, e in ((9, "a"), (3, "b"), (15, "c")):
        DayEvent.objects.create(g="g", day=dt.datetime(2024, 3, 1, h, tzinfo=UTC), eid=e)
    with dynorm.capture() as c:
        with pytest.raises(dynorm.InvalidQuery, match="sorts by day"):
            DayEvent.objects.filter(g="g").earliest("day")
        with pytest.raises(dynorm.InvalidQuery, match="sorts by day"):
            DayEvent.objects.filter(g="g").latest("day")
    assert c.count == 0
    assert DayEvent.objects.filter(g="g").earliest().eid == "a"  # by the sort key: allowed


@pytest.mark.usefixtures("dynorm_tables")
def test_in_bulk_through_a_lossy_key_returns_only_matching_items() -> None:
    """in_bulk([{"name": "abcz"}]) on sk "N#{name:.3}" returned the stored item "abcq" (same key text)."""
    Truncated.objects.create(g="g", name="abcq", tag="q")
    with pytest.raises(Truncated.DoesNotExist):
        Truncated.objects.get(g="g", name="abcz")
    with dynorm.capture() as c:
        assert Truncated.objects.in_bulk([{"g": "g", "name": "abcz"}]) == {}
    assert c.operations == ["BatchGetItem"]
    got = Truncated.objects.in_bulk([{"g": "g", "name": "abcq"}, {"g": "g", "name": "abcz"}])
    assert [(k, o.tag) for k, o in got.items()] == [(("g", "abcq"), "q")]


@pytest.mark.usefixtures("dynorm_tables")
def test_in_bulk_through_a_lossy_date_spec_in_the_middle_of_the_key() -> None:
    """in_bulk([{g, day=8:00, eid}]) returned the 9:00 item (same "D#2024-03-01#a" key)."""
    nine = dt.datetime(2024, 3, 1, 9, tzinfo=UTC)
    DayEvent.objects.create(g="g", day=nine, eid="a")
    eight = dt.datetime(2024, 3, 1, 8, tzinfo=UTC)
    with pytest.raises(DayEvent.DoesNotExist):
        DayEvent.objects.get(g="g", day=eight, eid="a")
    assert DayEvent.objects.in_bulk([{"g": "g", "day": eight, "eid": "a"}]) == {}
    assert [o.day for o in DayEvent.objects.in_bulk([{"g": "g", "day": nine, "eid": "a"}]).values()] == [nine]


def _put_foreign(sk: str, k: str) -> None:
    """Another writer (e.g. the legacy percent encoding) stores an item whose key text is not
    this version's encoding of its attribute."""
    backend.call("PutItem", {"TableName": KeyTable.table_name(), "Item": {
        "PK": {"S": "KW#g"}, "SK": {"S": sk}, "entityType": {"S": "KEY_WORD"},
        "g": {"S": "g"}, "k": {"S": k}}})


@pytest.mark.usefixtures("dynorm_tables")
def test_begins_with_on_key_field_checks_the_value_not_only_the_key_text() -> None:
    """A percent-encoding writer's item (k="a#x" keyed "K#a%23x") came back for k__begins_with="a%"."""
    KeyWord.objects.create(g="g", k="a%b")
    _put_foreign("K#a%23x", "a#x")
    qs = KeyWord.objects.filter(g="g", k__begins_with="a%")
    assert sorted(o.k for o in qs) == ["a%b"]
    assert "begins_with" in (qs.explain().filter or "")  # the value is checked, not only the key text
    assert KeyWord.objects.filter(g="g", k__begins_with="a%").count() == 1
    assert sorted(o.k for o in KeyWord.objects.filter(g="g", k__gte="a%")) == ["a%b"]


@pytest.mark.usefixtures("dynorm_tables")
def test_get_by_key_never_returns_an_item_whose_key_field_differs() -> None:
    """get(k="a%23x") is a GetItem of "K#a%23x"; the item there has k="a#x" and was returned."""
    _put_foreign("K#a%23x", "a#x")
    with dynorm.capture() as c:
        with pytest.raises(KeyWord.DoesNotExist):
            KeyWord.objects.get(g="g", k="a%23x")
    assert c.operations == ["GetItem"]
    KeyWord.objects.create(g="g", k="b")
    assert KeyWord.objects.get(g="g", k="b").k == "b"
