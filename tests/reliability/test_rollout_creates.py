"""Creates during a key-version rollout never hide an item stored under an older key version.

An item exists only under v1; the model writes v2 and reads v1 through ``Meta.read_versions``.
Every creating path either refuses (AlreadyExists, nothing written) or replaces/moves the item
so that no v1 copy is left for ``get()``'s fallback, a copy-mode rekey or ``DeleteVersion`` to
trip on. Each test asserts the outcome, the raw table and the number and kind of requests.
Before this change tx.create/atransaction, tx.save and save() of new instances and
bulk_create wrote the v2 item and left the v1 one in place.

Also here: the first save() moving a tokenless older item (strict xfail: an attribute a raw writer
adds meanwhile is lost), and an entity whose older key is another entity type's current key
(Table.check() reports it; create() is not refused by it; bulk_create deleting it is a strict xfail).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import botocore.exceptions
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dynorm
from dynorm import Entity, Table, fields
from dynorm.batch import RetryPolicy, bulk_create
from dynorm.exceptions import CreateCanceled
from dynorm.transaction import MAX_ACTIONS, Transaction
from tests.faults import Hook, deliver, fake_response


class RollCreates(Table):
    class Meta:
        table_name = "rollc_creates"


class RcItem(Entity):
    """Versioned: a new instance's save is a Put that refuses to overwrite."""

    item_id = fields.String()
    note = fields.String(null=True)
    version = fields.Version()

    class Meta:
        table = RollCreates
        entity_type = "RC_ITEM"
        key_version = "v2"
        read_versions = ["v2", "v1"]
        pk = "{version}#I#{item_id}"
        sk = "METADATA"


class RcPlain(Entity):
    """Unversioned: a new instance's save is an upsert (UpdateItem)."""

    item_id = fields.String()
    note = fields.String(null=True)

    class Meta:
        table = RollCreates
        entity_type = "RC_PLAIN"
        key_version = "v2"
        read_versions = ["v2", "v1"]
        pk = "{version}#P#{item_id}"
        sk = "METADATA"


class RcThree(Entity):
    """Two older versions: two checks per create."""

    item_id = fields.String()
    note = fields.String(null=True)

    class Meta:
        table = RollCreates
        entity_type = "RC_THREE"
        key_version = "v3"
        read_versions = ["v3", "v2", "v1"]
        pk = "{version}#T#{item_id}"
        sk = "METADATA"


PREFIX = {RcItem: "I", RcPlain: "P", RcThree: "T"}


def _put_old(model: Any, item_id: str, note: str = "precious", version: str = "v1") -> None:
    """What an application still on ``version`` stored (with an attribute no model declares)."""
    item = {"PK": {"S": f"{version}#{PREFIX[model]}#{item_id}"}, "SK": {"S": "METADATA"},
            "entityType": {"S": model._meta.entity_type}, "item_id": {"S": item_id}, "note": {"S": note},
            "legacy": {"S": "kept"}}
    if model is RcItem:
        item["version"] = {"N": "3"}
    dynorm.backend.call("PutItem", {"TableName": RollCreates.table_name(), "Item": item})


