"""The number and kind of requests of every instance write path, sync and asyncio.

Each test pins the operations sent, the actions of each TransactWriteItems and the condition's
mention of the stored entity type, for one path of ``save()``, ``update()``, ``delete()`` and
``refresh_from_db()``: versioned and unversioned, ``update_fields``, fields deferred by an ``F()``
in a transaction, an instance read under an older key version (``Meta.read_versions``: the move),
the create checks and the upsert that finds an item under an older key.
"""

from __future__ import annotations

from typing import Any

import pytest

import dynorm
from dynorm import F
from tests.models import Counter, Tally
from tests.reliability.test_rollout_creates import RcItem, RcPlain, RollCreates, _put_old, _table

MOVE = [("GetItem", None, False, True), ("TransactWriteItems", ["Put", "Delete"], True, False)]


def _requests(cap: Any) -> list[tuple[Any, ...]]:
    """(operation, action kinds or None, conditioned on the entity type, consistent) per request."""
    out: list[tuple[Any, ...]] = []
    for r in cap.requests:
        p = r.params
        kinds = [next(iter(a)) for a in p["TransactItems"]] if r.operation == "TransactWriteItems" else None
        typed = "entityType" in (p.get("ExpressionAttributeNames") or {}).values() and "ConditionExpression" in p
        if kinds is not None:
            typed = any("entityType" in (next(iter(a.values())).get("ExpressionAttributeNames") or {}).values()
                        for a in p["TransactItems"])
        out.append((r.operation, kinds, typed, p.get("ConsistentRead", False)))
    return out


# -- versioned (Counter) ----------------------------------------------------------------------
def test_versioned_save_create_update_update_fields_delete(io: Any) -> None:
    c = Counter(name="a", value=1)
    with dynorm.capture() as cap:
        io(c, "save")
    assert _requests(cap) == [("PutItem", None, False, False)]
    c.value = 2
    with dynorm.capture() as cap:
        io(c, "save")
    assert _requests(cap) == [("UpdateItem", None, True, False)]
    c.note = "n"
    with dynorm.capture() as cap:
        io(c, "save", update_fields=["note"])
    assert _requests(cap) == [("UpdateItem", None, True, False)]
    with dynorm.capture() as cap:
        io(c, "update", value=F("value") + 1)
    assert _requests(cap) == [("UpdateItem", None, True, False)]
    assert c.version == 4 and c.value == 3
    with dynorm.capture() as cap:
        io(c, "delete")
    assert _requests(cap) == [("DeleteItem", None, True, False)]


def test_create_is_one_conditional_put(io: Any) -> None:
    with dynorm.capture() as cap:
        io(Counter.objects, "create", name="b")
    assert _requests(cap) == [("PutItem", None, False, False)]
    with dynorm.capture() as cap:
        with pytest.raises(dynorm.AlreadyExists):
            io(Counter.objects, "create", name="b")
    assert _requests(cap) == [("PutItem", None, False, False)]


# -- unversioned (Tally) ----------------------------------------------------------------------
def test_unversioned_save_update_delete(io: Any) -> None:
    t = Tally(name="a")
    with dynorm.capture() as cap:
        io(t, "save")
    assert _requests(cap) == [("UpdateItem", None, True, False)]
    t.note = "x"
    with dynorm.capture() as cap:
        io(t, "save", update_fields=["note"])
    assert _requests(cap) == [("UpdateItem", None, True, False)]
    with dynorm.capture() as cap:
        io(t, "update", n=F("n") + 2)  # not idempotent, no version: one transaction, nothing read back
    assert _requests(cap) == [("TransactWriteItems", ["Update"], True, False)]
    with dynorm.capture() as cap:
        assert t.n == 2  # the result, loaded on first read
    assert _requests(cap) == [("GetItem", None, False, True)]
    with dynorm.capture() as cap:
        io(t, "update", note="y")
    assert _requests(cap) == [("UpdateItem", None, True, False)]
    with dynorm.capture() as cap:
        io(t, "delete")
    assert _requests(cap) == [("DeleteItem", None, True, False)]


def test_f_fields_deferred_after_a_transaction_are_loaded_before_a_save(io: Any) -> None:
    t = Tally.objects.create(name="d", n=1)
    io.transaction(lambda tx: tx.update(t, n=F("n") + 1))
    assert t._state.deferred is not None
    t.note = "after"
    with dynorm.capture() as cap:
        io(t, "save")
    assert _requests(cap) == [("GetItem", None, False, True), ("UpdateItem", None, True, False)]
    assert Tally.objects.get(name="d").n == 2


def test_update_fields_of_an_only_read_loads_a_field_it_needs_first(io: Any) -> None:
    from tests.models import Store

    Store.objects.create(store_id="s", name="Main", city="Oslo")
    s = io.list(Store.objects.filter(store_id="s").only("name"))[0]
    with dynorm.capture() as cap:
        io(s, "save", update_fields=["city"])  # city was not read: loaded first, never written as None
    assert _requests(cap) == [("GetItem", None, False, False), ("UpdateItem", None, True, False)]
    s = io.list(Store.objects.filter(store_id="s").only("name"))[0]
    s.name = "Main 2"
    with dynorm.capture() as cap:
        io(s, "save", update_fields=["name"])  # needs nothing deferred
    assert _requests(cap) == [("UpdateItem", None, True, False)]


