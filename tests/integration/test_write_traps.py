"""Smaller traps of the write path (issue 9, section 6) and ``save(update_fields=...)`` (issue 12, 4)."""

from __future__ import annotations

from typing import Any

import pytest

import dynorm
from dynorm import Entity, F, Index, Manager, fields
from tests.faults import Hook, stored_item
from tests.models import Counter, Order, Retail


class StrictVersion(fields.Version):
    """A user's subclass: must still turn optimistic locking on."""


class Tags(fields.Set):
    pass


class Lines(fields.List):
    pass


class Ticket(Entity):
    ticket_id = fields.String()
    title = fields.String()
    labels = Tags(str)
    log = Lines(null=True)
    rev = StrictVersion()

    class Meta:
        table = Retail
        entity_type = "TICKET"
        pk = "{version}#TICKET#{ticket_id}"
        sk = "METADATA"


class Gadget(Entity):
    """Its only manager is not called ``objects``."""

    gadget_id = fields.String()
    count = fields.Integer(default=0)
    owner = fields.Reference("Ticket")  # resolved when the classes are built
    version = fields.Version()

    items = Manager()

    class Meta:
        table = Retail
        entity_type = "GADGET"
        pk = "{version}#GADGET#{gadget_id}"
        sk = "METADATA"


class Profile(Entity):
    profile_id = fields.String()
    city = fields.String(null=True)
    name = fields.String()
    bio = fields.String(null=True)
    updated = fields.DateTime(auto_now=True)

    class Meta:
        table = Retail
        entity_type = "PROFILE"
        pk = "{version}#PROFILE#{profile_id}"
        sk = "METADATA"
        indexes = {"by_city": dynorm.Index("GSI1", pk="{version}#PCITY#{city}", sk="P#{profile_id}")}


def test_a_version_subclass_keeps_optimistic_locking_on() -> None:
    assert Ticket._meta.version_field == "rev"
    t = Ticket.objects.create(ticket_id="t1", title="a")
    other = Ticket.objects.get(ticket_id="t1")
    other.title = "b"
    other.save()
    t.title = "c"
    with pytest.raises(dynorm.StaleWrite):
        t.save()
    assert Ticket.objects.get(ticket_id="t1").title == "b"


def test_a_copied_instance_is_its_own_stale_read() -> None:
    """``copy.copy(obj)`` holds its own field values and state (Django's copy of a model instance
    does): saving the copy after the original was saved is a stale write, never a lost update."""
    import copy

    t = Ticket.objects.create(ticket_id="t3", title="a", labels={"x"})
    twin = copy.copy(t)
    t.title = "b"
    t.save()
    assert twin.title == "a" and twin.rev == 1 and t.rev == 2
    twin.title = "c"
    with pytest.raises(dynorm.StaleWrite):
        twin.save()
    assert Ticket.objects.get(ticket_id="t3").title == "b"
    assert twin._state is not t._state and twin._state == Ticket.objects.get(ticket_id="t3")._state


def test_set_and_list_subclasses_take_add_and_append() -> None:
    t = Ticket.objects.create(ticket_id="t2", title="a", labels={"x"})
    t.update(labels=F("labels").add({"y"}))
    t.update(log=F("log").if_not_exists([]).append(["opened"]))
    got = Ticket.objects.get(ticket_id="t2")
    assert got.labels == {"x", "y"} and got.log == ["opened"]


def test_a_failed_first_save_leaves_the_instance_new() -> None:
    Counter.objects.create(name="taken")
    obj = Counter(name="taken")
    with dynorm.capture() as c, pytest.raises(dynorm.AlreadyExists):
        obj.save()
    assert c.operations == ["PutItem"] and obj._state.adding and obj.version is None
    obj.name = "free"  # nothing was ever written: this is not a key change
    obj.save()
    assert Counter.objects.get(name="free").version == 1 and Counter.objects.get(name="taken").version == 1


def test_a_failed_write_changes_no_field_of_the_instance() -> None:
    p = Profile.objects.create(profile_id="p0", name="n")
    stale = Profile.objects.get(profile_id="p0")
    before = dict(stale.attribute_values)
    with pytest.raises(dynorm.ConditionFailed):
        stale.update(name="m", condition=dynorm.Q(name="zzz"))
    assert stale.attribute_values == before and p.name == "n"


def test_event_hooks_survive_a_settings_change() -> None:
    seen: list[str] = []

    def spy(**kwargs: Any) -> None:
        seen.append(kwargs["event_name"])

    dynorm.backend.client().meta.events.register("before-send.dynamodb.GetItem", spy)  # as the issue did
    previous = dynorm.get_settings().cursor_secret
    try:
        dynorm.configure(cursor_secret="s3cret")
        Counter.objects.filter(name="nobody").exists()
        assert seen == ["before-send.dynamodb.GetItem"]
    finally:
        dynorm.configure(cursor_secret=previous)
        dynorm.backend.client().meta.events.unregister("before-send.dynamodb.GetItem", spy)


