"""One attribute written by several key templates of an entity keeps its one value (issue 21, section 5),
on DynamoDB Local.

``Data`` is the sort key of GSI1 and GSI2 (AWS's overloaded-GSI layout); an entity keys both indexes with
one template there (different templates are refused at class creation: tests/unit/test_key_declarations.py).
An index that misses a value (sparse) must not remove ``Data`` from under the other, in either declaration
order, on create, save, update and transactions, and an update that rewrites both sends ``Data`` once.
An entity on an inverted index (``INV`` keyed on ``SK``, then ``PK``, with the entity's own templates)
is written through every path without touching its table keys.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

import dynorm
from dynorm import Entity, Index, Table, backend, fields, tables
from tests.models import Retail


@pytest.fixture(params=["warehouse_first", "hired_first"])
def staff(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A throwaway table (created under the test's prefix, deleted and unregistered after)."""
    known = list(tables._TABLES)

    class SharedData(Table):
        class Meta:
            table_name = "shared_data"
            gsis = {"GSI1": ("GSI1PK", "Data"), "GSI2": ("GSI2PK", "Data")}

    paths = {"by_warehouse": Index("GSI1", pk="{version}#WH#{warehouse}", sk="NAME#{name}"),
             "by_hired": Index("GSI2", pk="{version}#HIRED#{hired}", sk="NAME#{name}")}
    if request.param == "hired_first":
        paths = dict(reversed(paths.items()))
    Meta = type("Meta", (), {"table": SharedData, "entity_type": "STAFF", "pk": "{version}#STAFF#{staff_id}",
                             "sk": "STAFF", "indexes": paths})
    model = type("SharedStaff", (Entity,), {
        "__module__": __name__, "__qualname__": "SharedStaff", "Meta": Meta, "staff_id": fields.String(),
        "name": fields.String(), "warehouse": fields.String(null=True), "hired": fields.Integer(null=True)})
    SharedData.create_table()
    try:
        yield model
    finally:
        for table in [t for t in tables._TABLES if t not in known]:
            table.delete_table(wait=False)
            tables._TABLES.remove(table)


def _stored(model: Any, staff_id: str) -> dict[str, Any]:
    key = model._meta.primary_key({"staff_id": staff_id})
    return backend.call("GetItem", {"TableName": model._meta.table.table_name(), "Key": key,
                                    "ConsistentRead": True})["Item"]


def _by_hired(model: Any) -> list[tuple[str, str]]:
    return sorted((s.staff_id, s.name) for s in model.objects.using("by_hired").filter(hired=2019))


def test_a_sparse_index_never_removes_the_attribute_another_index_sorts_on(staff: Any) -> None:
    assert staff(staff_id="a", name="Ann", hired=2019).key_attributes()["Data"] == "NAME#Ann"
    staff.objects.create(staff_id="a", name="Ann", hired=2019)           # not in GSI1: no warehouse
    assert _stored(staff, "a")["Data"] == {"S": "NAME#Ann"} and "GSI1PK" not in _stored(staff, "a")
    assert _by_hired(staff) == [("a", "Ann")]

    staff.objects.create(staff_id="b", name="Bob", hired=2019, warehouse="W1")
    obj = staff.objects.get(staff_id="b")
    obj.update(warehouse=None)                                            # leaves GSI1 only
    assert _by_hired(staff) == [("a", "Ann"), ("b", "Bob")]
    assert list(staff.objects.using("by_warehouse").filter(warehouse="W1")) == []

    obj = staff.objects.get(staff_id="b")
    obj.warehouse = None
    obj.name = "Bea"
    obj.save()
    assert _by_hired(staff) == [("a", "Ann"), ("b", "Bea")]

    with dynorm.transaction() as tx:
        tx.update(staff, {"staff_id": "a"}, name="Ada", warehouse=None, hired=2019)
    assert _by_hired(staff) == [("a", "Ada"), ("b", "Bea")]


def test_an_update_that_rewrites_both_indexes_sends_the_attribute_once(staff: Any) -> None:
    staff.objects.create(staff_id="b", name="Bob", hired=2019, warehouse="W1")
    obj = staff.objects.get(staff_id="b")
    with dynorm.capture() as c:
        obj.update(name="Bobby")                                          # both indexes sort on name
    expr = c.requests[0].params["UpdateExpression"]
    data = next(k for k, v in c.requests[0].params["ExpressionAttributeNames"].items() if v == "Data")
    assert expr.count(data) == 1, expr
    assert _stored(staff, "b")["Data"] == {"S": "NAME#Bobby"}
    assert [s.staff_id for s in staff.objects.using("by_warehouse").filter(warehouse="W1")] == ["b"]
    assert _by_hired(staff) == [("b", "Bobby")]


def test_the_attribute_goes_when_no_index_writing_it_has_its_values(staff: Any) -> None:
    staff.objects.create(staff_id="b", name="Bob", hired=2019, warehouse="W1")
    staff.objects.get(staff_id="b").update(warehouse=None, hired=None)
    stored = _stored(staff, "b")
    assert not {"Data", "GSI1PK", "GSI2PK"} & set(stored)
    staff.objects.create(staff_id="c", name="Cy")
    assert not {"Data", "GSI1PK", "GSI2PK"} & set(_stored(staff, "c"))


class Posting(Entity):
    """An adjacency list read from both ends: Retail's INV index is keyed on SK, then PK."""

    board = fields.String()
    topic = fields.String()
    note = fields.String(null=True)

    class Meta:
        table = Retail
        entity_type = "POSTING"
        pk = "{version}#BOARD#{board}"
        sk = "TOPIC#{topic}"
        indexes = {"by_topic": Index("INV", pk="TOPIC#{topic}", sk="{version}#BOARD#{board}")}


def test_every_write_of_an_entity_on_an_inverted_index_keeps_its_table_keys() -> None:
    Posting.objects.create(board="b1", topic="t1", note="x")
    Posting.objects.bulk_create([Posting(board="b2", topic="t1"), Posting(board="b2", topic="t2")])
    obj = Posting.objects.get(board="b1", topic="t1")
    obj.note = "saved"
    obj.save()
    obj.save(update_fields=["note"])
    obj.update(note="updated")
    with dynorm.transaction() as tx:
        tx.update(Posting, {"board": "b2", "topic": "t2"}, note="tx")
        tx.save(Posting(board="b3", topic="t1", note="new"))
    assert Posting.objects.get(board="b1", topic="t1").note == "updated"
    assert Posting.objects.get(board="b2", topic="t2").note == "tx"
    by_topic = Posting.objects.filter(topic="t1")
    assert by_topic.explain().index == "INV"
    assert [(p.board, p.note) for p in by_topic] == [("b1", "updated"), ("b2", None), ("b3", "new")]
