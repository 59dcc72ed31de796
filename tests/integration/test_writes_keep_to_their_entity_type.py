"""A write by key only ever changes an item of its own entity type.

Two entity types whose key templates render the same keys (``class Dog(Animal)`` keeping
Animal's templates; ``dynorm check`` reports the overlap) share one item per key. Reads are exact
about the type (``Animal.objects.get()`` of a Dog's key raises DoesNotExist), and so are writes:
every UpdateItem, DeleteItem, ConditionCheck and Put that may replace an item is conditional on
the stored entity type (``#type = :type``; an upsert or a delete also when the item is absent), on
the same request. A write aimed at an item of another type raises what ``get()`` would have
(``Animal.DoesNotExist``, naming both types), or ``AlreadyExists`` for a new instance's
``save()``, and the item is left exactly as it was: checked on the table with raw GetItems.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

import dynorm
from dynorm import Entity, F, Index, Q, Table, backend, fields
from tests.faults import stored_item


class Kennel(Table):
    class Meta:
        table_name = "kennel"
        gsi_count = 1


class Animal(Entity):
    animal_id = fields.String()
    name = fields.String(null=True)
    n = fields.Integer(default=0)

    class Meta:
        table = Kennel
        entity_type = "ANIMAL"
        pk = "{version}#A#{animal_id}"
        sk = "A"
        indexes = {"by_name": Index("GSI1", pk="{version}#ANIMALS", sk="N#{name}")}


class Dog(Animal):
    """Animal's primary key templates, its own index on the same GSI attributes."""

    breed = fields.String(null=True)

    class Meta:
        table = Kennel
        entity_type = "DOG"
        pk = "{version}#A#{animal_id}"
        sk = "A"
        indexes = {"by_breed": Index("GSI1", pk="{version}#DOGS#{breed}", sk="N#{name}")}


class VAnimal(Entity):
    animal_id = fields.String()
    name = fields.String(null=True)
    version = fields.Version()

    class Meta:
        table = Kennel
        entity_type = "VANIMAL"
        pk = "{version}#VA#{animal_id}"
        sk = "A"
        indexes = {"by_name": Index("GSI1", pk="{version}#VANIMALS", sk="N#{name}")}


class VDog(VAnimal):
    breed = fields.String(null=True)

    class Meta:
        table = Kennel
        entity_type = "VDOG"
        pk = "{version}#VA#{animal_id}"
        sk = "A"
        indexes = {"by_breed": Index("GSI1", pk="{version}#VDOGS#{breed}", sk="N#{name}")}


def _reason(exc: BaseException, action: int = 0) -> BaseException:
    """The error behind ``exc``: itself, or the mapped error of one action of a cancelled transaction."""
    if isinstance(exc, dynorm.TransactionCanceled):
        error = exc.reasons[action]["error"]
        assert isinstance(error, BaseException), exc.reasons
        return error
    return exc


def _names_both(error: BaseException, asked: str, stored: str) -> None:
    text = str(error)
    assert asked in text and stored in text and "nothing was" in text, text


# -- writes by key -----------------------------------------------------------------------------------
def _qs_update(io: Any) -> Any:
    return io(Animal.objects.filter(animal_id="d1"), "update", name="Max")


def _qs_update_expression(io: Any) -> Any:
    return io(Animal.objects.filter(animal_id="d1"), "update", n=F("n") + 1)  # one TransactWriteItems


def _qs_update_with_condition(io: Any) -> Any:
    # the user's OR holds on the Dog: only the type condition stops the write (parenthesised apart)
    return io(Animal.objects.filter(animal_id="d1"), "update", name="Max", condition=Q(n=0) | Q(name="nobody"))


def _tx_update(io: Any) -> Any:
    return io.transaction(lambda tx: tx.update(Animal, {"animal_id": "d1"}, name="Max"))


def _tx_delete(io: Any) -> Any:
    return io.transaction(lambda tx: tx.delete(Animal, {"animal_id": "d1"}))


def _tx_check(io: Any) -> Any:
    return io.transaction(lambda tx: tx.check(Animal, {"animal_id": "d1"}, condition=Q(n=0)))


def _blind_save_update_fields(io: Any) -> Any:
    return io(Animal(animal_id="d1", name="Max"), "save", update_fields=["name"])


def _new_instance_save(io: Any) -> Any:
    return io(Animal(animal_id="d1", name="Max"), "save")


def _tx_new_instance_save(io: Any) -> Any:
    return io.transaction(lambda tx: tx.save(Animal(animal_id="d1", name="Max")))


def _key_only_delete(io: Any) -> Any:
    return io(Animal(animal_id="d1"), "delete")