def test_register_hook_survives_a_new_client() -> None:
    seen: list[str] = []

    def spy(**kwargs: Any) -> None:
        seen.append("x")

    with Hook("before-send.dynamodb.GetItem", spy):
        dynorm.backend.reset_client()  # as a new endpoint or timeout would
        Counter.objects.filter(name="nobody").exists()
    Counter.objects.filter(name="nobody").exists()
    assert seen == ["x"]


def test_the_default_manager_need_not_be_called_objects() -> None:
    assert not hasattr(Gadget, "objects") and dynorm.registry.default_manager(Gadget) is Gadget.items
    Ticket.objects.create(ticket_id="t9", title="owner")
    Gadget.items.create(gadget_id="g1", owner={"ticket_id": "t9"})
    got = Gadget.items.update_with_retry({"gadget_id": "g1"}, lambda g: setattr(g, "count", g.count + 1))
    assert got.count == 1 and got.related("owner").title == "owner"


def test_a_string_reference_is_resolved_when_the_class_is_built() -> None:
    assert Gadget._meta.fields["owner"]._target is Ticket  # type: ignore[attr-defined]


def test_update_fields_writes_only_those_fields_in_one_update() -> None:
    p = Profile.objects.create(profile_id="p1", name="old", bio="keep", city="Oslo")
    other = Profile.objects.get(profile_id="p1")
    other.bio = "theirs"
    other.save()
    p.name = "new"
    p.city = "Bergen"
    p.bio = "mine, not written"
    with dynorm.capture() as c:
        p.save(update_fields=["name", "city"])
    assert c.operations == ["UpdateItem"]
    got = Profile.objects.get(profile_id="p1")
    assert (got.name, got.city, got.bio) == ("new", "Bergen", "theirs")
    assert [x.profile_id for x in Profile.objects.filter(city="Bergen")] == ["p1"]  # index key rewritten
    assert not Profile.objects.filter(city="Oslo").exists()
    p.city = None
    p.save(update_fields=["city"])
    assert not Profile.objects.filter(city="Bergen").exists()  # sparse: left the index


def test_update_fields_refuses_unknown_fields_before_any_request() -> None:
    p = Profile.objects.create(profile_id="p2", name="x")
    with dynorm.capture() as c, pytest.raises(dynorm.ValidationError, match="nope"):
        p.save(update_fields=["nope"])
    assert c.count == 0


def test_update_fields_on_a_missing_item_is_does_not_exist() -> None:
    p = Profile(profile_id="p3", name="x")
    with pytest.raises(Profile.DoesNotExist):
        p.save(update_fields=["name"])
    assert not Profile.objects.filter(profile_id="p3").exists()


def test_save_of_a_read_item_removes_fields_set_to_none_and_leaves_the_index() -> None:
    p = Profile.objects.create(profile_id="p4", name="x", bio="b", city="Oslo")
    p.bio = None
    p.city = None
    p.save()
    got = Profile.objects.get(profile_id="p4")
    assert got.bio is None and got.city is None
    raw = dynorm.backend.call("GetItem", {"TableName": Retail.table_name(), "Key": p._primary_key_av()})["Item"]
    assert "bio" not in raw and "GSI1PK" not in raw and "GSI1SK" not in raw


def test_update_fields_on_a_partial_read_never_drops_an_index_it_cannot_rebuild() -> None:
    Profile.objects.create(profile_id="p5", name="x", city="Oslo")
    partial = Profile.objects.filter(profile_id="p5").only("profile_id", "name")[0]
    partial.name = "y"
    with pytest.raises(dynorm.ValidationError, match="only"):
        partial.save()  # would drop the fields not read
    partial.save(update_fields=["name"])  # name is in no index: fine
    assert Profile.objects.get(profile_id="p5").name == "y"
    partial.city = "Bergen"
    with dynorm.capture() as c:
        partial.save(update_fields=["city"])  # the index needs profile_id (a key field): known
    assert c.operations == ["UpdateItem"]
    assert [p.profile_id for p in Profile.objects.filter(city="Bergen")] == ["p5"]
    assert not partial._state.partial  # refreshed from the item as written (ALL_NEW)


def test_update_fields_on_a_partial_read_loads_what_an_index_it_rebuilds_needs() -> None:
    order = Order.objects.create(customer_id="c9", coupon="OLD")
    partial = Order.objects.filter(customer_id="c9", order_id=order.order_id).only("customer_id", "order_id")[0]
    partial.coupon = "NEW"  # by_coupon's sort key needs placed_at, which was not read: loaded first
    with dynorm.capture() as c:
        partial.save(update_fields=["coupon"])
    assert c.operations == ["GetItem", "UpdateItem"]
    assert [o.order_id for o in Order.objects.filter(coupon="NEW")] == [order.order_id]
    assert not list(Order.objects.filter(coupon="OLD"))


# -- items without a version attribute, stale reads, update_fields, bulk_update, deferred fields ----

