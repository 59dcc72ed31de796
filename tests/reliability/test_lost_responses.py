"""A write whose response was lost is applied once and reported as applied (issue 9, section 2).

The hook lets the first attempt of a request really reach DynamoDB (sent by hand with the same
signed body), then raises a connection error, so botocore retries the request: exactly what
happens when a response is lost on the network. Each test fails on the code before the
revision token (AlreadyExists, created=False, StaleWrite, or a counter at 2).
"""

from __future__ import annotations

import urllib.request
from typing import Any, Iterator

import botocore.exceptions
import pytest

import dynorm
from dynorm import Entity, F, fields
from tests.faults import Hook
from tests.models import Counter, Retail


class Tally(Entity):
    """Unversioned: nothing but the revision token stops a retried increment."""

    name = fields.String()
    n = fields.Integer(default=0)

    class Meta:
        table = Retail
        entity_type = "W9_TALLY"
        pk = "{version}#TALLY#{name}"
        sk = "METADATA"


class _LoseFirstResponse:
    """Deliver the first request of ``operation`` to DynamoDB, then drop the connection."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        self.delivered = 0

    def __call__(self, request: Any, **kwargs: Any) -> None:
        if self.delivered == 0:
            self.delivered += 1
            req = urllib.request.Request(request.url, data=request.body, headers=dict(request.headers.items()))
            urllib.request.urlopen(req, timeout=10).read()  # noqa: S310 - 127.0.0.1 only: the server applies it
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)


@pytest.fixture
def lose() -> Iterator[Any]:
    hooks: list[Hook] = []

    def arm(operation: str) -> _LoseFirstResponse:
        fault = _LoseFirstResponse(operation)
        hook = Hook(f"before-send.dynamodb.{operation}", fault)
        hook.__enter__()
        hooks.append(hook)
        return fault

    yield arm
    for hook in hooks:
        hook.__exit__(None, None, None)


def _raw(model: type[Entity], **key: Any) -> dict[str, Any]:
    resp = dynorm.backend.call("GetItem", {"TableName": model._meta.table.table_name(), "ConsistentRead": True,
                                           "Key": model._meta.primary_key(key)})
    return dict(resp["Item"])


def test_create_whose_response_was_lost_is_reported_created(lose: Any, io: Any) -> None:
    fault = lose("PutItem")
    with dynorm.capture() as c:
        obj = io(Counter.objects, "create", name="c1", value=3)
    assert fault.delivered == 1 and c.operations == ["PutItem"]
    assert obj.version == 1 and not obj._state.adding
    stored = _raw(Counter, name="c1")
    assert stored["value"] == {"N": "3"} and stored["version"] == {"N": "1"}
    assert stored["_dynorm_rev"]["S"]  # the token that told the retry apart


def test_get_or_create_whose_create_response_was_lost_says_created(lose: Any, io: Any) -> None:
    lose("PutItem")
    obj, created = io(Counter.objects, "get_or_create", name="g1", defaults={"value": 7})
    assert created is True and obj.value == 7
    assert Counter.objects.get(name="g1").value == 7


def test_versioned_save_whose_response_was_lost_is_not_stale(lose: Any, io: Any) -> None:
    obj = io(Counter.objects, "create", name="s1")
    obj.value = 5
    fault = lose("UpdateItem")  # save() of an item read is one UpdateItem
    io(obj, "save")
    assert fault.delivered == 1 and obj.version == 2
    again = Counter.objects.get(name="s1")
    assert (again.value, again.version) == (5, 2)


def test_versioned_update_whose_response_was_lost_is_applied_once(lose: Any, io: Any) -> None:
    obj = io(Counter.objects, "create", name="u1")
    lose("UpdateItem")
    io(obj, "update", value=F("value") + 1)
    assert (obj.value, obj.version) == (1, 2)
    assert Counter.objects.get(name="u1").value == 1


def test_update_with_retry_plus_one_is_applied_once(lose: Any, io: Any) -> None:
    io(Counter.objects, "create", name="r1")
    fault = lose("UpdateItem")

    def bump(c: Counter) -> None:
        c.value += 1

    with dynorm.capture() as c:
        obj = io(Counter.objects, "update_with_retry", {"name": "r1"}, bump)
    assert fault.delivered == 1 and c.operations == ["GetItem", "UpdateItem"]
    assert obj.value == 1 and Counter.objects.get(name="r1").value == 1


def test_unversioned_increment_whose_response_was_lost_is_applied_once(lose: Any, io: Any) -> None:
    io(Tally.objects, "create", name="t1")
    fault = lose("UpdateItem")
    with dynorm.capture() as c:
        result = io(Tally.objects.filter(name="t1"), "update", n=F("n") + 1)
    assert fault.delivered == 1 and c.operations == ["UpdateItem"]
    assert result.n == 1  # the item as the first attempt left it (ALL_OLD of the retry)
    assert Tally.objects.get(name="t1").n == 1


def test_keyed_update_of_a_versioned_entity_is_applied_once(lose: Any) -> None:
    Counter.objects.create(name="k1")
    lose("UpdateItem")
    Counter.objects.filter(name="k1").update(value=F("value") + 10)
    stored = Counter.objects.get(name="k1")
    assert (stored.value, stored.version) == (10, 2)


def test_versioned_delete_whose_response_was_lost_is_not_stale(lose: Any, io: Any) -> None:
    obj = io(Counter.objects, "create", name="d1")
    lose("DeleteItem")
    io(obj, "delete")
    assert not io(Counter.objects.filter(name="d1"), "exists")


def test_a_real_conflict_after_a_retry_is_still_reported() -> None:
    # the token only ever matches this very write: someone else's change is still a StaleWrite
    obj = Counter.objects.create(name="x1")
    other = Counter.objects.get(name="x1")
    other.value = 9
    other.save()
    obj.value = 1
    with dynorm.capture() as c, pytest.raises(dynorm.StaleWrite, match="version 2"):
        obj.save()
    assert c.operations == ["UpdateItem"] and obj.version == 1
    assert Counter.objects.get(name="x1").value == 9


def test_every_write_stores_a_fresh_token() -> None:
    obj = Counter.objects.create(name="tok")
    first = _raw(Counter, name="tok")["_dynorm_rev"]
    obj.update(value=F("value") + 1)
    second = _raw(Counter, name="tok")["_dynorm_rev"]
    obj.value = 4
    obj.save()
    third = _raw(Counter, name="tok")["_dynorm_rev"]
    with dynorm.transaction() as tx:
        tx.update(obj, value=5)
    fourth = _raw(Counter, name="tok")["_dynorm_rev"]
    Counter.objects.bulk_create([Counter(name="tok2")])
    assert len({first["S"], second["S"], third["S"], fourth["S"], _raw(Counter, name="tok2")["_dynorm_rev"]["S"]}) == 5


def test_many_increments_with_a_third_of_the_responses_lost_count_exactly() -> None:
    # every write kind in turn, while about a third of the responses are lost after the server
    # applied the request (each request at most once, so botocore's retry gets through)
    import random

    Counter.objects.create(name="hot")
    Tally.objects.create(name="hot")
    rng = random.Random(9)
    dropped: set[bytes] = set()

    def sometimes_lose(request: Any, **kwargs: Any) -> None:
        if request.body in dropped or rng.random() >= 0.33:
            return
        dropped.add(request.body)
        req = urllib.request.Request(request.url, data=request.body, headers=dict(request.headers.items()))
        urllib.request.urlopen(req, timeout=10).read()  # noqa: S310 - 127.0.0.1 only
        raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    def bump(c: Counter) -> None:
        c.value += 1

    with Hook("before-send.dynamodb.UpdateItem", sometimes_lose):
        for _ in range(10):
            Counter.objects.update_with_retry({"name": "hot"}, bump)
            Counter.objects.get(name="hot").update(value=F("value") + 1)
            Tally.objects.filter(name="hot").update(n=F("n") + 1)
            Tally.objects.get(name="hot").update(n=F("n") + 2)
    assert len(dropped) >= 5
    final = Counter.objects.get(name="hot")
    assert (final.value, final.version) == (20, 21)
    assert Tally.objects.get(name="hot").n == 30


def test_a_retry_that_finds_someone_elses_change_says_so() -> None:
    # the one window the token cannot close: the first attempt is applied, another writer changes
    # the item before botocore's retry; the error then says what may have happened
    obj = Counter.objects.create(name="w1")
    other = Counter.objects.get(name="w1")
    state = {"n": 0}

    def apply_then_race(request: Any, **kwargs: Any) -> None:
        if state["n"] == 0:
            state["n"] += 1
            req = urllib.request.Request(request.url, data=request.body, headers=dict(request.headers.items()))
            urllib.request.urlopen(req, timeout=10).read()  # noqa: S310 - 127.0.0.1 only
            other.refresh_from_db()
            other.value = 100
            other.save()  # the racing writer (its own request, through the same hook: passes)
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    obj.value = 1
    with Hook("before-send.dynamodb.UpdateItem", apply_then_race), \
            pytest.raises(dynorm.StaleWrite, match="first attempt may have been applied"):
        obj.save()
    assert Counter.objects.get(name="w1").value == 100
