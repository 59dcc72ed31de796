"""A unique-constrained write whose response was lost is applied once and reported as done.

The hook delivers the first TransactWriteItems to DynamoDB Local (the same signed body), then
drops the connection: botocore retries with the same ClientRequestToken, which DynamoDB applies
once. Without the token the retry's sentinel Put would fail its ``attribute_not_exists`` against
the sentinel the first attempt wrote, and the create would be reported as an IntegrityError.
"""

from __future__ import annotations

from typing import Any

import botocore.exceptions

import dynorm
from dynorm import backend
from dynorm.constraints import SENTINEL_TYPE
from tests.faults import Hook, deliver
from tests.models import Member


class _LoseFirst:
    def __init__(self) -> None:
        self.delivered = 0

    def __call__(self, request: Any, **kwargs: Any) -> None:
        if self.delivered == 0:
            self.delivered += 1
            deliver(request)
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)


def _raw_items() -> list[dict[str, Any]]:
    return backend.client().scan(TableName=Member._meta.table.table_name(), ConsistentRead=True)["Items"]


def test_create_whose_response_was_lost_is_created_once(dynorm_tables: Any) -> None:
    fault = _LoseFirst()
    with Hook("before-send.dynamodb.TransactWriteItems", fault), dynorm.capture() as c:
        m = Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io", handle="h")
    assert fault.delivered == 1 and c.operations == ["TransactWriteItems"]
    assert not m._state.adding
    items = _raw_items()
    assert len([i for i in items if i.get("entityType") == {"S": "MEMBER"}]) == 1
    sentinels = [i for i in items if i.get("entityType") == {"S": SENTINEL_TYPE}]
    assert len(sentinels) == 2
    member = next(i for i in items if i.get("entityType") == {"S": "MEMBER"})
    assert {s["_dynorm_rev"]["S"] for s in sentinels} == {member["_dynorm_rev"]["S"]}


def test_swap_whose_response_was_lost_is_applied_once(dynorm_tables: Any) -> None:
    m = Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io")
    m.email = "b@x.io"
    fault = _LoseFirst()
    with Hook("before-send.dynamodb.TransactWriteItems", fault):
        m.save()
    assert fault.delivered == 1
    emails = sorted(i["PK"]["S"].rsplit("#", 1)[1] for i in _raw_items() if i.get("entityType") == {"S": SENTINEL_TYPE})
    assert emails == ["b@x.io"]
    assert Member.objects.get(member_id="m1").email == "b@x.io"
