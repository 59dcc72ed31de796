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
from dynorm import Entity, Table, fields
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
    assert "at" in (qs.explain().readable(qs.explain().filter) or "")
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
