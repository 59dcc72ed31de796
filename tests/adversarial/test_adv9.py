"""Adversarial tests for issue 9 ("writes that lose nothing and report the truth").

Each test fails on the code of branch adv9 (34e0e74) and passes once the bug it names is fixed.
Lost responses are simulated as in tests/reliability/test_lost_responses.py: a botocore
before-send hook delivers the request to DynamoDB Local by hand, optionally lets another
writer act, then raises a connection error so botocore retries the same request.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any, Callable, Iterator, Optional

import botocore.exceptions
import pytest

import dynorm
from dynorm import Entity, F, Index, fields
from tests.faults import Hook
from tests.models import Retail

pytestmark = pytest.mark.integration


class A9Tally(Entity):
    """Unversioned: only the revision token protects an increment."""

    name = fields.String()
    n = fields.Integer(default=0)
    note = fields.String(null=True)
    log = fields.List(null=True)

    class Meta:
        table = Retail
        entity_type = "A9_TALLY"
        pk = "{version}#A9TALLY#{name}"
        sk = "METADATA"


class A9Counter(Entity):
    name = fields.String()
    value = fields.Integer(default=0)
    note = fields.String(null=True)
    version = fields.Version()

    class Meta:
        table = Retail
        entity_type = "A9_COUNTER"
        pk = "{version}#A9COUNTER#{name}"
        sk = "METADATA"


class A9Stock(Entity):
    sku = fields.String()
    name = fields.String(null=True)
    warehouse = fields.String(null=True)

    class Meta:
        table = Retail
        entity_type = "A9_STOCK"
        pk = "{version}#A9STOCK#{sku}"
        sk = "METADATA"
        indexes = {"by_wh": Index("GSI1", pk="{version}#A9WH#{warehouse}", sk="A9STOCK#{sku}")}


class A9Lsi(Entity):
    """``label`` is stored as ``placed_at``, the sort key of Retail's LSI1 (1024-byte limit)."""

    lid = fields.String()
    label = fields.String(null=True, attr_name="placed_at")

    class Meta:
        table = Retail
        entity_type = "A9_LSI"
        pk = "{version}#A9LSI#{lid}"
        sk = "METADATA"


class A9Num(Entity):
    nid = fields.String()
    num = fields.Number(null=True)

    class Meta:
        table = Retail
        entity_type = "A9_NUM"
        pk = "{version}#A9NUM#{nid}"
        sk = "METADATA"


@pytest.fixture(autouse=True)
def _tables(dynorm_tables: list[type]) -> list[type]:
    return dynorm_tables


class _LoseFirst:
    """Deliver the first request, run ``between`` (another writer), then drop the connection."""

    def __init__(self, between: Optional[Callable[[], Any]] = None) -> None:
        self.between = between
        self.delivered = 0

    def __call__(self, request: Any, **kwargs: Any) -> None:
        if self.delivered:
            return
        self.delivered += 1
        req = urllib.request.Request(request.url, data=request.body, headers=dict(request.headers.items()))
        try:
            urllib.request.urlopen(req, timeout=10).read()  # noqa: S310 - 127.0.0.1 only
        except urllib.error.HTTPError:
            pass
        if self.between is not None:
            self.between()
        raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)


@pytest.fixture
def lose() -> Iterator[Callable[..., _LoseFirst]]:
    hooks: list[Hook] = []

    def arm(operation: str, between: Optional[Callable[[], Any]] = None) -> _LoseFirst:
        fault = _LoseFirst(between)
        hook = Hook(f"before-send.dynamodb.{operation}", fault)
        hook.__enter__()
        hooks.append(hook)
        return fault

    yield arm
    for hook in hooks:
        hook.__exit__(None, None, None)


def _raw(model: type[Entity], **key: Any) -> Optional[dict[str, Any]]:
    resp = dynorm.backend.call("GetItem", {"TableName": model._meta.table.table_name(), "ConsistentRead": True,
                                           "Key": model._meta.primary_key(key)})
    return resp.get("Item")


# -- lost responses with another dynorm writer in between ---------------------------------------

# -- undeclared / unread data lost ---------------------------------------------------------------

