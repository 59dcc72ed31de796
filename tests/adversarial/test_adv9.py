"""Adversarial tests for issue 9 ("writes that lose nothing and report the truth").

Each test fails on the code of branch adv9 (34e0e74) and passes once the bug it names is fixed.
Lost responses are simulated as in tests/reliability/test_lost_responses.py: a botocore
before-send hook delivers the request to DynamoDB Local by hand, optionally lets another
writer act, then raises a connection error so botocore retries the same request.
"""

from __future__ import annotations

import decimal
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

def test_lost_unversioned_increment_is_not_applied_twice_when_another_write_lands_between(lose: Any) -> None:
    """docs/writing.md: in this window the retry 'reports the conflict'; today it applies F+1 again."""
    A9Tally.objects.create(name="t")
    fault = lose("UpdateItem", between=lambda: A9Tally.objects.filter(name="t").update(note="other writer"))
    try:
        A9Tally.objects.filter(name="t").update(n=F("n") + 1)
        acknowledged = True
    except dynorm.DynormError:
        acknowledged = False
    assert fault.delivered == 1
    stored = _raw(A9Tally, name="t")
    assert stored is not None
    # acknowledged means applied exactly once; an error must mean it may have been applied (never twice)
    assert stored["n"] == {"N": "1"}, f"acknowledged={acknowledged}, stored n={stored['n']}"


def test_lost_append_is_not_applied_twice_when_another_write_lands_between(lose: Any) -> None:
    obj = A9Tally.objects.create(name="a", log=[])
    lose("UpdateItem", between=lambda: A9Tally.objects.filter(name="a").update(note="other writer"))
    try:
        obj.update(log=F("log").append(["x"]))
    except dynorm.DynormError:
        pass
    stored = _raw(A9Tally, name="a")
    assert stored is not None and stored["log"] == {"L": [{"S": "x"}]}


def test_update_with_retry_does_not_reapply_fn_after_a_lost_response(lose: Any) -> None:
    """The retry's StaleWrite says 'may have been applied'; update_with_retry swallows it and runs fn again."""
    A9Counter.objects.create(name="c")
    lose("UpdateItem", between=lambda: A9Counter.objects.filter(name="c").update(note="other writer"))
    calls = []

    def bump(c: A9Counter) -> None:
        calls.append(1)
        c.value += 1

    try:
        A9Counter.objects.update_with_retry({"name": "c"}, bump)
        acknowledged = True
    except dynorm.DynormError:
        acknowledged = False
    stored = _raw(A9Counter, name="c")
    assert stored is not None
    assert stored["value"] == {"N": "1"}, f"acknowledged={acknowledged}, fn ran {len(calls)}x, stored {stored['value']}"


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

def test_versioned_entity_can_save_an_item_stored_without_a_version_attribute() -> None:
    """Rolling deploy: fields.Version() added to a model whose items were written before (or by boto3)."""
    tmeta = Retail._meta
    dynorm.backend.call("PutItem", {"TableName": Retail.table_name(), "Item": {
        **A9Counter._meta.primary_key({"name": "old"}), tmeta.type_attribute: {"S": "A9_COUNTER"},
        "name": {"S": "old"}, "value": {"N": "5"}, "nick": {"S": "keep"}}})
    obj = A9Counter.objects.get(name="old")
    obj.value = 6
    obj.save()  # today: AlreadyExists (a PutItem attribute_not_exists for an item that was read)
    stored = _raw(A9Counter, name="old")
    assert stored is not None and stored["value"] == {"N": "6"} and stored["nick"] == {"S": "keep"}
    A9Counter.objects.update_with_retry({"name": "old"}, lambda c: setattr(c, "value", c.value + 1))
    assert A9Counter.objects.get(name="old").value == 7


def test_save_update_fields_of_an_unread_instance_does_not_reset_the_version() -> None:
    A9Counter.objects.create(name="v")
    stale_reader = A9Counter.objects.get(name="v")  # version 1
    for i in range(2):
        cur = A9Counter.objects.get(name="v")
        cur.value = 10 + i
        cur.save()  # version 3
    try:
        A9Counter(name="v", value=99).save(update_fields=["value"])
    except dynorm.DynormError:
        pass  # refusing (nothing read, so nothing to check against) is fine
    stored = _raw(A9Counter, name="v")
    assert stored is not None and int(stored["version"]["N"]) >= 3, f"version went back to {stored['version']}"
    stale_reader.note = "stale"
    with pytest.raises(dynorm.StaleWrite):
        stale_reader.save()  # a reader of version 1 must not win after the item moved on


# -- values and sizes --------------------------------------------------------------------------