def test_versioned_entity_can_save_an_item_stored_without_a_version_attribute() -> None:
    """Rolling deploy: fields.Version() added to a model whose items were written before (or by boto3)."""
    dynorm.backend.call("PutItem", {"TableName": Retail.table_name(), "Item": {
        **Counter._meta.primary_key({"name": "old"}), Retail._meta.type_attribute: {"S": "COUNTER"},
        "name": {"S": "old"}, "value": {"N": "5"}, "nick": {"S": "keep"}}})
    obj = Counter.objects.get(name="old")
    assert obj.version is None
    obj.value = 6
    obj.save()  # version 0: conditional on attribute_not_exists(version)
    stored = stored_item(Counter, name="old")
    assert stored["value"] == {"N": "6"} and stored["nick"] == {"S": "keep"} and stored["version"] == {"N": "1"}
    assert obj.version == 1
    Counter.objects.update_with_retry({"name": "old"}, lambda c: setattr(c, "value", c.value + 1))
    assert Counter.objects.get(name="old").value == 7


def test_a_stale_read_of_a_version_less_item_is_refused() -> None:
    dynorm.backend.call("PutItem", {"TableName": Retail.table_name(), "Item": {
        **Counter._meta.primary_key({"name": "old2"}), Retail._meta.type_attribute: {"S": "COUNTER"},
        "name": {"S": "old2"}, "value": {"N": "5"}}})
    a = Counter.objects.get(name="old2")
    b = Counter.objects.get(name="old2")
    a.value = 1
    a.save()
    b.value = 2
    with pytest.raises(dynorm.StaleWrite, match="expected version 0"):
        b.save()
    assert stored_item(Counter, name="old2")["value"] == {"N": "1"}


def test_save_update_fields_of_an_unread_instance_does_not_reset_the_version() -> None:
    Counter.objects.create(name="v")
    stale_reader = Counter.objects.get(name="v")  # version 1
    for i in range(2):
        cur = Counter.objects.get(name="v")
        cur.value = 10 + i
        cur.save()  # version 3
    Counter(name="v", value=99).save(update_fields=["value"])
    stored = stored_item(Counter, name="v")
    assert stored["version"] == {"N": "4"} and stored["value"] == {"N": "99"}
    stale_reader.note = "stale"
    with pytest.raises(dynorm.StaleWrite):
        stale_reader.save()


def test_bulk_update_batch_incomplete_lists_the_items_written() -> None:
    Counter.objects.bulk_create([Counter(name=f"c{i}") for i in range(6)])
    objs = [Counter.objects.get(name=f"c{i}") for i in range(6)]
    other = Counter.objects.get(name="c4")
    other.value = 7
    other.save()  # objs[4] is now stale: the third chunk is cancelled
    for obj in objs:
        obj.value = 1
    with pytest.raises(dynorm.BatchIncomplete) as info:
        Counter.objects.bulk_update(objs, ["value"], chunk_size=2)
    assert info.value.unprocessed == objs[4:]
    assert info.value.written == objs[:4]


class IndexedStock(Entity):
    sku = fields.String()
    name = fields.String(null=True)
    warehouse = fields.String(null=True)

    class Meta:
        table = Retail
        entity_type = "INDEXED_STOCK"
        pk = "{version}#ISTOCK#{sku}"
        sk = "METADATA"
        indexes = {"by_wh": Index("GSI1", pk="{version}#WH#{warehouse}", sk="ISTOCK#{sku}")}


def test_save_update_fields_after_only_loads_a_deferred_field_instead_of_removing_it() -> None:
    """Django loads a deferred field before saving it; dynorm used to REMOVE it and its GSI keys."""
    IndexedStock.objects.create(sku="s1", name="bolt", warehouse="north")
    obj = IndexedStock.objects.only("sku", "name").get(sku="s1")
    obj.name = "bolt M8"
    with dynorm.capture() as c:
        obj.save(update_fields=["name", "warehouse"])
    assert c.operations == ["GetItem", "UpdateItem"]
    stored = stored_item(IndexedStock, sku="s1")
    assert stored["name"] == {"S": "bolt M8"} and stored["warehouse"] == {"S": "north"}
    assert stored["GSI1PK"] == {"S": "v1#WH#north"} and stored["GSI1SK"] == {"S": "ISTOCK#s1"}
    assert [s.sku for s in IndexedStock.objects.filter(warehouse="north")] == ["s1"]


def test_save_update_fields_after_only_keeps_an_assigned_deferred_field() -> None:
    IndexedStock.objects.create(sku="s2", name="nut", warehouse="north")
    obj = IndexedStock.objects.only("sku", "name").get(sku="s2")
    obj.warehouse = "south"
    with dynorm.capture() as c:
        obj.save(update_fields=["warehouse"])
    assert c.operations == ["UpdateItem"]
    assert stored_item(IndexedStock, sku="s2")["GSI1PK"] == {"S": "v1#WH#south"}
    assert stored_item(IndexedStock, sku="s2")["name"] == {"S": "nut"}