def test_refresh_from_db_is_one_consistent_getitem(io: Any) -> None:
    c = Counter.objects.create(name="r", value=5)
    with dynorm.capture() as cap:
        io(c, "refresh_from_db")
    assert _requests(cap) == [("GetItem", None, False, True)]
    with dynorm.capture() as cap:
        io(c, "refresh_from_db", fields=["value"])
    assert _requests(cap) == [("GetItem", None, False, True)]
    assert "ProjectionExpression" in cap.requests[0].params
    with dynorm.capture() as cap:
        io(c, "refresh_from_db", fields=[])
    assert _requests(cap) == []


# -- key-version rollouts (Meta.read_versions) -------------------------------------------------
def _read_old(io: Any, model: Any, item_id: str) -> Any:
    _put_old(model, item_id)
    obj = io(model.objects, "get", item_id=item_id)
    assert obj._state.fallback == "v1"
    return obj


def test_save_of_an_instance_read_under_an_older_key_moves_it_first(io: Any) -> None:
    for model in (RcItem, RcPlain):
        obj = _read_old(io, model, "s")
        obj.note = "new"
        with dynorm.capture() as cap:
            io(obj, "save")
        assert _requests(cap) == [*MOVE, ("UpdateItem", None, True, False)]
    assert set(_table()) == {"v2#I#s", "v2#P#s"}


def test_update_of_an_instance_read_under_an_older_key_moves_it_first(io: Any) -> None:
    obj = _read_old(io, RcItem, "u")
    with dynorm.capture() as cap:
        io(obj, "update", note="new")
    assert _requests(cap) == [*MOVE, ("UpdateItem", None, True, False)]


def test_delete_of_an_instance_read_under_an_older_key_moves_it_then_deletes_every_version(io: Any) -> None:
    for model in (RcItem, RcPlain):
        obj = _read_old(io, model, "x")
        with dynorm.capture() as cap:
            io(obj, "delete")
        assert _requests(cap) == [*MOVE, ("TransactWriteItems", ["Delete", "Delete"], True, False)]
    assert _table() == {}


def test_delete_during_a_rollout_deletes_the_older_keys_in_one_transaction(io: Any) -> None:
    obj = io(RcItem.objects, "create", item_id="y")
    with dynorm.capture() as cap:
        io(obj, "delete")
    assert _requests(cap) == [("TransactWriteItems", ["Delete", "Delete"], True, False)]


def test_creates_during_a_rollout_check_the_older_keys(io: Any) -> None:
    with dynorm.capture() as cap:
        io(RcItem(item_id="c"), "save")
    assert _requests(cap) == [("TransactWriteItems", ["Put", "ConditionCheck"], True, False)]
    with dynorm.capture() as cap:
        io(RcPlain(item_id="c"), "save")
    assert _requests(cap) == [("TransactWriteItems", ["Update", "ConditionCheck"], True, False)]
    with dynorm.capture() as cap:
        with pytest.raises(RcPlain.DoesNotExist):  # update_fields changes an existing item only
            io(RcPlain(item_id="c2"), "save", update_fields=["note"])
    assert _requests(cap) == [("TransactWriteItems", ["Update", "ConditionCheck"], True, False)]


def test_the_upsert_that_finds_an_older_item_moves_it_and_writes_there(io: Any) -> None:
    _put_old(RcPlain, "m")
    with dynorm.capture() as cap:
        io(RcPlain(item_id="m", note="new"), "save")
    assert _requests(cap) == [
        ("TransactWriteItems", ["Update", "ConditionCheck"], True, False),
        ("GetItem", None, False, True), ("GetItem", None, False, True),  # get()'s fallback: v2, then v1
        *MOVE,  # the move
        ("UpdateItem", None, True, False)]  # the upsert again, at the current keys
    assert set(_table()) == {"v2#P#m"}


def _put_other_type_at(pk: str) -> None:
    dynorm.backend.call("PutItem", {"TableName": RollCreates.table_name(), "Item": {
        "PK": {"S": pk}, "SK": {"S": "METADATA"}, "entityType": {"S": "RC_ITEM"}, "item_id": {"S": "o"}}})


def test_the_upsert_on_another_entity_types_item_is_refused_without_a_move(io: Any) -> None:
    _put_other_type_at("v2#P#o")
    with dynorm.capture() as cap:
        with pytest.raises(dynorm.AlreadyExists) as err:
            io(RcPlain(item_id="o", note="new"), "save")
    assert getattr(err.value, "older_version", None) is None
    assert _requests(cap) == [("TransactWriteItems", ["Update", "ConditionCheck"], True, False)]
    assert set(_table()) == {"v2#P#o"}


def test_the_upsert_on_another_entity_types_item_with_an_older_item_moves_nothing(io: Any) -> None:
    _put_other_type_at("v2#P#o")
    _put_old(RcPlain, "o")
    with dynorm.capture() as cap:
        with pytest.raises(dynorm.AlreadyExists) as err:
            io(RcPlain(item_id="o", note="new"), "save")
    assert getattr(err.value, "older_version", None) is None
    # the older check speaks first: get()'s read finds another type at the current keys, no move;
    # the upsert again is refused by its entity-type condition
    assert _requests(cap) == [("TransactWriteItems", ["Update", "ConditionCheck"], True, False),
                              ("GetItem", None, False, True), ("UpdateItem", None, True, False)]
    assert set(_table()) == {"v2#P#o", "v1#P#o"}