def _table() -> dict[str, dict[str, Any]]:
    """Every stored item by partition key (a consistent Scan, beside dynorm's read path)."""
    out: dict[str, dict[str, Any]] = {}
    params: dict[str, Any] = {"TableName": RollCreates.table_name(), "ConsistentRead": True}
    while True:
        resp = dynorm.backend.call("Scan", params)
        out.update({i["PK"]["S"]: i for i in resp["Items"]})
        if "LastEvaluatedKey" not in resp:
            return out
        params["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def _kinds(cap: Any) -> list[list[str]]:
    """The action kinds of each TransactWriteItems captured."""
    return [[next(iter(a)) for a in r.params["TransactItems"]] for r in cap.requests
            if r.operation == "TransactWriteItems"]


# -- transactions -------------------------------------------------------------------------------
def test_tx_create_refuses_an_item_stored_only_under_an_older_key(io: Any) -> None:
    _put_old(RcItem, "a")
    before = _table()
    with dynorm.capture() as cap:
        with pytest.raises(dynorm.AlreadyExists, match="older key version 'v1'") as err:
            io.transaction(lambda tx: tx.create(RcItem(item_id="a", note="new")))
    assert isinstance(err.value, dynorm.TransactionCanceled) and isinstance(err.value, CreateCanceled)
    assert "RcItem" in str(err.value) and "nothing" in str(err.value)
    assert [r["code"] for r in err.value.reasons] == ["None", "ConditionalCheckFailed"]
    assert cap.operations == ["TransactWriteItems"] and _kinds(cap) == [["Put", "ConditionCheck"]]
    assert _table() == before  # nothing written: the v1 item only, unchanged
    assert RcItem.objects.get(item_id="a").note == "precious"


def test_tx_create_with_others_commits_when_no_older_item_exists(io: Any) -> None:
    _put_old(RcItem, "other")  # another item at v1 does not matter
    with dynorm.capture() as cap:
        io.transaction(lambda tx: (tx.create(RcItem(item_id="b", note="new")),
                                   tx.create(RcThree(item_id="b", note="three"))))
    assert cap.operations == ["TransactWriteItems"]
    assert _kinds(cap) == [["Put", "ConditionCheck", "Put", "ConditionCheck", "ConditionCheck"]]
    checked = [a["ConditionCheck"]["Key"]["PK"]["S"] for a in cap.requests[0].params["TransactItems"]
               if "ConditionCheck" in a]
    assert checked == ["v1#I#b", "v2#T#b", "v1#T#b"]
    stored = _table()
    assert stored["v2#I#b"]["note"] == {"S": "new"} and stored["v3#T#b"]["note"] == {"S": "three"}
    assert set(stored) == {"v1#I#other", "v2#I#b", "v3#T#b"}


def test_tx_create_names_the_version_of_a_two_versions_old_item(io: Any) -> None:
    _put_old(RcThree, "c", version="v1")
    with pytest.raises(dynorm.AlreadyExists, match="older key version 'v1'"):
        io.transaction(lambda tx: tx.create(RcThree(item_id="c")))
    assert set(_table()) == {"v1#T#c"}


def test_tx_create_and_its_checks_past_100_actions_are_refused_before_any_request() -> None:
    tx = Transaction()
    for i in range(MAX_ACTIONS - 1):
        tx.check(RcPlain, {"item_id": f"x{i}"}, condition=dynorm.Q(note="n"))
    with dynorm.capture() as cap:
        with pytest.raises(dynorm.ValidationError, match=r"RcItem.*(action 101|older key versions)") as err:
            tx.create(RcItem(item_id="big"))
    assert "RcItem" in str(err.value) and "read_versions" in str(err.value)
    assert len(tx.actions) == MAX_ACTIONS - 1  # nothing of it added
    assert cap.operations == []


def test_tx_create_past_the_limit_adds_nothing_and_a_create_that_fits_still_goes() -> None:
    tx = Transaction()
    for i in range(MAX_ACTIONS - 2):
        tx.check(RcPlain, {"item_id": f"x{i}"}, condition=dynorm.Q(note="n"))
    with pytest.raises(dynorm.ValidationError, match="RcThree"):
        tx.create(RcThree(item_id="three"))  # 1 Put + 2 checks = 101
    assert len(tx.actions) == MAX_ACTIONS - 2
    tx.create(RcItem(item_id="two"))  # 1 Put + 1 check = 100
    assert len(tx.actions) == MAX_ACTIONS


def test_tx_create_of_an_item_another_action_touches_at_its_older_key_is_refused() -> None:
    tx = Transaction()
    tx.delete(RcItem, {"item_id": "d"})  # deletes v2#I#d and v1#I#d
    with pytest.raises(dynorm.ValidationError, match="already touches"):
        tx.create(RcItem(item_id="d"))
    assert len(tx.actions) == 2


def test_tx_save_of_a_new_versioned_instance_refuses_like_create(io: Any) -> None:
    _put_old(RcItem, "e")
    with dynorm.capture() as cap:
        with pytest.raises(dynorm.AlreadyExists, match="older key version 'v1'"):
            io.transaction(lambda tx: tx.save(RcItem(item_id="e", note="new")))
    assert _kinds(cap) == [["Put", "ConditionCheck"]]
    assert set(_table()) == {"v1#I#e"}


def test_tx_save_of_a_new_unversioned_instance_moves_the_older_item_and_updates_it(io: Any) -> None:
    _put_old(RcPlain, "f")
    with dynorm.capture() as cap:
        io.transaction(lambda tx: tx.save(RcPlain(item_id="f", note="new")))
    # get()'s fallback (current, then v1), the move (GetItem + TransactWriteItems), the transaction
    assert cap.operations == ["GetItem", "GetItem", "GetItem", "TransactWriteItems", "TransactWriteItems"]
    stored = _table()
    assert set(stored) == {"v2#P#f"}
    assert stored["v2#P#f"]["note"] == {"S": "new"} and stored["v2#P#f"]["legacy"] == {"S": "kept"}


def test_lost_response_of_tx_create_during_a_rollout_is_applied_once(io: Any) -> None:
    sent = {"n": 0}

    def lose_first(request: Any, **kwargs: Any) -> None:
        sent["n"] += 1
        if sent["n"] == 1:
            deliver(request)  # DynamoDB applies it; the answer never arrives: botocore retries
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    _put_old(RcItem, "other")
    with Hook("before-send.dynamodb.TransactWriteItems", lose_first), dynorm.capture() as cap:
        io.transaction(lambda tx: tx.create(RcItem(item_id="g", note="once")), token=str(uuid.uuid4()))
    assert sent["n"] == 2  # the retry went out, with the same ClientRequestToken: applied once
    assert cap.operations == ["TransactWriteItems"] and _kinds(cap) == [["Put", "ConditionCheck"]]
    stored = _table()
    assert set(stored) == {"v1#I#other", "v2#I#g"} and stored["v2#I#g"]["version"] == {"N": "1"}
    assert RcItem.objects.get(item_id="g").note == "once"


# -- single-item paths ---------------------------------------------------------------------------
def test_save_of_a_new_versioned_instance_refuses_like_create(io: Any) -> None:
    _put_old(RcItem, "h")
    with dynorm.capture() as cap:
        with pytest.raises(dynorm.AlreadyExists, match="older key version 'v1'"):
            io(RcItem(item_id="h", note="new"), "save")
    assert _kinds(cap) == [["Put", "ConditionCheck"]]
    assert set(_table()) == {"v1#I#h"}


def test_save_of_a_new_unversioned_instance_lands_on_the_older_item_moved(io: Any) -> None:
    _put_old(RcPlain, "i")
    with dynorm.capture() as cap:
        io(RcPlain(item_id="i", note="new"), "save")
    # the upsert with its check (cancelled), get()'s fallback (v2, v1), the move, the upsert again
    assert cap.operations == ["TransactWriteItems", "GetItem", "GetItem", "GetItem", "TransactWriteItems",
                              "UpdateItem"]
    assert _kinds(cap) == [["Update", "ConditionCheck"], ["Put", "Delete"]]
    stored = _table()
    assert set(stored) == {"v2#P#i"}
    assert stored["v2#P#i"]["note"] == {"S": "new"} and stored["v2#P#i"]["legacy"] == {"S": "kept"}
    with dynorm.capture() as cap:  # nothing under v1 any more: get() needs one GetItem
        assert RcPlain.objects.get(item_id="i").note == "new"
    assert cap.operations == ["GetItem"]


def test_save_of_a_new_unversioned_instance_without_an_older_item_is_one_transaction(io: Any) -> None:
    with dynorm.capture() as cap:
        obj = io(RcPlain(item_id="j", note="new"), "save")
    assert cap.operations == ["TransactWriteItems"] and _kinds(cap) == [["Update", "ConditionCheck"]]
    assert set(_table()) == {"v2#P#j"} and not obj._state.adding
    with dynorm.capture() as cap:  # saved again: no longer new, one UpdateItem
        obj.note = "again"
        io(obj, "save")
    assert cap.operations == ["UpdateItem"]


def test_save_update_fields_of_a_new_instance_lands_on_the_older_item_moved(io: Any) -> None:
    _put_old(RcPlain, "j2")
    obj = RcPlain(item_id="j2", note="new")
    io(obj, "save", update_fields=["note"])
    stored = _table()
    assert set(stored) == {"v2#P#j2"} and stored["v2#P#j2"]["note"] == {"S": "new"}
    assert stored["v2#P#j2"]["legacy"] == {"S": "kept"}


def test_create_refuses_for_every_manager_path(io: Any) -> None:
    _put_old(RcItem, "k")
    _put_old(RcPlain, "k")
    for model in (RcItem, RcPlain):
        with dynorm.capture() as cap:
            with pytest.raises(dynorm.AlreadyExists, match="older key version 'v1'"):
                io(model.objects, "create", item_id="k", note="new")
        assert _kinds(cap) == [["Put", "ConditionCheck"]]
    assert set(_table()) == {"v1#I#k", "v1#P#k"}


def test_get_or_create_returns_the_older_item_and_writes_nothing(io: Any) -> None:
    _put_old(RcItem, "l")
    with dynorm.capture() as cap:
        obj, created = io(RcItem.objects, "get_or_create", item_id="l", defaults={"note": "new"})
    assert not created and obj.note == "precious" and obj._state.fallback == "v1"
    assert cap.operations == ["GetItem", "GetItem"]
    assert set(_table()) == {"v1#I#l"}


def test_update_or_create_moves_the_older_item_and_updates_it(io: Any) -> None:
    _put_old(RcItem, "m")
    obj, created = io(RcItem.objects, "update_or_create", item_id="m", defaults={"note": "new"})
    assert not created and obj.note == "new"
    stored = _table()
    assert set(stored) == {"v2#I#m"}
    assert stored["v2#I#m"]["note"] == {"S": "new"} and stored["v2#I#m"]["legacy"] == {"S": "kept"}


# -- the move of a tokenless older item by a first save(): an attribute another writer added ----------
@pytest.mark.xfail(strict=True, reason="documented limitation (docs/migrations.md, writes from outside dynorm): an "
                   "attribute ADDED by a raw writer to an item without a revision token cannot be detected by a "
                   "condition; open: the read_versions move could stamp a token first as migrations now do")
def test_first_save_moving_a_tokenless_older_item_keeps_an_attribute_added_meanwhile() -> None:
    """save() of a new unversioned instance moves the v1 item (Put at v2 + Delete of v1 "conditional
    on it being unchanged"). For an item without a revision token the condition compares only the
    attributes read: an attribute another writer ADDED between the move's GetItem and its
    TransactWriteItems passes the check, and the Delete drops it. Expected: the added attribute
    survives at v2, or the save fails (StaleWrite) with the v1 item intact."""
    dynorm.backend.call("PutItem", {"TableName": RollCreates.table_name(), "Item": {
        "PK": {"S": "v1#P#r1"}, "SK": {"S": "METADATA"}, "entityType": {"S": "RC_PLAIN"},
        "item_id": {"S": "r1"}, "note": {"S": "v1"}}})
    fired = {"n": 0}

    def other_writer(request: Any, **kwargs: Any) -> None:
        body = json.loads(request.body)
        if not fired["n"] and any("Delete" in a for a in body.get("TransactItems", [])):
            fired["n"] += 1  # a writer that is not dynorm adds an attribute to the old item, acknowledged
            dynorm.backend.call("UpdateItem", {
                "TableName": RollCreates.table_name(), "Key": {"PK": {"S": "v1#P#r1"}, "SK": {"S": "METADATA"}},
                "UpdateExpression": "SET extra = :v", "ExpressionAttributeValues": {":v": {"S": "acknowledged"}}})

    with Hook("before-send.dynamodb.TransactWriteItems", other_writer):
        try:
            RcPlain(item_id="r1", note="new").save()
            failed = False
        except dynorm.StaleWrite:
            failed = True
    assert fired["n"] == 1
    stored = _table()
    if failed:
        assert stored["v1#P#r1"]["extra"] == {"S": "acknowledged"}
    else:  # on the buggy code: v2 item without 'extra', v1 item deleted
        assert set(stored) == {"v2#P#r1"}
        assert stored["v2#P#r1"].get("extra") == {"S": "acknowledged"}


# -- bulk_create: replaces the item get() reads, older copy included ------------------------------
def _batch_requests(cap: Any) -> list[tuple[int, int]]:
    """(PutRequests, DeleteRequests) of each BatchWriteItem captured."""
    out = []
    for r in cap.requests:
        if r.operation == "BatchWriteItem":
            (reqs,) = r.params["RequestItems"].values()
            out.append((sum("PutRequest" in q for q in reqs), sum("DeleteRequest" in q for q in reqs)))
    return out


def test_bulk_create_replaces_the_older_items_too(io: Any) -> None:
    for i in range(0, 30, 3):
        _put_old(RcItem, f"n{i:02d}")
    objs = [RcItem(item_id=f"n{i:02d}", note="new") for i in range(30)]
    with dynorm.capture() as cap:
        io(RcItem.objects, "bulk_create", objs)
    # 30 Puts and 30 Deletes (one per item: the key is not read first) in ceil(60 / 25) requests;
    # an item's Delete is sent only after its Put went in
    assert _batch_requests(cap) == [(25, 0), (5, 20), (0, 10)]
    stored = _table()
    assert set(stored) == {f"v2#I#n{i:02d}" for i in range(30)}
    assert all(s["note"] == {"S": "new"} and s["version"] == {"N": "1"} for s in stored.values())
    assert all(o.version == 1 and not o._state.adding for o in objs)


def test_bulk_create_with_two_older_versions_deletes_both(io: Any) -> None:
    _put_old(RcThree, "o", version="v1")
    _put_old(RcThree, "o", version="v2")
    with dynorm.capture() as cap:
        io(RcThree.objects, "bulk_create", [RcThree(item_id="o", note="new")])
    assert _batch_requests(cap) == [(1, 0), (0, 2)]
    assert set(_table()) == {"v3#T#o"}


class RcNoRollout(Entity):
    item_id = fields.String()

    class Meta:
        table = RollCreates
        entity_type = "RC_NO_ROLLOUT"
        key_version = "v2"
        pk = "{version}#N#{item_id}"
        sk = "METADATA"


def test_bulk_create_without_older_versions_sends_only_puts() -> None:
    with dynorm.capture() as cap:
        RcNoRollout.objects.bulk_create([RcNoRollout(item_id=f"p{i}") for i in range(3)])
    assert _batch_requests(cap) == [(3, 0)]


def test_a_refused_put_deletes_nothing_and_a_lost_delete_is_reported_exactly() -> None:
    for i in range(4):
        _put_old(RcItem, f"q{i}")
    seen = {"n": 0}

    def fault(request: Any, **kwargs: Any) -> Any:
        seen["n"] += 1
        body = json.loads(request.body)
        (table, reqs), = body["RequestItems"].items()
        if seen["n"] == 1:  # the Puts of q2 and q3 stay unprocessed on every attempt
            keep = [r for r in reqs if r["PutRequest"]["Item"]["item_id"]["S"] in ("q0", "q1")]
            deliver(request, json.dumps({**body, "RequestItems": {table: keep}}).encode())
            return fake_response(200, {"UnprocessedItems": {table: [r for r in reqs if r not in keep]}})
        if "PutRequest" in reqs[0]:
            return fake_response(200, {"UnprocessedItems": {table: reqs}})
        # the Deletes of q0 and q1: q1's stays unprocessed on every attempt
        keep = [r for r in reqs if r["DeleteRequest"]["Key"]["PK"]["S"] == "v1#I#q0"]
        deliver(request, json.dumps({**body, "RequestItems": {table: keep}}).encode())
        return fake_response(200, {"UnprocessedItems": {table: [r for r in reqs if r not in keep]}})

    objs = [RcItem(item_id=f"q{i}", note="new") for i in range(4)]
    with Hook("before-send.dynamodb.BatchWriteItem", fault), dynorm.capture() as cap:
        with pytest.raises(dynorm.BatchIncomplete) as err:
            bulk_create(RcItem, objs, RetryPolicy(max_attempts=2, base_delay=0.001), sleep=lambda s: None)
    e = err.value
    assert e.written == [{"item_id": "q0"}]
    assert e.unprocessed == [{"item_id": "q1"}, {"item_id": "q2"}, {"item_id": "q3"}] and e.uncertain == []
    assert "1 of them went in under the current key version" in str(e) and "1 of 4 RcItem" in str(e)
    assert cap.operations == ["BatchWriteItem"] * 4  # Puts + their retry, then the Deletes + their retry
    stored = _table()
    # q0 replaced; q1's Put went in, its v1 copy left (reported); q2, q3: nothing changed
    assert set(stored) == {"v2#I#q0", "v2#I#q1", "v1#I#q1", "v1#I#q2", "v1#I#q3"}
    assert stored["v1#I#q2"]["note"] == {"S": "precious"}
    assert [o._state.adding for o in objs] == [False, False, True, True]
    # the same call again for the unprocessed ones finishes the job
    RcItem.objects.bulk_create([o for o in objs if o.key in e.unprocessed])
    assert set(_table()) == {f"v2#I#q{i}" for i in range(4)}


_run = iter(range(10 ** 6))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 40), old=st.sets(st.integers(0, 39)), refuse_at=st.none() | st.integers(1, 8),
       tails=st.lists(st.integers(0, 6), min_size=16, max_size=16))