BY_KEY: dict[str, tuple[Callable[[Any], Any], type[BaseException], list[str]]] = {
    "queryset_update": (_qs_update, Animal.DoesNotExist, ["UpdateItem"]),
    "queryset_update_expression": (_qs_update_expression, Animal.DoesNotExist, ["TransactWriteItems"]),
    "queryset_update_with_condition": (_qs_update_with_condition, Animal.DoesNotExist, ["UpdateItem"]),
    "transaction_update": (_tx_update, Animal.DoesNotExist, ["TransactWriteItems"]),
    "transaction_delete": (_tx_delete, Animal.DoesNotExist, ["TransactWriteItems"]),
    "transaction_check": (_tx_check, Animal.DoesNotExist, ["TransactWriteItems"]),
    "blind_save_update_fields": (_blind_save_update_fields, Animal.DoesNotExist, ["UpdateItem"]),
    "new_instance_save": (_new_instance_save, dynorm.AlreadyExists, ["UpdateItem"]),
    "transaction_new_instance_save": (_tx_new_instance_save, dynorm.AlreadyExists, ["TransactWriteItems"]),
    "key_only_delete": (_key_only_delete, Animal.DoesNotExist, ["DeleteItem"]),
}


@pytest.mark.parametrize("way", list(BY_KEY))
def test_a_write_by_key_never_changes_an_item_of_another_entity_type(way: str, io: Any) -> None:
    write, expected, operations = BY_KEY[way]
    Dog.objects.create(animal_id="d1", name="Rex", breed="lab")
    before = stored_item(Dog, animal_id="d1")
    with dynorm.capture() as c, pytest.raises((expected, dynorm.TransactionCanceled)) as info:
        write(io)
    error = _reason(info.value)
    assert isinstance(error, expected), repr(error)
    _names_both(error, "Animal", "Dog")
    assert c.operations == operations  # the type condition rides on the write's own request
    assert stored_item(Dog, animal_id="d1") == before  # a write reported failed changed nothing
    assert [d.name for d in Dog.objects.using("by_breed").filter(breed="lab")] == ["Rex"]
    with pytest.raises(Animal.DoesNotExist):
        Animal.objects.get(animal_id="d1")  # what get() says of this key, the writes say too


def test_a_missing_item_is_still_reported_as_missing_and_deleting_it_is_still_a_no_op(io: Any) -> None:
    with pytest.raises(Animal.DoesNotExist) as info:
        _qs_update(io)
    assert "Dog" not in str(info.value) and "DOG" not in str(info.value)
    with pytest.raises(Animal.DoesNotExist):
        _blind_save_update_fields(io)
    with dynorm.capture() as c:
        _key_only_delete(io)  # as before: DynamoDB's DeleteItem of nothing succeeds
        _tx_delete(io)
    assert c.operations == ["DeleteItem", "TransactWriteItems"]
    _new_instance_save(io)  # an upsert of a new instance still creates
    assert stored_item(Animal, animal_id="d1")["entityType"] == {"S": "ANIMAL"}


# -- writes of an instance read before the item became another entity type ----------------------
def _save(io: Any, obj: Any) -> Any:
    obj.name = "Max"
    return io(obj, "save")


def _save_update_fields(io: Any, obj: Any) -> Any:
    obj.name = "Max"
    return io(obj, "save", update_fields=["name"])


def _update(io: Any, obj: Any) -> Any:
    return io(obj, "update", name="Max")


def _delete(io: Any, obj: Any) -> Any:
    return io(obj, "delete")


def _bulk_update(io: Any, obj: Any) -> Any:
    obj.name = "Max"
    return io(type(obj).objects, "bulk_update", [obj], ["name"])


def _tx_update_instance(io: Any, obj: Any) -> Any:
    return io.transaction(lambda tx: tx.update(obj, name="Max"))


def _tx_save_instance(io: Any, obj: Any) -> Any:
    obj.name = "Max"
    return io.transaction(lambda tx: tx.save(obj))


def _tx_delete_instance(io: Any, obj: Any) -> Any:
    return io.transaction(lambda tx: tx.delete(obj))


INSTANCE_WAYS = {"save": _save, "save_update_fields": _save_update_fields, "update": _update, "delete": _delete,
                 "bulk_update": _bulk_update, "transaction_update": _tx_update_instance,
                 "transaction_save": _tx_save_instance, "transaction_delete": _tx_delete_instance}


