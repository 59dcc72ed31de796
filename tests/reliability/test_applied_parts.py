"""A call made of several requests says exactly which of its parts were applied.

An unversioned ``update(n=F("n") + 1)`` is one TransactWriteItems whose result is read on first
access; ``bulk_update`` is one TransactWriteItems per 100 items. When a later request fails after
an earlier one was applied, the error says what went in (``BatchIncomplete`` with
``.written``/``.unprocessed``), never a plain ``ServiceError`` that a caller would retry, applying
the write twice; a failed or stopped first read of an increment's result leaves the field
deferred, never showing the value from before the write. Faults are injected on real requests to
DynamoDB Local with botocore event hooks.
"""

from __future__ import annotations

from typing import Any

import botocore.exceptions
import pytest

import dynorm
from dynorm import F, conf
from tests.faults import Hook, deliver, stored_item
from tests.faults import fake_response as _response
from tests.models import Person, Reading

THROTTLED = {"__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
             "message": "The level of configured provisioned throughput for the table was exceeded."}



def _throttled(**kwargs: Any) -> Any:
    return _response(400, THROTTLED)


def _lost(request: Any, **kwargs: Any) -> Any:
    raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)


def _nth(n: int, action: Any) -> Any:
    """A before-send hook that answers the n-th request it sees (1-based) with ``action(request)``."""
    seen = {"n": 0}

    def hook(request: Any, **kwargs: Any) -> Any:
        seen["n"] += 1
        return action(request) if seen["n"] >= n else None

    return hook


@pytest.mark.parametrize("how", ["queryset", "instance"])
def test_an_increment_is_one_request_and_a_failed_first_read_leaves_its_result_deferred(how: str, io: Any) -> None:
    """No read-back follows the TransactWriteItems: the result is read on first access, and a failed
    read there raises the read's error (nothing to send again: the write had returned) and leaves
    the field deferred, never showing the value from before the write."""
    Reading.objects.create(sensor="s", year=2026, seq=1, value=10)
    obj = Reading.objects.get(sensor="s", year=2026, seq=1)
    with dynorm.capture() as c:
        if how == "queryset":
            item = io(Reading.objects.filter(sensor="s", year=2026, seq=1), "update", value=F("value") + 1)
        else:
            item = io(obj, "update", value=F("value") + 1)
    assert c.operations == ["TransactWriteItems"]
    assert stored_item(Reading, sensor="s", year=2026, seq=1)["value"] == {"N": "11"}  # applied once
    assert item.key == {"sensor": "s", "year": 2026, "seq": 1}
    if how == "instance":
        assert item is obj
    assert "value" not in item.attribute_values  # deferred: never the 10 from before the write
    # botocore's standard retry mode backs off ~0.5 s per throttle: two attempts keep it short
    # (the field is read outside the event loop: a plain read may send a GetItem)
    with conf.overridden(max_attempts=2), Hook("before-send.dynamodb.GetItem", _throttled):
        with dynorm.capture() as c, pytest.raises(dynorm.ServiceError) as err:
            _ = item.value
    assert c.operations == ["GetItem"] and err.value.code == "ProvisionedThroughputExceededException"
    assert "value" not in item.attribute_values  # still deferred
    with dynorm.capture() as c:
        assert item.value == 11
    assert c.operations == ["GetItem"]
    assert stored_item(Reading, sensor="s", year=2026, seq=1)["value"] == {"N": "11"}


def test_a_bulk_update_whose_second_chunk_is_throttled_lists_what_went_in() -> None:
    people = [Person(person_id=f"p{i:03d}", name="old") for i in range(150)]
    Person.objects.bulk_create(people)
    read = sorted(Person.objects.scan(), key=lambda p: p.person_id)
    for p in read:
        p.name = "new"
    with conf.overridden(max_attempts=2), Hook("before-send.dynamodb.TransactWriteItems",
                                               _nth(2, lambda request: _response(400, THROTTLED))):
        with pytest.raises(dynorm.BatchIncomplete) as err:
            Person.objects.bulk_update(read, ["name"])
    e = err.value
    assert [p.person_id for p in e.written] == [f"p{i:03d}" for i in range(100)]
    assert [p.person_id for p in e.unprocessed] == [f"p{i:03d}" for i in range(100, 150)]
    assert e.uncertain == []
    assert "100 of 150" in str(e)
    stored = {p.person_id: p.name for p in Person.objects.scan()}
    assert stored == {f"p{i:03d}": "new" if i < 100 else "old" for i in range(150)}


def test_a_bulk_update_whose_second_chunk_gets_no_answer_lists_it_as_uncertain() -> None:
    people = [Person(person_id=f"q{i:03d}", name="old") for i in range(150)]
    Person.objects.bulk_create(people)
    read = sorted(Person.objects.scan(), key=lambda p: p.person_id)
    for p in read:
        p.name = "new"

    def applied_then_lost(request: Any) -> Any:
        deliver(request)  # DynamoDB applies it; the answer never arrives
        raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    with conf.overridden(max_attempts=2), Hook("before-send.dynamodb.TransactWriteItems",
                                               _nth(2, applied_then_lost)):
        with pytest.raises(dynorm.BatchIncomplete) as err:
            Person.objects.bulk_update(read, ["name"])
    e = err.value
    assert [p.person_id for p in e.written] == [f"q{i:03d}" for i in range(100)]
    assert [p.person_id for p in e.uncertain] == [f"q{i:03d}" for i in range(100, 150)]
    assert e.unprocessed == e.uncertain
    assert {p.name for p in Person.objects.scan()} == {"new"}  # the truth: it did go in


