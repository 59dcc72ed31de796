"""Batches tell exactly what went in (issue 9, section 4): refused or unanswered requests stop a
batch with BatchIncomplete listing written, unprocessed and uncertain items; no error names a table '?'."""

from __future__ import annotations

import json
from typing import Any

import botocore.exceptions
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dynorm
from dynorm.batch import RetryPolicy, bulk_create
from tests.faults import Hook, deliver, fake_response
from tests.models import Counter, Person

REFUSED = {"__type": "com.amazon.coral.validate#ValidationException",
           "message": "One or more parameter values were invalid: Size limit exceeded"}


def _on_request(n: int, action: Any) -> Any:
    """A before-send hook that runs ``action(request)`` on the n-th BatchWriteItem (1-based) only."""
    seen = {"n": 0}

    def hook(request: Any, **kwargs: Any) -> Any:
        seen["n"] += 1
        return action(request) if seen["n"] == n else None

    return hook


def _send_by_hand(request: Any, body: dict[str, Any] | None = None) -> dict[str, Any]:
    return json.loads(deliver(request, json.dumps(body).encode() if body is not None else None))  # type: ignore[no-any-return]


def _stored_people() -> set[str]:
    return {p.person_id for p in Person.objects.scan()}


def test_a_refused_chunk_stops_the_batch_and_the_error_lists_what_went_in() -> None:
    people = [Person(person_id=f"p{i:02d}", name="x") for i in range(50)]
    with Hook("before-send.dynamodb.BatchWriteItem", _on_request(2, lambda r: fake_response(400, REFUSED))):
        with pytest.raises(dynorm.BatchIncomplete) as err:
            Person.objects.bulk_create(people)
    e = err.value
    assert e.written == [{"person_id": f"p{i:02d}"} for i in range(25)]
    assert e.unprocessed == [{"person_id": f"p{i:02d}"} for i in range(25, 50)]
    assert e.uncertain == []
    assert _stored_people() == {f"p{i:02d}" for i in range(25)}
    table = Person._meta.table.table_name()
    assert "?" not in str(e) and table in str(e) and "25 of 50 Person item(s) went in" in str(e)
    assert isinstance(e.__cause__, dynorm.ServiceError) and "ValidationException" in str(e)


def test_a_chunk_refused_on_its_retry_counts_the_items_its_first_request_wrote() -> None:
    people = [Person(person_id=f"q{i:02d}", name="x") for i in range(50)]

    def half(request: Any) -> Any:  # DynamoDB writes 20 of the 25 and leaves 5 unprocessed
        body = json.loads(request.body)
        (table, reqs), = body["RequestItems"].items()
        _send_by_hand(request, {**body, "RequestItems": {table: reqs[:20]}})
        return fake_response(200, {"UnprocessedItems": {table: reqs[20:]}})

    hooks = {"n": 0}

    def second_half_then_refuse(request: Any, **kwargs: Any) -> Any:
        hooks["n"] += 1
        if hooks["n"] == 2:
            return half(request)
        if hooks["n"] == 3:
            return fake_response(400, REFUSED)
        return None

    with Hook("before-send.dynamodb.BatchWriteItem", second_half_then_refuse):
        with pytest.raises(dynorm.BatchIncomplete) as err:
            bulk_create(Person, people, RetryPolicy(base_delay=0.001), sleep=lambda s: None)
    assert [k["person_id"] for k in err.value.written] == [f"q{i:02d}" for i in range(45)]
    assert [k["person_id"] for k in err.value.unprocessed] == [f"q{i:02d}" for i in range(45, 50)]
    assert _stored_people() == {f"q{i:02d}" for i in range(45)}


@pytest.mark.slow(reason="waits out botocore's retries of every lost answer (16-19 s)")
def test_a_chunk_whose_answers_are_all_lost_is_reported_uncertain_not_failed() -> None:
    people = [Person(person_id=f"u{i:02d}", name="x") for i in range(30)]
    sent = {"n": 0}

    def applied_then_dropped(request: Any, **kwargs: Any) -> Any:
        sent["n"] += 1
        if sent["n"] >= 2:  # the second chunk reaches DynamoDB every time, its answer never arrives
            _send_by_hand(request)
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)
        return None

    with Hook("before-send.dynamodb.BatchWriteItem", applied_then_dropped):
        with pytest.raises(dynorm.BatchIncomplete) as err:
            Person.objects.bulk_create(people)
    e = err.value
    assert [k["person_id"] for k in e.written] == [f"u{i:02d}" for i in range(25)]
    assert [k["person_id"] for k in e.uncertain] == [f"u{i:02d}" for i in range(25, 30)]
    assert e.unprocessed == e.uncertain
    assert "may or may not have gone in" in str(e)
    assert _stored_people() == {f"u{i:02d}" for i in range(30)}  # the truth: they did go in