@pytest.mark.parametrize("versioned", [False, True], ids=["unversioned", "versioned"])
@pytest.mark.parametrize("way", list(INSTANCE_WAYS))
def test_an_instance_whose_item_became_another_entity_type_writes_nothing(way: str, versioned: bool,
                                                                          io: Any) -> None:
    parent, child = (VAnimal, VDog) if versioned else (Animal, Dog)
    parent.objects.create(animal_id="d1", name="Rex")
    mine = parent.objects.get(animal_id="d1")
    parent.objects.filter(animal_id="d1").delete()
    # another writer puts a Dog there: at version 1 too, so the version read still matches
    child.objects.create(animal_id="d1", name="Rex", breed="lab")
    before = stored_item(child, animal_id="d1")
    with dynorm.capture() as c, pytest.raises((parent.DoesNotExist, dynorm.TransactionCanceled)) as info:
        INSTANCE_WAYS[way](io, mine)
    error = _reason(info.value)
    assert isinstance(error, parent.DoesNotExist), repr(error)
    _names_both(error, parent.__name__, child.__name__)
    assert len(c.operations) == 1  # one request, as for any write of one item
    assert stored_item(child, animal_id="d1") == before
    assert [d.name for d in child.objects.using("by_breed").filter(breed="lab")] == ["Rex"]


def test_writes_of_an_entity_on_its_own_items_are_unchanged(io: Any) -> None:
    """The entity-type condition holds on an entity's own items: each write is still one request."""
    with dynorm.capture() as c:
        a = io(Animal.objects, "create", animal_id="a1", name="Rex")
        a.name = "Max"
        io(a, "save")
        io(a, "save", update_fields=["name"])
        io(a, "update", n=F("n") + 1, condition=Q(n=0) | Q(name="nobody"))
        io(Animal.objects.filter(animal_id="a1"), "update", name="Bo")
        io.transaction(lambda tx: tx.update(Animal, {"animal_id": "a1"}, n=5))
        io.transaction(lambda tx: tx.check(Animal, {"animal_id": "a1"}, condition=Q(n=5)))
        io(Animal(animal_id="a1", name="Cy"), "save")  # an upsert over its own type
        v = io(VAnimal.objects, "create", animal_id="v1", name="Rex")
        io(v, "update", name="Max")
        io(v, "delete")
        io(Animal(animal_id="a1"), "delete")
    assert c.operations == ["PutItem", "UpdateItem", "UpdateItem", "TransactWriteItems", "UpdateItem",
                            "TransactWriteItems", "TransactWriteItems", "UpdateItem", "PutItem", "UpdateItem",
                            "DeleteItem", "DeleteItem"]
    assert list(Animal.objects.scan()) == [] and list(VAnimal.objects.scan()) == []


def test_a_queryset_delete_by_key_leaves_an_item_of_another_entity_type(io: Any) -> None:
    """Its read is exact about the type, so it deletes nothing (a guard; this held before too)."""
    Dog.objects.create(animal_id="d1", name="Rex", breed="lab")
    before = stored_item(Dog, animal_id="d1")
    assert io(Animal.objects.filter(animal_id="d1"), "delete") == 0
    assert stored_item(Dog, animal_id="d1") == before


def test_an_item_stored_without_an_entity_type_is_not_written_either(io: Any) -> None:
    """Another writer's item without the type attribute: ``get()`` does not return it, and a write by
    key neither adopts it (stamping its own type on it) nor deletes it."""
    key = Animal._meta.primary_key({"animal_id": "raw1"})
    backend.call("PutItem", {"TableName": Kennel.table_name(),
                             "Item": {**key, "animal_id": {"S": "raw1"}, "name": {"S": "Rex"}}})
    before = stored_item(Animal, animal_id="raw1")
    with pytest.raises(Animal.DoesNotExist):
        io(Animal.objects, "get", animal_id="raw1")
    for write in (lambda: io(Animal.objects.filter(animal_id="raw1"), "update", name="Max"),
                  lambda: io(Animal(animal_id="raw1"), "delete")):
        with pytest.raises(Animal.DoesNotExist, match="without an entity type"):
            write()
    with pytest.raises(dynorm.AlreadyExists, match="without an entity type"):
        io(Animal(animal_id="raw1", name="Max"), "save")
    assert stored_item(Animal, animal_id="raw1") == before


def test_get_or_create_and_update_or_create_on_another_entity_types_key_say_so_at_once(io: Any) -> None:
    """update_or_create took the refused create for a lost race: it read and tried again five times, then
    raised StaleWrite "lost the race 5 times"; get_or_create said "its fields differ from " and nothing.
    Both now raise the create's AlreadyExists naming both types, after one attempt, and write nothing."""
    Dog.objects.create(animal_id="d1", name="Rex", breed="lab")
    before = stored_item(Dog, animal_id="d1")
    for call in ("update_or_create", "get_or_create"):
        with dynorm.capture() as c:
            with pytest.raises(dynorm.AlreadyExists, match=r"a Dog \(entity type 'DOG'\) is stored under this key"):
                io(Animal.objects, call, animal_id="d1", defaults={"name": "X"})
        assert c.operations == ["GetItem", "PutItem"], call
    assert stored_item(Dog, animal_id="d1") == before
