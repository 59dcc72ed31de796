"""Faults injected with botocore event hooks on real requests: throttling, unprocessed items,
a connection dropped after a transaction reached the server. Every acknowledged write is
present, no transaction is partial, and what was not acknowledged gets a clear error."""

from __future__ import annotations

import json
from typing import Any

import botocore.exceptions
import pytest

import dynorm
from dynorm import F
from dynorm.batch import RetryPolicy, bulk_create
from tests.faults import Hook, deliver, fake_response
from tests.models import Counter, Person


@pytest.mark.slow(reason="real botocore back-off over hundreds of requests (17 s)")
def test_throttling_on_30_percent_of_calls_is_retried_by_botocore() -> None:
    import random

    rng = random.Random(7)
    throttled = {"n": 0}

    def maybe_throttle(**kwargs: Any) -> Any:
        if rng.random() < 0.3:
            throttled["n"] += 1
            return fake_response(400, {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                                       "message": "Rate of requests exceeds the allowed throughput."})
        return None

    # botocore's standard retry mode backs off ~0.5 s per throttle: keep the count small
    with Hook("before-send.dynamodb.*", maybe_throttle):
        with dynorm.capture() as c:
            for i in range(12):
                Counter.objects.create(name=f"c{i}")
            for i in range(12):
                Counter.objects.filter(name=f"c{i}").update(value=F("value") + 1)
    assert throttled["n"] >= 3
    # retried inside botocore: one dynorm request each, none retried twice (an F() increment by key
    # is one one-action TransactWriteItems, its result read only when read: docs/writing.md)
    ops = c.operations
    assert (ops.count("PutItem"), ops.count("TransactWriteItems"), len(ops)) == (12, 12, 24)
    assert sorted(x.value for x in Counter.objects.scan()) == [1] * 12



@pytest.mark.parametrize("attempts", [1, 3])
def test_max_attempts_is_the_total_number_of_attempts_the_first_included(attempts: int) -> None:
    """``connection.max_attempts`` counts every attempt (docs/cli.md, conf.Settings): botocore's
    ``retries.max_attempts`` counts retries only, so passing the setting there sent one more."""
    c = Counter.objects.create(name="throttled")
    sent = {"n": 0}

    def throttle(**kwargs: Any) -> Any:
        sent["n"] += 1
        return fake_response(400, {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                                   "message": "Rate of requests exceeds the allowed throughput."})

    dynorm.configure(max_attempts=attempts)
    with Hook("before-send.dynamodb.GetItem", throttle), pytest.raises(dynorm.ServiceError) as err:
        Counter.objects.get(name=c.name)
    assert err.value.code == "ThrottlingException" and sent["n"] == attempts


@pytest.mark.parametrize("fault", ["throttled", "server error", "connection dropped"])
def test_once_a_run_is_stopping_a_failed_request_is_not_retried(fault: str) -> None:
    """``backend.no_retries_after(stop)``: botocore retries as configured until ``stop`` is set; from
    then on the failed attempt is the last and raises what the last one would. A definite refusal
    (a failed condition) is unaffected, and so is everything after the block."""
    import threading

    from dynorm import backend

    c = Counter.objects.create(name="stopping")
    sent = {"n": 0}

    def fail(request: Any, **kwargs: Any) -> Any:
        sent["n"] += 1
        if fault == "throttled":
            return fake_response(400, {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                                       "message": "Rate of requests exceeds the allowed throughput."})
        if fault == "server error":
            return fake_response(500, {"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError",
                                       "message": "injected"})
        raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    def attempts() -> int:
        sent["n"] = 0
        with Hook("before-send.dynamodb.GetItem", fail), pytest.raises(dynorm.ServiceError):
            Counter.objects.get(name=c.name)
        return sent["n"]

    dynorm.configure(max_attempts=2)
    stop = threading.Event()
    with backend.no_retries_after(stop):
        assert attempts() == 2  # not stopping: botocore retries
        stop.set()
        assert attempts() == 1
        with pytest.raises(dynorm.AlreadyExists):  # DynamoDB's definite answer, as always
            Counter.objects.create(name="stopping")
    assert attempts() == 2  # the block is over: retried again