def test_what_a_rollout_bulk_create_reports_matches_the_table(n: int, old: set[int], refuse_at: int | None,
                                                             tails: list[int]) -> None:
    """Request j leaves its last tails[j] write requests unprocessed, or is refused when j == refuse_at.

    The table is the oracle: a written item is at v2 with no v1 copy; an unprocessed one either
    changed nothing (its v1 copy, if any, untouched and no v2 item) or is at v2 with the Delete of
    its v1 key not done, which the message reports; no v1 copy is ever deleted without its v2
    item in place.
    """
    run = next(_run)
    ids = [f"z{run}-{i:02d}" for i in range(n)]
    had_v1 = {ids[i] for i in old if i < n}
    for i in had_v1:
        _put_old(RcItem, i)
    seen = {"j": 0}

    def fault(request: Any, **kwargs: Any) -> Any:
        seen["j"] += 1
        if seen["j"] == refuse_at:
            return fake_response(400, {"__type": "com.amazon.coral.validate#ValidationException",
                                       "message": "refused by the test"})
        body = json.loads(request.body)
        (table, reqs), = body["RequestItems"].items()
        keep = len(reqs) - min(tails[(seen["j"] - 1) % len(tails)], len(reqs) - 1)
        deliver(request, json.dumps({**body, "RequestItems": {table: reqs[:keep]}}).encode())
        return fake_response(200, {"UnprocessedItems": {table: reqs[keep:]} if reqs[keep:] else {}})

    objs = [RcItem(item_id=i, note="new") for i in ids]
    message = ""
    with Hook("before-send.dynamodb.BatchWriteItem", fault):
        try:
            bulk_create(RcItem, objs, RetryPolicy(max_attempts=3, base_delay=0.001), sleep=lambda s: None)
            written, unprocessed = ids, []
        except dynorm.BatchIncomplete as exc:
            written = [k["item_id"] for k in exc.written]
            unprocessed = [k["item_id"] for k in exc.unprocessed]
            message = str(exc)
            assert exc.uncertain == []
    assert sorted(written + unprocessed) == sorted(ids) and not set(written) & set(unprocessed)
    stored = _table()
    half = 0
    for i in ids:
        v1, v2 = stored.get(f"v1#I#{i}"), stored.get(f"v2#I#{i}")
        if i in written:
            assert v2 is not None and v2["note"] == {"S": "new"} and v1 is None, i
        elif v2 is None:  # nothing of it changed
            assert (v1 is not None) == (i in had_v1), i
            assert v1 is None or v1["note"] == {"S": "precious"}
        else:  # its Put went in, the Delete of its v1 key did not: reported (whether a copy was there or not)
            assert v2["note"] == {"S": "new"} and (v1 is None or (i in had_v1 and v1["note"] == {"S": "precious"})), i
            half += 1
    if half:
        assert f"{half} of them went in under the current key version" in message