def test_versioned_items_get_their_version_only_when_written() -> None:
    counters = [Counter(name=f"c{i:02d}") for i in range(30)]
    with Hook("before-send.dynamodb.BatchWriteItem", _on_request(2, lambda r: fake_response(400, REFUSED))):
        with pytest.raises(dynorm.BatchIncomplete):
            Counter.objects.bulk_create(counters)
    assert [c.version for c in counters] == [1] * 25 + [None] * 5
    assert Counter.objects.get(name="c00").version == 1


@pytest.mark.parametrize("operation, action", [
    ("BatchWriteItem", lambda: Person.objects.bulk_create([Person(person_id="a", name="x")])),
    ("BatchGetItem", lambda: Person.objects.in_bulk(["a", "b"])),
    ("TransactWriteItems", lambda: _tx()),
])
def test_no_error_names_a_table_question_mark(operation: str, action: Any) -> None:
    with Hook(f"before-send.dynamodb.{operation}", lambda **kw: fake_response(400, REFUSED)):
        with pytest.raises(dynorm.DynormError) as err:
            action()
    text = str(err.value) + str(err.value.__cause__ or "")
    assert " ? " not in text and "on ?" not in text
    assert Person._meta.table.table_name() in text


def _tx() -> None:
    with dynorm.transaction() as tx:
        tx.create(Person(person_id="t", name="x"))


_run = iter(range(10 ** 6))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 70), refuse_at=st.none() | st.integers(1, 6),
       tails=st.lists(st.integers(0, 4), min_size=12, max_size=12))
def test_what_batch_incomplete_reports_matches_a_simulation_and_the_table(n: int, refuse_at: int | None,
                                                                          tails: list[int]) -> None:
    """Request j leaves its last tails[j] items unprocessed, or is refused when j == refuse_at."""
    run = next(_run)
    ids = [f"h{run}-{i:02d}" for i in range(n)]

    # the oracle: a plain simulation of chunks, attempts and refusals
    expect_written: list[str] = []
    j, stopped = 0, False
    for start in range(0, n, 25):
        pending = ids[start:start + 25]
        for _attempt in range(3):
            j += 1
            if j == refuse_at:
                stopped = True
                break
            keep = len(pending) - min(tails[j - 1], len(pending) - 1) if len(pending) > 1 else len(pending)
            expect_written += pending[:keep]
            pending = pending[keep:]
            if not pending:
                break
        if stopped:
            break

    seen = {"j": 0}

    def fault(request: Any, **kwargs: Any) -> Any:
        seen["j"] += 1
        if seen["j"] == refuse_at:
            return fake_response(400, REFUSED)
        body = json.loads(request.body)
        (table, reqs), = body["RequestItems"].items()
        keep = len(reqs) - min(tails[seen["j"] - 1], len(reqs) - 1) if len(reqs) > 1 else len(reqs)
        _send_by_hand(request, {**body, "RequestItems": {table: reqs[:keep]}})
        return fake_response(200, {"UnprocessedItems": {table: reqs[keep:]} if reqs[keep:] else {}})

    with Hook("before-send.dynamodb.BatchWriteItem", fault):
        try:
            bulk_create(Person, [Person(person_id=i, name="x") for i in ids],
                        RetryPolicy(max_attempts=3, base_delay=0.001), sleep=lambda s: None)
            written, unprocessed = ids, []
        except dynorm.BatchIncomplete as exc:
            written = [k["person_id"] for k in exc.written]
            unprocessed = [k["person_id"] for k in exc.unprocessed]
    assert sorted(written) == sorted(expect_written)
    assert sorted(written + unprocessed) == ids
    assert {p for p in _stored_people() if p.startswith(f"h{run}-")} == set(expect_written)