def test_unprocessed_items_on_every_batch_response_still_write_everything() -> None:
    # every BatchWriteItem response leaves the last third of its items unprocessed (and they
    # are really not written: the request is cut before it is sent)
    held: list[dict[str, Any]] = []

    def cut(params: dict[str, Any], **kwargs: Any) -> None:
        (table, reqs), = params["RequestItems"].items()
        keep = max(1, len(reqs) * 2 // 3)
        held.append({table: reqs[keep:]} if reqs[keep:] else {})
        del reqs[keep:]

    def report(parsed: dict[str, Any], **kwargs: Any) -> None:
        parsed["UnprocessedItems"] = held.pop() if held else {}

    people = [Person(person_id=f"u{i:03d}", name=str(i)) for i in range(300)]
    with Hook("before-parameter-build.dynamodb.BatchWriteItem", cut), \
            Hook("after-call.dynamodb.BatchWriteItem", report):
        with dynorm.capture() as c:
            bulk_create(Person, people, RetryPolicy(max_attempts=10, base_delay=0.001))
    assert c.operations.count("BatchWriteItem") > 12  # 12 chunks, each needed retries
    found = Person.objects.in_bulk([p.person_id for p in people])
    assert len(found) == 300 and found["u042"].name == "42"


def test_unprocessed_keys_on_every_batch_get_response_are_retried() -> None:
    Person.objects.bulk_create([Person(person_id=f"g{i}", name=str(i)) for i in range(150)])
    held: list[dict[str, Any]] = []

    def cut(params: dict[str, Any], **kwargs: Any) -> None:
        for table, spec in params["RequestItems"].items():
            keys = spec["Keys"]
            if len(keys) > 1:
                held.append({table: {"Keys": keys[len(keys) // 2:]}})
                del keys[len(keys) // 2:]

    def report(parsed: dict[str, Any], **kwargs: Any) -> None:
        parsed["UnprocessedKeys"] = held.pop() if held else {}

    with Hook("before-parameter-build.dynamodb.BatchGetItem", cut), \
            Hook("after-call.dynamodb.BatchGetItem", report):
        found = Person.objects.in_bulk([f"g{i}" for i in range(150)], base_delay=0.001)
    assert len(found) == 150


def test_connection_dropped_after_the_transaction_reached_the_server() -> None:
    # The first attempt really reaches DynamoDB (sent by hand with the same body), then the
    # client sees a dropped connection; botocore retries with the same ClientRequestToken and
    # DynamoDB answers the retry idempotently: the increment is applied exactly once.
    c1 = Counter.objects.create(name="tx1")
    c2 = Counter.objects.create(name="tx2")
    sent = {"n": 0}

    def drop_after_sending(request: Any, **kwargs: Any) -> Any:
        if sent["n"] == 0:
            sent["n"] += 1
            deliver(request)  # the server applies the transaction
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)
        return None

    with Hook("before-send.dynamodb.TransactWriteItems", drop_after_sending):
        with dynorm.capture() as c:
            with dynorm.transaction() as tx:
                tx.update(c1, value=F("value") + 1)
                tx.update(c2, value=F("value") + 10)
    assert sent["n"] == 1 and c.operations == ["TransactWriteItems"]
    assert Counter.objects.get(name="tx1").value == 1 and Counter.objects.get(name="tx2").value == 10


@pytest.mark.slow(reason="waits out every retry of a dead connection (10-22 s)")
def test_connection_that_never_recovers_is_a_clear_error_and_nothing_partial() -> None:
    c1 = Counter.objects.create(name="down1")

    def always_drop(request: Any, **kwargs: Any) -> Any:
        raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    with Hook("before-send.dynamodb.TransactWriteItems", always_drop):
        with pytest.raises(dynorm.ServiceError, match="could not reach DynamoDB"):
            with dynorm.transaction() as tx:
                tx.update(c1, value=F("value") + 1)
                tx.create(Counter(name="down2"))
    assert Counter.objects.get(name="down1").value == 0
    assert not Counter.objects.filter(name="down2").exists()


def test_always_throttled_batch_reports_exactly_what_is_missing() -> None:
    def always(**kwargs: Any) -> Any:
        body = json.loads(kwargs["request"].body)
        (table, reqs), = body["RequestItems"].items()
        return fake_response(200, {"UnprocessedItems": {table: reqs[:5]}})

    with Hook("before-send.dynamodb.BatchWriteItem", always):
        with pytest.raises(dynorm.BatchIncomplete) as err:
            bulk_create(Person, [Person(person_id=f"t{i}", name="x") for i in range(10)],
                        RetryPolicy(max_attempts=2, base_delay=0.001), sleep=lambda s: None)
    assert err.value.unprocessed == [{"person_id": f"t{i}"} for i in range(5)]
    assert "5 of 10 Person item(s)" in str(err.value)