# -- an entity's older key is another entity type's current key -----------------------------------
class OlderKeyShared(Table):
    class Meta:
        table_name = "rollc_older_key_shared"


class KeyRolled(Entity):
    """Rolled out to v2; still reads v1."""

    item_id = fields.String()
    note = fields.String(null=True)

    class Meta:
        table = OlderKeyShared
        entity_type = "ROLLED"
        key_version = "v2"
        read_versions = ["v2", "v1"]
        pk = "{version}#K#{item_id}"
        sk = "METADATA"


class KeyNeighbour(Entity):
    """Another entity type whose key text equals KeyRolled's v1 key (a literal where it has {version}).
    Table.check() reports nothing about it."""

    item_id = fields.String()
    note = fields.String(null=True)

    class Meta:
        table = OlderKeyShared
        entity_type = "NEIGHBOUR"
        pk = "v1#K#{item_id}"
        sk = "METADATA"


def _shared() -> dict[str, str]:
    resp = dynorm.backend.call("Scan", {"TableName": OlderKeyShared.table_name(), "ConsistentRead": True})
    return {i["PK"]["S"]: i["entityType"]["S"] for i in resp["Items"]}


def test_table_check_reports_an_entity_whose_key_is_another_entitys_older_read_version_key() -> None:
    """The overlap behind the next test is a modelling error Table.check() now reports (it checked only
    the current key versions): `dynorm check` names both entities and the read version."""
    problems = [p for p in OlderKeyShared.check() if "ROLLED" in p and "NEIGHBOUR" in p]
    assert problems and "read version 'v1'" in problems[0], OlderKeyShared.check()


