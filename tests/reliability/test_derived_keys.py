"""Key attributes derived from fields never disagree with the fields stored beside them.

A GSI or LSI key is computed client-side from other fields (``sk="W#{warehouse}#N#{name}"``).
A write that rewrites it from a value the client does not actually know (a stale read, a field
never read) would leave an item whose keys say one thing and whose fields another: queries then
return wrong answers with no error. Every write path either knows each field a key it rewrites
is built from (it writes it, or it read it and the write is conditional on its stored value) or
refuses before any request. Checked on the table itself (raw GetItem/Scan), not only through
dynorm's reads.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dynorm
from dynorm import Entity, F, Index, Table, backend, fields
from tests.faults import Hook, stored_item


class Depots(Table):
    class Meta:
        table_name = "derived_keys"
        gsi_count = 2
        lsis = {"LSI1": "LSI1SK"}


class OItem(Entity):
    """Unversioned, with index keys built from two fields each (AWS's HR/order example style)."""

    sku = fields.String()
    warehouse = fields.String(null=True)
    name = fields.String(null=True)
    n = fields.Integer(default=0)
    note = fields.String(null=True)

    class Meta:
        table = Depots
        entity_type = "OITEM"
        pk = "{version}#I#{sku}"
        sk = "METADATA"
        indexes = {
            "by_name": Index("GSI1", pk="{version}#N#{name}", sk="W#{warehouse}"),
            "by_place": Index("GSI2", pk="{version}#ITEMS", sk="W#{warehouse}#N#{name}"),
            "local": Index("LSI1", sk="N#{name}#W#{warehouse}"),
        }


class VItem(Entity):
    """Versioned, with a counter, a set and a list changed by expressions."""

    sku = fields.String()
    warehouse = fields.String(null=True)
    n = fields.Integer(default=0)
    tags = fields.Set(str)
    log = fields.List(null=True)
    note = fields.String(null=True)
    version = fields.Version()

    class Meta:
        table = Depots
        entity_type = "VITEM"
        pk = "{version}#V#{sku}"
        sk = "METADATA"
        indexes = {"by_place": Index("GSI2", pk="{version}#VITEMS", sk="W#{warehouse}#V#{sku}")}


class Chore(Entity):
    """Index keys built from a field with a callable default and from a DateTime: how another writer stored
    them (absent; ``...T12:00:00Z``) is not how dynorm serialises the values read."""

    ticket_id = fields.String()
    status = fields.String()
    tier = fields.String(default=lambda: "basic")
    due = fields.DateTime(null=True)

    class Meta:
        table = Depots
        entity_type = "TICKET"
        pk = "{version}#T#{ticket_id}"
        sk = "METADATA"
        indexes = {"by_tier": Index("GSI1", pk="{version}#TIER#{tier}", sk="S#{status}"),
                   "by_due": Index("GSI2", pk="{version}#S#{status}", sk="DUE#{due}")}


class SharedDepots(Table):
    """``Data`` is the sort key of GSI1 and GSI2 (docs/modelling.md's overloaded layout)."""

    class Meta:
        table_name = "derived_keys_shared"
        gsis = {"GSI1": ("GSI1PK", "Data"), "GSI2": ("GSI2PK", "Data")}


class Crew(Entity):
    """Two sparse indexes writing one ``Data``: whether it stays depends on the fields of both."""

    staff_id = fields.String()
    name = fields.String()
    warehouse = fields.String(null=True)
    hired = fields.Integer(null=True)
    note = fields.String(null=True)

    class Meta:
        table = SharedDepots
        entity_type = "STAFF"
        pk = "{version}#STAFF#{staff_id}"
        sk = "STAFF"
        indexes = {"by_warehouse": Index("GSI1", pk="{version}#WH#{warehouse}", sk="NAME#{name}"),
                   "by_hired": Index("GSI2", pk="{version}#HIRED#{hired}", sk="NAME#{name}")}


class DoorBadge(Entity):
    """The shared ``Data`` is built from the primary key only: the other index's partition field decides it."""

    badge_id = fields.String()
    door = fields.String(null=True)
    team = fields.String(null=True)

    class Meta:
        table = SharedDepots
        entity_type = "BADGE"
        pk = "{version}#BADGE#{badge_id}"
        sk = "BADGE"
        indexes = {"by_door": Index("GSI1", pk="{version}#DOOR#{door}", sk="B#{badge_id}"),
                   "by_team": Index("GSI2", pk="{version}#TEAM#{team}", sk="B#{badge_id}")}


# -- what is checked on the table ------------------------------------------------------------
def raw_items(model: type[Entity]) -> list[dict[str, Any]]:
    """Every stored item of ``model``'s entity type, as DynamoDB JSON (a consistent Scan, all pages)."""
    tmeta = model._meta.table._meta
    params: dict[str, Any] = {"TableName": model._meta.table.table_name(), "ConsistentRead": True}
    out: list[dict[str, Any]] = []
    while True:
        resp = backend.call("Scan", params)
        out += [i for i in resp.get("Items", []) if i.get(tmeta.type_attribute) == {"S": model._meta.entity_type}]
        if "LastEvaluatedKey" not in resp:
            return out
        params["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def assert_keys_match_fields(model: type[Entity]) -> None:
    """Every stored item's key attributes equal the keys rendered from its stored fields."""
    for raw in raw_items(model):
        values = model.from_raw_data(dict(raw)).attribute_values
        for attr, text in model._meta.key_attributes(values).items():
            assert raw.get(attr) == ({"S": text} if text is not None else None), (
                f"{attr} of {raw['PK']['S']} is {raw.get(attr)} but its fields give {text!r}: {raw}")


def change_warehouse(obj: Entity, way: str, warehouse: str) -> None:
    if way == "update":
        obj.update(warehouse=warehouse)
    elif way == "save_update_fields":
        obj.warehouse = warehouse  # type: ignore[attr-defined]
        obj.save(update_fields=["warehouse"])
    elif way == "bulk_update":
        obj.warehouse = warehouse  # type: ignore[attr-defined]
        type(obj).objects.bulk_update([obj], ["warehouse"])
    else:
        with dynorm.transaction() as tx:
            tx.update(obj, warehouse=warehouse)


WAYS = ["update", "save_update_fields", "bulk_update", "transaction"]


def _stale_error(exc: BaseException) -> BaseException:
    """The StaleWrite behind ``exc`` (itself, or the reason of a one-action transaction)."""
    if isinstance(exc, dynorm.TransactionCanceled):
        return exc.reasons[0]["error"]  # type: ignore[no-any-return]
    return exc


# -- 1. index keys rebuilt from stale or unread values ---------------------------------------
@pytest.mark.parametrize("way", WAYS)
def test_a_write_from_a_stale_read_never_rebuilds_an_index_key_from_the_old_value(way: str) -> None:
    OItem.objects.create(sku="s1", warehouse="north", name="Alpha")
    mine = OItem.objects.get(sku="s1")
    OItem.objects.get(sku="s1").update(name="Beta")  # another process renames it
    before = stored_item(OItem, sku="s1")
    with pytest.raises((dynorm.StaleWrite, dynorm.TransactionCanceled)) as err:
        change_warehouse(mine, way, "south")
    stale = _stale_error(err.value)
    assert isinstance(stale, dynorm.StaleWrite)
    assert "name" in str(stale) and "refresh_from_db()" in str(stale) and "nothing was written" in str(stale)
    assert stored_item(OItem, sku="s1") == before  # a write reported failed changed nothing
    assert_keys_match_fields(OItem)
    assert [o.sku for o in OItem.objects.using("by_name").filter(name="Beta")] == ["s1"]
    assert list(OItem.objects.using("by_name").filter(name="Alpha")) == []
    mine.refresh_from_db()  # the remedy: read again, apply again
    change_warehouse(mine, way, "south")
    assert_keys_match_fields(OItem)
    assert [(o.sku, o.warehouse) for o in OItem.objects.using("by_name").filter(name="Beta")] == [("s1", "south")]


@pytest.mark.parametrize("way", WAYS)
def test_a_field_read_as_none_is_pinned_as_absent(way: str) -> None:
    OItem.objects.create(sku="s3", warehouse="north")  # no name: out of the by_name index
    mine = OItem.objects.get(sku="s3")
    OItem.objects.get(sku="s3").update(name="Gamma")
    before = stored_item(OItem, sku="s3")
    with pytest.raises((dynorm.StaleWrite, dynorm.TransactionCanceled)) as err:
        change_warehouse(mine, way, "south")  # rendered with name None, it would REMOVE the GSI keys
    assert isinstance(_stale_error(err.value), dynorm.StaleWrite)
    assert stored_item(OItem, sku="s3") == before
    assert [o.sku for o in OItem.objects.using("by_name").filter(name="Gamma")] == ["s3"]
    assert_keys_match_fields(OItem)


def test_a_field_assigned_but_not_written_is_not_used_for_an_index_key() -> None:
    OItem.objects.create(sku="s4", warehouse="north", name="Alpha")
    mine = OItem.objects.get(sku="s4")
    mine.name = "Zed"  # assigned in memory, never written
    mine.warehouse = "south"
    before = stored_item(OItem, sku="s4")
    with pytest.raises(dynorm.StaleWrite) as err:
        mine.save(update_fields=["warehouse"])
    assert "'Alpha'" in str(err.value) and "'Zed'" in str(err.value)
    assert stored_item(OItem, sku="s4") == before
    assert_keys_match_fields(OItem)


def test_save_update_fields_of_an_instance_never_read_refuses_a_key_it_cannot_compute() -> None:
    OItem.objects.create(sku="s2", warehouse="north", name="Alpha")
    before = stored_item(OItem, sku="s2")
    with dynorm.capture() as c, pytest.raises(dynorm.ValidationError) as err:
        OItem(sku="s2", warehouse="south").save(update_fields=["warehouse"])  # Django's update-without-read
    assert c.count == 0  # refused before any request
    message = str(err.value)
    assert err.value.entity == "OItem" and err.value.field == "name"
    assert "name" in message and "GSI1PK" in message and "read the item first" in message
    # an explicit None is no knowledge of the stored value either
    with dynorm.capture() as c, pytest.raises(dynorm.ValidationError):
        OItem(sku="s2", warehouse="south", name=None).save(update_fields=["warehouse"])
    assert c.count == 0
    with dynorm.capture() as c, pytest.raises(dynorm.ValidationError):
        OItem.objects.filter(sku="s2").update(warehouse="south")
    with pytest.raises(dynorm.ValidationError):
        with dynorm.transaction() as tx:
            tx.update(OItem, {"sku": "s2"}, warehouse="south")
    assert c.count == 0
    assert stored_item(OItem, sku="s2") == before
    # every field of the keys given: nothing unknown, the write goes through
    OItem(sku="s2", warehouse="south", name="Alpha").save(update_fields=["warehouse", "name"])
    OItem.objects.filter(sku="s2").update(warehouse="east", name="Alpha")
    # a field that no key needs is written without reading anything
    OItem(sku="s2").save(update_fields=["note"])
    assert_keys_match_fields(OItem)
    stored = OItem.objects.get(sku="s2")
    assert (stored.warehouse, stored.name) == ("east", "Alpha")


def test_an_instance_written_blind_stays_unknown_until_read() -> None:
    OItem.objects.create(sku="s5", warehouse="north", name="Alpha")
    blind = OItem(sku="s5", note="x")
    blind.save(update_fields=["note"])  # written, but name and warehouse were never read
    with dynorm.capture() as c, pytest.raises(dynorm.ValidationError):
        blind.update(warehouse="south")
    assert c.count == 0
    blind.refresh_from_db()
    blind.update(warehouse="south")
    assert_keys_match_fields(OItem)
    assert [o.sku for o in OItem.objects.using("by_name").filter(name="Alpha")] == ["s5"]


# -- 1b. an attribute several indexes write is decided from every one of them ----------------
def _hired(staff_id: str) -> list[str]:
    return [s.staff_id for s in Crew.objects.using("by_hired").filter(hired=2019) if s.staff_id == staff_id]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("race", ["hired_set", "hired_removed"])
def test_leaving_one_index_never_decides_a_shared_attribute_from_a_stale_read_of_the_other(
        way: str, race: str) -> None:
    sid = f"{race}-{way}"
    Crew.objects.create(staff_id=sid, name="Ann", warehouse="W1", hired=None if race == "hired_set" else 2019)
    mine = Crew.objects.get(staff_id=sid)
    # another process puts it in (or takes it out of) by_hired, whose sort key is Data too
    Crew.objects.get(staff_id=sid).update(hired=2019 if race == "hired_set" else None)
    before = stored_item(Crew, staff_id=sid)
    with pytest.raises((dynorm.StaleWrite, dynorm.TransactionCanceled)) as err:
        change_warehouse(mine, way, None)  # Data would go (or stay) as if hired were as read
    stale = _stale_error(err.value)
    assert isinstance(stale, dynorm.StaleWrite) and "hired" in str(stale), stale
    assert stored_item(Crew, staff_id=sid) == before
    assert_keys_match_fields(Crew)
    mine.refresh_from_db()  # the remedy: read again, apply again
    change_warehouse(mine, way, None)
    assert_keys_match_fields(Crew)
    assert _hired(sid) == ([sid] if race == "hired_set" else [])
    assert list(Crew.objects.using("by_warehouse").filter(warehouse="W1")) == []


@pytest.mark.parametrize("way", WAYS)
def test_a_shared_attribute_is_not_decided_from_a_value_assigned_only_in_memory(way: str) -> None:
    sid = f"mem-{way}"
    Crew.objects.create(staff_id=sid, name="Ann", warehouse="W1", hired=2019)
    mine = Crew.objects.get(staff_id=sid)
    mine.hired = None  # assigned, never written: the stored item is still in by_hired
    before = stored_item(Crew, staff_id=sid)
    with pytest.raises((dynorm.StaleWrite, dynorm.TransactionCanceled)) as err:
        change_warehouse(mine, way, None)
    assert isinstance(_stale_error(err.value), dynorm.StaleWrite)
    assert stored_item(Crew, staff_id=sid) == before
    assert _hired(sid) == [sid]
    assert_keys_match_fields(Crew)


def test_a_write_by_key_never_decides_a_shared_attribute_it_cannot_know() -> None:
    for i in range(4):
        DoorBadge.objects.create(badge_id=f"b{i}", door="D", team="T")
    before = [stored_item(DoorBadge, badge_id=f"b{i}") for i in range(4)]
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError) as err:
            DoorBadge.objects.filter(badge_id="b0").update(door=None)  # Data stays only while team is stored
        with pytest.raises(dynorm.ValidationError):
            DoorBadge(badge_id="b1", door=None).save(update_fields=["door"])
        with pytest.raises(dynorm.ValidationError):
            with dynorm.transaction() as tx:
                tx.update(DoorBadge, {"badge_id": "b2"}, door=None)
        with pytest.raises(dynorm.ValidationError):
            DoorBadge.objects.bulk_update([DoorBadge(badge_id="b3", door=None)], ["door"])
    assert c.count == 0  # refused before any request
    e = err.value
    assert e.entity == "DoorBadge" and e.field == "team"
    assert "by_team" in str(e) and "Data" in str(e) and "read the item first" in str(e)
    assert [stored_item(DoorBadge, badge_id=f"b{i}") for i in range(4)] == before
    # the other index's field written, read, or claimed in the key (pinned like a read): it goes through
    DoorBadge.objects.filter(badge_id="b0").update(door=None, team="T")
    DoorBadge.objects.get(badge_id="b1").update(door=None)
    with dynorm.transaction() as tx:
        tx.update(DoorBadge, {"badge_id": "b2", "team": "T"}, door=None)
    with pytest.raises(dynorm.TransactionCanceled) as canceled:
        with dynorm.transaction() as tx:
            tx.update(DoorBadge, {"badge_id": "b3", "team": "X"}, door=None)  # a wrong claim changes nothing
    assert isinstance(canceled.value.reasons[0]["error"], dynorm.StaleWrite)
    assert stored_item(DoorBadge, badge_id="b3") == before[3]
    assert_keys_match_fields(DoorBadge)
    assert sorted(b.badge_id for b in DoorBadge.objects.using("by_team").filter(team="T")) == ["b0", "b1", "b2", "b3"]


@pytest.mark.parametrize("way", WAYS)
def test_leaving_the_last_index_that_writes_a_shared_attribute_removes_it(way: str) -> None:
    sid = f"last-{way}"
    Crew.objects.create(staff_id=sid, name="Ann", hired=2019)  # in by_hired only: Data = NAME#Ann
    obj = Crew.objects.get(staff_id=sid)
    if way == "update":
        obj.update(hired=None)
    elif way == "save_update_fields":
        obj.hired = None
        obj.save(update_fields=["hired"])
    elif way == "bulk_update":
        obj.hired = None
        Crew.objects.bulk_update([obj], ["hired"])
    else:
        with dynorm.transaction() as tx:
            tx.update(obj, hired=None)
    # by_warehouse, declared first, also writes Data but was not rewritten: Data was left behind
    assert not {"Data", "GSI1PK", "GSI2PK"} & set(stored_item(Crew, staff_id=sid))
    assert_keys_match_fields(Crew)


# -- 1c. a pin compares the attribute as stored, so the retry it advises can succeed ----------
def _put_foreign_ticket(ticket_id: str, **attributes: Any) -> None:
    """Store a ticket as another writer would (its keys rendered from what dynorm reads of it)."""
    item = {"PK": {"S": f"v1#T#{ticket_id}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "TICKET"},
            "ticket_id": {"S": ticket_id}, "status": {"S": "new"}, **attributes}
    keys = Chore._meta.key_attributes(Chore.from_raw_data(dict(item)).attribute_values)
    item.update({a: {"S": t} for a, t in keys.items() if t is not None})
    backend.call("PutItem", {"TableName": Depots.table_name(), "Item": item})


def _set_status(obj: Chore, way: str, status: str) -> None:
    if way == "update":
        obj.update(status=status)
    elif way == "save_update_fields":
        obj.status = status
        obj.save(update_fields=["status"])
    elif way == "bulk_update":
        obj.status = status
        Chore.objects.bulk_update([obj], ["status"])
    else:
        with dynorm.transaction() as tx:
            tx.update(obj, status=status)


@pytest.mark.parametrize("way", WAYS)
def test_a_pin_holds_on_an_attribute_stored_absent_or_in_another_form(way: str) -> None:
    _put_foreign_ticket(f"absent-{way}")  # no tier: read as the callable default "basic"
    _put_foreign_ticket(f"text-{way}", tier={"S": "gold"}, due={"S": "2024-05-01T12:00:00Z"})
    for tid in (f"absent-{way}", f"text-{way}"):
        obj = Chore.objects.get(ticket_id=tid)
        _set_status(obj, way, "paid")  # pinned as stored: it holds (it failed on every retry before)
        assert Chore.objects.get(ticket_id=tid).status == "paid"
    assert_keys_match_fields(Chore)
    assert [t.ticket_id for t in Chore.objects.using("by_tier").filter(tier="basic", status="paid")] == [
        f"absent-{way}"]


def test_a_pin_as_stored_still_catches_a_concurrent_change() -> None:
    _put_foreign_ticket("race", tier={"S": "gold"}, due={"S": "2024-05-01T12:00:00Z"})
    mine = Chore.objects.get(ticket_id="race")
    Chore.objects.get(ticket_id="race").update(due=None, tier="silver")
    before = stored_item(Chore, ticket_id="race")
    with pytest.raises(dynorm.StaleWrite) as err:
        mine.update(status="paid")
    assert "due" in str(err.value) and "tier" in str(err.value)
    assert stored_item(Chore, ticket_id="race") == before
    mine.refresh_from_db()
    mine.update(status="paid")
    assert_keys_match_fields(Chore)


@pytest.mark.parametrize("way", WAYS)
def test_a_datetime_stored_with_an_offset_keys_the_instant_it_names(way: str) -> None:
    """Another writer stored ``due`` as 10:00+02:00 (08:00 UTC) with keys for that instant. It was read
    as 10:00 UTC (the offset dropped), so a write rewriting ``by_due`` moved the item two hours later
    in the index, where a query for the time it names missed it."""
    eight = dt.datetime(2026, 1, 1, 8, 0, tzinfo=dt.timezone.utc)
    item = {"PK": {"S": f"v1#T#tz-{way}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "TICKET"},
            "ticket_id": {"S": f"tz-{way}"}, "status": {"S": "new"}, "tier": {"S": "gold"},
            "due": {"S": "2026-01-01T10:00:00+02:00"}, "GSI1PK": {"S": "v1#TIER#gold"}, "GSI1SK": {"S": "S#new"},
            "GSI2PK": {"S": "v1#S#new"}, "GSI2SK": {"S": "DUE#2026-01-01T08:00:00.000000Z"}}
    backend.call("PutItem", {"TableName": Depots.table_name(), "Item": item})
    obj = Chore.objects.get(ticket_id=f"tz-{way}")
    assert obj.due == eight
    _set_status(obj, way, "paid")  # rewrites GSI2 (by_due) from the value read; due is pinned as stored
    assert stored_item(Chore, ticket_id=f"tz-{way}")["GSI2SK"] == {"S": "DUE#2026-01-01T08:00:00.000000Z"}
    at_eight = Chore.objects.using("by_due").filter(status="paid", due=eight)  # the key condition alone
    assert [t.ticket_id for t in at_eight] == [f"tz-{way}"]
    assert_keys_match_fields(Chore)


# -- 2. a transaction never leaves an instance older than its version ------------------------
@pytest.mark.parametrize("name, change, expected", [
    ("n", F("n") - 3, 7),
    ("tags", F("tags").add({"b"}), {"a", "b"}),
    ("log", F("log").append(["y"]), ["x", "y"]),
])
def test_after_a_transaction_an_expression_field_is_never_written_back_old(name: str, change: Any,
                                                                            expected: Any) -> None:
    VItem.objects.create(sku="v1", n=10, tags={"a"}, log=["x"])
    obj = VItem.objects.get(sku="v1")
    with dynorm.transaction() as tx:
        tx.update(obj, **{name: change})
    assert obj.version == 2
    obj.note = "after"
    obj.save()  # used to pass the version check and write the old value back
    stored = VItem.from_raw_data(stored_item(VItem, sku="v1"))
    assert getattr(stored, name) == expected and stored.note == "after" and stored.version == 3
    assert getattr(obj, name) == expected


def test_after_a_transaction_reading_an_expression_field_loads_its_new_value() -> None:
    VItem.objects.create(sku="v2", n=10)
    obj = VItem.objects.get(sku="v2")
    with dynorm.transaction() as tx:
        tx.update(obj, n=F("n") + 5, note="tx")
    assert obj.note == "tx" and obj.version == 2
    with dynorm.capture() as c:
        assert obj.n == 15  # never the old 10 beside version 2
    assert c.operations == ["GetItem"]


def test_after_an_async_transaction_asave_loads_the_expression_field_first(io: Any) -> None:
    VItem.objects.create(sku="v4", n=10)
    obj = VItem.objects.get(sku="v4")
    io.transaction(lambda tx: tx.update(obj, n=F("n") - 3))
    if io.is_async:  # a blocking GetItem inside the event loop is refused, never an old value shown
        with pytest.raises(dynorm.SynchronousOnlyOperation, match="F\\(\\) expression"):
            io.run(_read_n(obj))
    obj.note = "after"
    io(obj, "save")
    stored = VItem.from_raw_data(stored_item(VItem, sku="v4"))
    assert (stored.n, stored.note, stored.version) == (7, "after", 3)


async def _read_n(obj: Any) -> Any:
    return obj.n


@pytest.mark.parametrize("deferred_by", ["transaction", "only"])
def test_bulk_update_loads_a_deferred_field_first_in_sync_and_async_alike(deferred_by: str, io: Any) -> None:
    """``abulk_update`` read a deferred field while planning, so the blocking loader raised
    SynchronousOnlyOperation; it now awaits the same one GetItem ``bulk_update`` sends."""
    VItem.objects.create(sku="v6", n=10, note="before")
    if deferred_by == "transaction":
        obj = VItem.objects.get(sku="v6")
        io.transaction(lambda tx: tx.update(obj, n=F("n") + 5))  # n deferred: its result did not come back
        written = ["n", "note"]
    else:
        obj = VItem.objects.only("sku", "version").get(sku="v6")  # n, note, ... deferred
        written = ["n", "note"]
    obj.note = "after"
    with dynorm.capture() as c:
        assert io(VItem.objects, "bulk_update", [obj], written) == 1
    assert c.operations == ["GetItem", "TransactWriteItems"]  # load, then write, in both APIs
    stored = VItem.from_raw_data(stored_item(VItem, sku="v6"))
    n = 15 if deferred_by == "transaction" else 10
    assert (stored.n, stored.note) == (n, "after")  # never the value from before the transaction
    assert (obj.n, obj.note) == (n, "after")


def test_after_a_transaction_a_concurrent_change_makes_the_next_save_stale() -> None:
    VItem.objects.create(sku="v3", n=10)
    obj = VItem.objects.get(sku="v3")
    with dynorm.transaction() as tx:
        tx.update(obj, n=F("n") - 3)
    VItem.objects.get(sku="v3").update(n=F("n") + 100)  # another writer: n = 107, version 3
    obj.note = "late"
    with pytest.raises(dynorm.StaleWrite):
        obj.save()
    stored = VItem.from_raw_data(stored_item(VItem, sku="v3"))
    assert (stored.n, stored.note, stored.version) == (107, None, 3)


# -- random sequences of partial writes from several stale instances --------------------------
_VALUES = {"warehouse": ["north", "south", None], "name": ["Alpha", "Beta", None], "note": ["x", "y", None]}
_changes = st.dictionaries(st.sampled_from(sorted(_VALUES)), st.integers(0, 2), min_size=1, max_size=3).map(
    lambda picks: {f: _VALUES[f][i] for f, i in picks.items()})
_step = st.tuples(st.integers(0, 2),  # which of three instances acts
                  st.sampled_from(["update", "save_update_fields", "bulk_update", "transaction", "by_key",
                                   "blind", "assign", "refresh", "increment"]),
                  _changes)
_example = iter(range(10**6))


def _act(objs: list[OItem], sku: str, who: int, kind: str, changes: dict[str, Any]) -> None:
    obj = objs[who]
    if kind == "update":
        obj.update(**changes)
    elif kind == "save_update_fields":
        for f, v in changes.items():
            setattr(obj, f, v)
        obj.save(update_fields=list(changes))
    elif kind == "bulk_update":
        for f, v in changes.items():
            setattr(obj, f, v)
        OItem.objects.bulk_update([obj], list(changes))
    elif kind == "transaction":
        with dynorm.transaction() as tx:
            tx.update(obj, n=F("n") + 1, **changes)
    elif kind == "by_key":
        OItem.objects.filter(sku=sku).update(**changes)
    elif kind == "blind":
        objs[who] = OItem(sku=sku, **changes)
        objs[who].save(update_fields=list(changes))
    elif kind == "assign":  # changed in memory only, never written
        for f, v in changes.items():
            setattr(obj, f, v)
    elif kind == "refresh":
        obj.refresh_from_db()
    else:
        obj.update(n=F("n") + 1)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=_changes, steps=st.lists(_step, min_size=1, max_size=10))
def test_random_partial_writes_from_stale_instances_keep_every_key_equal_to_its_fields(
        start: dict[str, Any], steps: list[tuple[int, str, dict[str, Any]]]) -> None:
    sku = f"h{next(_example)}"
    OItem.objects.create(sku=sku, **start)
    objs = [OItem.objects.get(sku=sku) for _ in range(3)]
    for who, kind, changes in steps:
        before = stored_item(OItem, sku=sku)
        try:
            _act(objs, sku, who, kind, changes)
        except (dynorm.StaleWrite, dynorm.TransactionCanceled, dynorm.ValidationError) as exc:
            if isinstance(exc, dynorm.TransactionCanceled):
                assert all(isinstance(r["error"], dynorm.StaleWrite) for r in exc.reasons if r["error"]), exc
            assert stored_item(OItem, sku=sku) == before, f"{kind} {changes} failed ({exc}) but changed the item"
        else:
            if kind not in ("assign", "refresh", "increment"):  # acknowledged means present
                stored = OItem.from_raw_data(stored_item(OItem, sku=sku))
                assert {f: getattr(stored, f) for f in changes} == changes, (kind, changes)
        assert_keys_match_fields(OItem)


def test_a_deferred_load_that_fails_leaves_the_fields_deferred_and_the_next_save_loads_them() -> None:
    """The loader marked the fields loaded before its GetItem and restored them only for a missing or
    unreadable item: after a GetItem that got no answer, the instance planned writes as if the fields
    were not deferred, and a whole save() would have removed their attributes. (Sync: the fault is a
    botocore response injected before send.)"""
    from tests.faults import fake_response

    VItem.objects.create(sku="v7", n=10, note="kept")
    obj = VItem.objects.get(sku="v7")
    with dynorm.transaction() as tx:
        tx.update(obj, n=F("n") + 5)  # n deferred: its result did not come back
    obj.warehouse = "W1"

    def throttle(**_: Any) -> Any:
        return fake_response(400, {"__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                                   "message": "injected"})

    dynorm.configure(max_attempts=1)  # (the test plugin undoes it)
    with Hook("before-send.dynamodb.GetItem", throttle):
        with pytest.raises(dynorm.ServiceError):
            obj.save()
    assert obj._state.deferred is not None  # still deferred, not taken as absent
    obj.save()  # loads them (GetItem), then writes the whole item
    stored = VItem.from_raw_data(stored_item(VItem, sku="v7"))
    assert (stored.n, stored.note, stored.warehouse) == (15, "kept", "W1")
