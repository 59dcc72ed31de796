"""A write whose response was lost is applied once and reported as applied (issue 9, section 2).

The hook lets the first attempt of a request really reach DynamoDB (sent by hand with the same
signed body), then raises a connection error, so botocore retries the request: exactly what
happens when a response is lost on the network. Each test fails on the code before the
revision token (AlreadyExists, created=False, StaleWrite, or a counter at 2).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import botocore.exceptions
import pytest

import dynorm
from dynorm import F
from tests.faults import Hook, deliver, stored_item
from tests.models import Counter, Depot, Stock, Tally


class _LoseFirstResponse:
    """Deliver the first request of ``operation`` to DynamoDB, then drop the connection."""

    def __init__(self, operation: str, between: Callable[[], Any] | None = None) -> None:
        self.operation = operation
        self.between = between
        self.delivered = 0

    def __call__(self, request: Any, **kwargs: Any) -> None:
        if self.delivered == 0:
            self.delivered += 1
            deliver(request)
            if self.between is not None:
                self.between()  # another writer acts before botocore's retry
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)


@pytest.fixture
def lose() -> Iterator[Any]:
    hooks: list[Hook] = []

    def arm(operation: str, between: Callable[[], Any] | None = None) -> _LoseFirstResponse:
        fault = _LoseFirstResponse(operation, between)
        hook = Hook(f"before-send.dynamodb.{operation}", fault)
        hook.__enter__()
        hooks.append(hook)
        return fault

    yield arm
    for hook in hooks:
        hook.__exit__(None, None, None)


def test_create_whose_response_was_lost_is_reported_created(lose: Any, io: Any) -> None:
    fault = lose("PutItem")
    with dynorm.capture() as c:
        obj = io(Counter.objects, "create", name="c1", value=3)
    assert fault.delivered == 1 and c.operations == ["PutItem"]
    assert obj.version == 1 and not obj._state.adding
    stored = stored_item(Counter, name="c1")
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
    fault = lose("TransactWriteItems")
    with dynorm.capture() as c:
        result = io(Tally.objects.filter(name="t1"), "update", n=F("n") + 1)
    # a non-idempotent unversioned update goes as a one-action transaction (ClientRequestToken);
    # its result is read (one consistent GetItem) when first read
    assert fault.delivered == 1 and c.operations == ["TransactWriteItems"]
    assert result.n == 1
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
    first = stored_item(Counter, name="tok")["_dynorm_rev"]
    obj.update(value=F("value") + 1)
    second = stored_item(Counter, name="tok")["_dynorm_rev"]
    obj.value = 4
    obj.save()
    third = stored_item(Counter, name="tok")["_dynorm_rev"]
    with dynorm.transaction() as tx:
        tx.update(obj, value=5)
    fourth = stored_item(Counter, name="tok")["_dynorm_rev"]
    Counter.objects.bulk_create([Counter(name="tok2")])
    fifth = stored_item(Counter, name="tok2")["_dynorm_rev"]
    assert len({first["S"], second["S"], third["S"], fourth["S"], fifth["S"]}) == 5


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
        deliver(request)
        raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    def bump(c: Counter) -> None:
        c.value += 1

    with Hook("before-send.dynamodb.UpdateItem", sometimes_lose), \
            Hook("before-send.dynamodb.TransactWriteItems", sometimes_lose):
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
            deliver(request)
            other.refresh_from_db()
            other.value = 100
            other.save()  # the racing writer (its own request, through the same hook: passes)
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    obj.value = 1
    with Hook("before-send.dynamodb.UpdateItem", apply_then_race), \
            pytest.raises(dynorm.StaleWrite, match="first attempt may have been applied"):
        obj.save()
    assert Counter.objects.get(name="w1").value == 100


def test_a_refused_retry_of_a_path_update_that_may_have_been_applied_says_so(lose: Any) -> None:
    # the first attempt set stock.D; another writer then removed the map, so DynamoDB refused botocore's
    # retry (no map for the path): the error must not say nothing was written
    d = Depot.objects.create(depot_id="d1", stock_by_warehouse={"A": 1})
    fault = lose("UpdateItem", between=lambda: Depot.objects.filter(depot_id="d1").update(stock_by_warehouse=None))
    with pytest.raises(dynorm.ValidationError) as err:
        d.update(stock_by_warehouse__D=4)
    assert fault.delivered == 1 and err.value.maybe_applied is True
    assert "first attempt may have been applied" in str(err.value) and "Nothing was written" not in str(err.value)
    assert "stock_by_warehouse.D" in str(err.value)
    assert "stock_by_warehouse" not in stored_item(Depot, depot_id="d1")


# -- another write lands between a lost attempt and botocore's retry -------------------------------

def test_lost_unversioned_increment_is_not_applied_twice_when_another_write_lands_between(lose: Any) -> None:
    Tally.objects.create(name="t")
    fault = lose("TransactWriteItems", between=lambda: Tally.objects.filter(name="t").update(note="other"))
    result = Tally.objects.filter(name="t").update(n=F("n") + 1)
    assert fault.delivered == 1
    assert result.n == 1 and result.note == "other"
    assert stored_item(Tally, name="t")["n"] == {"N": "1"}


def test_lost_append_is_not_applied_twice_when_another_write_lands_between(lose: Any) -> None:
    obj = Tally.objects.create(name="a", log=[])
    lose("TransactWriteItems", between=lambda: Tally.objects.filter(name="a").update(note="other"))
    obj.update(log=F("log").append(["x"]))
    assert obj.log == ["x"]
    assert stored_item(Tally, name="a")["log"] == {"L": [{"S": "x"}]}


def test_update_with_retry_does_not_reapply_fn_after_a_lost_response(lose: Any) -> None:
    Counter.objects.create(name="c")
    lose("UpdateItem", between=lambda: Counter.objects.filter(name="c").update(note="other"))
    calls = []

    def bump(c: Counter) -> None:
        calls.append(1)
        c.value += 1

    with pytest.raises(dynorm.StaleWrite, match="may have been applied") as info:
        Counter.objects.update_with_retry({"name": "c"}, bump)
    assert getattr(info.value, "maybe_applied", False) and len(calls) == 1
    assert stored_item(Counter, name="c")["value"] == {"N": "1"}


def test_a_conflict_in_the_transactional_path_is_reported_truthfully() -> None:
    Tally.objects.create(name="q")
    with dynorm.capture() as c, pytest.raises(dynorm.ConditionFailed, match="nothing was written"):
        Tally.objects.filter(name="q").update(n=F("n") + 1, condition=dynorm.Q(n__gte=100))
    assert c.operations == ["TransactWriteItems"]
    with pytest.raises(Tally.DoesNotExist):
        Tally.objects.filter(name="missing").update(n=F("n") + 1)
    assert stored_item(Tally, name="q")["n"] == {"N": "0"}


def test_idempotent_unversioned_update_stays_one_update_item() -> None:
    Tally.objects.create(name="i")
    with dynorm.capture() as c:
        Tally.objects.filter(name="i").update(note="x", n=5)
    assert c.operations == ["UpdateItem"]


@pytest.mark.parametrize("update_fields", [None, ["name"]])
def test_retried_unversioned_save_is_ordered_after_a_write_made_during_the_call(lose: Any, update_fields: Any) -> None:
    """Documented (docs/writing.md): the other write happened while save() had not returned, so the
    retried save landing after it is a linearizable outcome; versioned entities refuse it instead."""
    Stock.objects.create(sku="w", name="orig")
    obj = Stock.objects.get(sku="w")
    obj.name = "mine"
    lose("UpdateItem", between=lambda: Stock.objects.filter(sku="w").update(name="theirs"))
    obj.save(update_fields=update_fields)
    assert stored_item(Stock, sku="w")["name"] == {"S": "mine"}


def test_concurrent_unversioned_increments_with_lost_responses_count_exactly() -> None:
    import itertools
    import threading

    Tally.objects.create(name="conc")
    counter = itertools.count()
    local = threading.local()

    def hook(request: Any, **kwargs: Any) -> None:
        if getattr(local, "retrying", False):
            local.retrying = False
            return
        if next(counter) % 3 == 0:
            deliver(request)
            local.retrying = True
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    acknowledged = []

    def work() -> None:
        for _ in range(10):
            Tally.objects.filter(name="conc").update(n=F("n") + 1)
            acknowledged.append(1)

    with Hook("before-send.dynamodb.TransactWriteItems", hook):
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert int(stored_item(Tally, name="conc")["n"]["N"]) == len(acknowledged) == 40


def test_a_transaction_conflict_on_the_transactional_path_is_sent_again_under_a_new_token() -> None:
    """A cancellation that arrived applied nothing: the increment is resent (new token), once."""
    import json

    from tests.faults import fake_response

    Tally.objects.create(name="tc")
    tokens: list[str] = []

    def conflict_twice(request: Any, **kwargs: Any) -> Any:
        tokens.append(json.loads(request.body)["ClientRequestToken"])
        if len(tokens) > 2:
            return None
        return fake_response(400, {"__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                                   "Message": "Transaction cancelled",
                                   "CancellationReasons": [{"Code": "TransactionConflict"}]})

    with Hook("before-send.dynamodb.TransactWriteItems", conflict_twice):
        result = Tally.objects.filter(name="tc").update(n=F("n") + 1)
    assert result.n == 1 and len(set(tokens)) == 3
    assert stored_item(Tally, name="tc")["n"] == {"N": "1"}