@pytest.mark.xfail(strict=True, reason="open (issue note, session 4): BatchWriteItem deletes take no condition; "
                   "Table.check() reports the overlapping templates (test above); bulk_create could read the older "
                   "keys first and delete only this entity's items")
def test_bulk_create_never_deletes_another_entity_types_item_at_an_older_key() -> None:
    """bulk_create's DeleteRequest of each older key is unconditional: it deletes whatever item is
    there, here an acknowledged KeyNeighbour item that get() of KeyRolled never returns."""
    KeyNeighbour.objects.create(item_id="b", note="precious")
    with pytest.raises(KeyRolled.DoesNotExist):
        KeyRolled.objects.get(item_id="b")  # not a KeyRolled item: the fallback ignores it
    KeyRolled.objects.bulk_create([KeyRolled(item_id="b", note="x")])
    # on the buggy code: {'v2#K#b': 'ROLLED'} (the neighbour's item was deleted)
    assert _shared() == {"v1#K#b": "NEIGHBOUR", "v2#K#b": "ROLLED"}
    assert KeyNeighbour.objects.get(item_id="b").note == "precious"


def test_create_is_not_refused_by_another_entity_types_item_at_an_older_key() -> None:
    """create()'s ConditionCheck per older key tests only attribute_not_exists: an item of another
    entity type there (which get() does not read as this entity) makes it AlreadyExists, although
    no KeyRolled item exists and get() raises DoesNotExist."""
    KeyNeighbour.objects.create(item_id="a", note="y")
    with pytest.raises(KeyRolled.DoesNotExist):
        KeyRolled.objects.get(item_id="a")
    KeyRolled.objects.create(item_id="a", note="x")  # on the buggy code: AlreadyExists
    assert _shared() == {"v1#K#a": "NEIGHBOUR", "v2#K#a": "ROLLED"}
