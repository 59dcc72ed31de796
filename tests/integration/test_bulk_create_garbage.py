"""What a ``bulk_create`` keeps while it sends: every object it holds until it returns is walked by each
garbage collection meanwhile, and makes the next full collection come sooner (issue 24).

Counted, not timed: the objects the collector tracks (``gc.get_objects()``, after a collection) while
each BatchWriteItem is sent, against the count before the call (the instances were made before).
"""

from __future__ import annotations

import gc
from typing import Any

from tests.faults import Hook
from tests.models import Person

ITEMS = 250


def _tracked_while_sending(people: list[Person]) -> tuple[int, list[int]]:
    """(objects tracked before the call, objects tracked at its first and last BatchWriteItem) of
    ``bulk_create(people)``."""
    alive: list[int] = []
    sends: list[int] = []

    def count(**kwargs: Any) -> None:
        sends.append(1)
        if len(sends) in (1, ITEMS // 25):  # the first and the last
            gc.collect()  # botocore's cyclic garbage of the requests before (endpoint rules) is not the call's
            alive.append(len(gc.get_objects()))

    with Hook("before-send.dynamodb.BatchWriteItem", count):
        Person.objects.bulk_create([Person(person_id="warm", name="w")])  # first-use caches are not per item
        alive.clear()
        sends.clear()
        gc.collect()
        before = len(gc.get_objects())
        Person.objects.bulk_create(people)  # no capture(): its records would hold the requests
    return before, alive


def test_a_bulk_create_holds_about_four_tracked_objects_per_item_until_it_returns() -> None:
    """Per item: its WriteOp, the op's params, its item and its key (DynamoDB JSON); the
    ``{"PutRequest": {"Item": ...}}`` wrappers live only while their own BatchWriteItem does (they were
    built for all items up front, with a triple per item: 7 per item)."""
    people = [Person(person_id=f"gc{i:04d}", name=str(i)) for i in range(ITEMS)]
    before, alive = _tracked_while_sending(people)
    assert len(alive) == 2
    per_item = [(n - before) / ITEMS for n in alive]
    assert max(per_item) < 5, per_item  # 4.5 (a few objects per call besides); 7.3 before
    assert Person.objects.scan().count() == ITEMS + 1
    assert all(not p._state.adding for p in people)