@pytest.mark.parametrize("value", [decimal.Decimal("0.1"), decimal.Decimal("1E-130")])
def test_number_given_a_decimal_reads_back_equal(value: decimal.Decimal) -> None:
    """docs: Number reads back 'a float when a float is exactly the stored number'; 0.1 is not."""
    A9Num.objects.create(nid="n", num=value)
    back = A9Num.objects.get(nid="n").num
    assert back == value, f"{value!r} came back {back!r}"


def test_save_of_an_oversize_item_is_refused_before_any_request_like_create() -> None:
    size = 400 * 1024 - 60  # the declared fields fit; PK/SK/type/revision push the item over 400 KB
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError):
            A9Stock.objects.create(sku="big1", name="x" * size)
    assert c.count == 0
    A9Stock.objects.create(sku="big2", name="small")
    obj = A9Stock.objects.get(sku="big2")
    obj.name = "x" * size
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError):
            obj.save()  # today: ServiceError from DynamoDB after one UpdateItem
    assert c.count == 0


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


def test_bulk_update_batch_incomplete_lists_the_items_written() -> None:
    """BatchIncomplete.written is documented as 'the keys written'; bulk_update leaves it empty."""
    A9Counter.objects.bulk_create([A9Counter(name=f"c{i}") for i in range(6)])
    objs = [A9Counter.objects.get(name=f"c{i}") for i in range(6)]
    other = A9Counter.objects.get(name="c4")
    other.value = 7
    other.save()  # objs[4] is now stale: the third chunk is cancelled
    for obj in objs:
        obj.value = 1
    with pytest.raises(dynorm.BatchIncomplete) as info:
        A9Counter.objects.bulk_update(objs, ["value"], chunk_size=2)
    assert len(info.value.unprocessed) == 2
    assert len(info.value.written) == 4, f"written={info.value.written!r}"


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


@pytest.mark.parametrize("update_fields", [None, ["name"]])
def test_retried_unversioned_save_does_not_overwrite_a_later_acknowledged_write(lose: Any, update_fields: Any) -> None:
    """save() of an unversioned entity has no condition: after a lost response botocore's retry
    applies it a second time, over a write that another writer made (and was told succeeded) in between."""
    A9Stock.objects.create(sku="w", name="orig")
    obj = A9Stock.objects.get(sku="w")
    obj.name = "mine"
    lose("UpdateItem", between=lambda: A9Stock.objects.filter(sku="w").update(name="theirs"))
    try:
        obj.save(update_fields=update_fields)
    except dynorm.DynormError:
        pass  # reporting the conflict is fine
    stored = _raw(A9Stock, sku="w")
    assert stored is not None and stored["name"] == {"S": "theirs"}, f"the later write was lost: {stored['name']}"


def test_retried_delete_does_not_delete_an_item_created_after_it(lose: Any) -> None:
    """An unconditional DeleteItem whose response was lost is retried by botocore and deletes the
    item that another writer created (and was told was created) in between."""
    obj = A9Stock.objects.create(sku="del", name="old")
    lose("DeleteItem", between=lambda: A9Stock.objects.create(sku="del", name="new"))
    try:
        obj.delete()
    except dynorm.DynormError:
        pass  # reporting the conflict is fine
    stored = _raw(A9Stock, sku="del")
    assert stored is not None and stored["name"] == {"S": "new"}, "an acknowledged create() vanished"


def test_concurrent_unversioned_increments_with_lost_responses_count_exactly() -> None:
    """4 threads x 10 ``update(n=F("n") + 1)``, a third of the responses lost: every increment is
    acknowledged, so the counter must be 40. Today ~50: a retry after another thread's increment
    (which changed the revision token) passes ``_dynorm_rev <> :token`` and applies again."""
    import itertools
    import threading

    A9Tally.objects.create(name="conc")
    counter = itertools.count()
    local = threading.local()

    def hook(request: Any, **kwargs: Any) -> None:
        if getattr(local, "retrying", False):
            local.retrying = False
            return
        if next(counter) % 3 == 0:
            req = urllib.request.Request(request.url, data=request.body, headers=dict(request.headers.items()))
            try:
                urllib.request.urlopen(req, timeout=10).read()  # noqa: S310 - 127.0.0.1 only
            except urllib.error.HTTPError:
                pass
            local.retrying = True
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    acknowledged = []

    def work() -> None:
        for _ in range(10):
            A9Tally.objects.filter(name="conc").update(n=F("n") + 1)
            acknowledged.append(1)

    with Hook("before-send.dynamodb.UpdateItem", hook):
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    stored = _raw(A9Tally, name="conc")
    assert stored is not None and int(stored["n"]["N"]) == len(acknowledged) == 40


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