def test_save_update_fields_after_only_does_not_remove_a_field_that_was_not_read() -> None:
    """Django loads a deferred field before saving it; dynorm REMOVEs the stored value and the GSI keys."""
    A9Stock.objects.create(sku="s1", name="bolt", warehouse="north")
    obj = A9Stock.objects.only("sku", "name").get(sku="s1")
    obj.name = "bolt M8"
    try:
        obj.save(update_fields=["name", "warehouse"])
    except dynorm.ValidationError:
        pass  # refusing is acceptable too; losing the value is not
    stored = _raw(A9Stock, sku="s1")
    assert stored is not None
    assert stored.get("warehouse") == {"S": "north"}
    assert stored.get("GSI1PK") == {"S": "v1#A9WH#north"} and stored.get("GSI1SK") == {"S": "A9STOCK#s1"}
    assert [s.sku for s in A9Stock.objects.filter(warehouse="north")] == ["s1"]


# -- optimistic locking ------------------------------------------------------------------------

# -- values and sizes --------------------------------------------------------------------------

# -- a write that succeeded reported as failed (unreadable item as written) ---------------------

def _poison(model: type[Entity], attr: str, **key: Any) -> None:
    """Another writer stores ``attr`` with the wrong type (a number where the model has a string)."""
    dynorm.backend.call("UpdateItem", {
        "TableName": model._meta.table.table_name(), "Key": model._meta.primary_key(key),
        "UpdateExpression": "SET #a = :v", "ExpressionAttributeNames": {"#a": attr},
        "ExpressionAttributeValues": {":v": {"N": "5"}}})


def test_update_that_was_applied_is_not_reported_as_a_failure_when_the_item_has_a_bad_attribute() -> None:
    """The UpdateItem is applied, then decoding ALL_NEW raises pynamodb's AttributeDeserializationError:
    the caller is told the write failed (and the error names neither item nor dynorm)."""
    A9Tally.objects.create(name="p")
    _poison(A9Tally, "note", name="p")
    try:
        A9Tally.objects.filter(name="p").update(n=F("n") + 1)
        reported_applied = True
    except Exception as exc:  # noqa: BLE001
        reported_applied = False
        failure = exc
    stored = _raw(A9Tally, name="p")
    assert stored is not None and stored["n"] == {"N": "1"}  # it was applied...
    assert reported_applied, f"...but reported as failed: {failure!r}"


def test_failed_condition_on_an_item_with_a_bad_attribute_raises_condition_failed() -> None:
    A9Tally.objects.create(name="q")
    _poison(A9Tally, "note", name="q")
    with pytest.raises(dynorm.ConditionFailed):
        A9Tally.objects.filter(name="q").update(n=F("n") + 1, condition=dynorm.Q(n__gte=100))


@pytest.mark.parametrize("how", ["update", "queryset_update", "save_update_fields", "transaction_update"])
def test_lsi_sort_key_over_1024_bytes_is_refused_before_any_request_on_every_write(how: str) -> None:
    """create() and save() refuse it (docs: 'checked on every table, GSI and LSI key attribute');
    update(), queryset update(), save(update_fields) and transaction updates send it."""
    with pytest.raises(dynorm.ValidationError):
        A9Lsi.objects.create(lid="a", label="x" * 1100)
    A9Lsi.objects.create(lid="b", label="short")
    obj = A9Lsi.objects.get(lid="b")
    long = "y" * 1100
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError):
            if how == "update":
                obj.update(label=long)
            elif how == "queryset_update":
                A9Lsi.objects.filter(lid="b").update(label=long)
            elif how == "save_update_fields":
                obj.label = long
                obj.save(update_fields=["label"])
            else:
                with dynorm.transaction() as tx:
                    tx.update(obj, label=long)
    assert c.count == 0
    assert A9Lsi.objects.get(lid="b").label == "short"


def test_empty_string_in_an_lsi_sort_key_attribute_is_refused_before_any_request() -> None:
    """DynamoDB refuses an empty string in any index key attribute; today create() sends a PutItem and
    gets ServiceError(ValidationException) back (an empty GSI key is refused before the request)."""
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError):
            A9Lsi.objects.create(lid="e", label="")
    assert c.count == 0


@pytest.mark.parametrize("how", ["refresh_from_db", "deferred_field"])
def test_refresh_and_deferred_load_of_a_bad_item_raise_unreadable_items(how: str) -> None:
    """get()/list()/in_bulk()/related() raise dynorm.UnreadableItems naming key and attribute;
    refresh_from_db() and the load of a deferred field raise pynamodb's bare AttributeDeserializationError."""
    A9Tally.objects.create(name="bad")
    _poison(A9Tally, "note", name="bad")
    obj = A9Tally.objects.only("name", "n").get(name="bad")
    with pytest.raises(dynorm.UnreadableItems) as info:
        if how == "refresh_from_db":
            obj.refresh_from_db()
        else:
            obj.note  # noqa: B018 - loads the deferred field
    assert info.value.errors and info.value.errors[0].attribute == "note"