def test_a_bulk_update_whose_only_chunk_is_throttled_raises_the_plain_error() -> None:
    Person.objects.bulk_create([Person(person_id="r1", name="old")])
    read = Person.objects.get(person_id="r1")
    read.name = "new"
    with conf.overridden(max_attempts=2), Hook("before-send.dynamodb.TransactWriteItems",
                                               _nth(1, lambda request: _response(400, THROTTLED))):
        with pytest.raises(dynorm.ServiceError):
            Person.objects.bulk_update([read], ["name"])  # nothing went in: a plain error says so
    assert Person.objects.get(person_id="r1").name == "old"


def test_a_bulk_update_whose_only_chunk_gets_no_answer_says_it_may_have_gone_in() -> None:
    Person.objects.bulk_create([Person(person_id="u1", name="old")])
    read = Person.objects.get(person_id="u1")
    read.name = "new"

    def applied_then_lost(request: Any) -> Any:
        deliver(request)
        raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    with conf.overridden(max_attempts=2), Hook("before-send.dynamodb.TransactWriteItems",
                                               _nth(1, applied_then_lost)):
        with pytest.raises(dynorm.BatchIncomplete) as err:
            Person.objects.bulk_update([read], ["name"])
    assert err.value.written == [] and err.value.uncertain == [read]
    assert Person.objects.get(person_id="u1").name == "new"  # it did go in: a plain error would hide that


def test_an_increment_whose_first_read_is_stopped_never_keeps_the_old_value(io: Any) -> None:
    """The TransactWriteItems went in; Ctrl-C while the first read of its result is in flight."""
    Reading.objects.create(sensor="c", year=2026, seq=1, value=10)
    obj = Reading.objects.get(sensor="c", year=2026, seq=1)
    io(obj, "update", value=F("value") - 3)

    def interrupt(**kwargs: Any) -> None:
        raise KeyboardInterrupt

    with Hook("before-send.dynamodb.GetItem", interrupt), pytest.raises(KeyboardInterrupt):
        _ = obj.value
    assert stored_item(Reading, sensor="c", year=2026, seq=1)["value"] == {"N": "7"}  # applied
    assert "value" not in obj.attribute_values  # deferred: never the 10 from before the write
    io(obj, "save")  # loads it first: the decrement is not written back away
    assert stored_item(Reading, sensor="c", year=2026, seq=1)["value"] == {"N": "7"}
    assert obj.value == 7


def test_an_increment_whose_every_answer_is_lost_says_it_may_have_been_applied() -> None:
    Reading.objects.create(sensor="l", year=2026, seq=1, value=0)
    sent = {"n": 0}

    def first_applied_all_lost(request: Any, **kwargs: Any) -> Any:
        sent["n"] += 1
        if sent["n"] == 1:
            deliver(request)  # DynamoDB applies it; no answer ever arrives
        raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    with conf.overridden(max_attempts=2), Hook("before-send.dynamodb.TransactWriteItems", first_applied_all_lost):
        with pytest.raises(dynorm.ServiceError) as err:
            Reading.objects.filter(sensor="l", year=2026, seq=1).update(value=F("value") + 1)
    e = err.value
    assert e.maybe_applied and "may have been applied" in str(e) and "before sending it again" in str(e)
    assert stored_item(Reading, sensor="l", year=2026, seq=1)["value"] == {"N": "1"}  # it was
    # an answer from DynamoDB (throttled) means nothing was applied; a read applies nothing either
    with conf.overridden(max_attempts=2), Hook("before-send.dynamodb.TransactWriteItems", _throttled):
        with pytest.raises(dynorm.ServiceError) as err:
            Reading.objects.filter(sensor="l", year=2026, seq=1).update(value=F("value") + 1)
    assert not err.value.maybe_applied and "may have been applied" not in str(err.value)
    with conf.overridden(max_attempts=2), Hook("before-send.dynamodb.GetItem", _lost):
        with pytest.raises(dynorm.ServiceError) as err:
            Reading.objects.get(sensor="l", year=2026, seq=1)
    assert not err.value.maybe_applied
    assert stored_item(Reading, sensor="l", year=2026, seq=1)["value"] == {"N": "1"}


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_a_bulk_create_stopped_by_an_exception_not_dynorms_marks_exactly_the_items_that_went_in(
        error: type[BaseException]) -> None:
    """Ctrl-C, or an exception of the application's own hook, before the third BatchWriteItem: it
    propagates as it is (never wrapped), and the instances whose items went in, and only those, are
    marked stored (``_state.adding`` False, as in Django; ``version`` 1 for a versioned model)."""
    people = [Person(person_id=f"k{i:03d}", name="n") for i in range(60)]

    def stop(request: Any) -> Any:
        raise error("stopped by the application")

    with Hook("before-send.dynamodb.BatchWriteItem", _nth(3, stop)), pytest.raises(error):
        Person.objects.bulk_create(people)
    stored = {p.person_id for p in Person.objects.scan()}
    assert stored == {f"k{i:03d}" for i in range(50)}  # two chunks of 25 went in
    assert {p.person_id for p in people if not p._state.adding} == stored
