"""``Entity(**fields)`` leaves the instance PynamoDB's own ``__init__`` leaves (issue 24).

dynorm fills ``attribute_values`` from a per-class plan instead of a descriptor call per
attribute; what it holds (the discriminator, defaults for a new instance in attribute order, then
the values given, an attribute's own ``__set__`` honoured) must stay what PynamoDB builds, and a
class that changes how attributes are set is built by PynamoDB itself.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest
from pynamodb.attributes import AttributeContainer

from demo_project.catalog.models import Product
from dynorm import Entity, Table, fields
from tests import models


class Plans(Table):
    class Meta:
        table_name = "init-plans"


class Gadget(Entity):
    gadget_id = fields.ULID(auto=True)
    label = fields.String(attr_name="lbl", default="none")
    made = fields.DateTime(auto_now_add=True)
    tags = fields.Set()
    count = fields.Integer(default=0)
    price = fields.Decimal(null=True)
    version = fields.Version()

    class Meta:
        table = Plans
        entity_type = "GADGET"
        pk = "G#{gadget_id}"
        sk = "G"


def _as_pynamodb_builds(obj: Any, given: dict[str, Any]) -> dict[str, Any]:
    """``attribute_values`` of an instance built by PynamoDB's ``__init__`` from the same validated values."""
    cls = type(obj)
    twin = cls.__new__(cls)
    validated = {n: cls._meta.fields[n].validate(v) for n, v in given.items()}
    AttributeContainer.__init__(twin, _user_instantiated=True, **validated)
    return twin.attribute_values


def _shape(values: dict[str, Any], made_now: set[str]) -> list[tuple[str, Any]]:
    # a default made by a callable (a ULID, the time now) differs between two builds: compare its type
    return [(k, type(v) if k in made_now else v) for k, v in values.items()]


CASES = [
    (Gadget, {}),
    (Gadget, {"label": "x", "count": 3, "price": decimal.Decimal("1.5"), "tags": {"a"}}),
    (Gadget, {"count": None, "label": None}),  # None given overrides a default
    (Gadget, {"version": 4}),  # set through Version's own __set__
    (Gadget, {"made": dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), "gadget_id": "01J0000000000000000000000A"}),
    (models.Store, {"store_id": "s1", "name": "One"}),
    (models.Order, {}),
    (Product, {"product_id": "01J0000000000000000000000A", "brand_id": "b1"}),
]


@pytest.mark.parametrize(("cls", "given"), CASES)
def test_attribute_values_are_pynamodbs(cls: type, given: dict[str, Any]) -> None:
    obj = cls(**given)
    made_now = {n for n, a in cls.get_attributes().items() if callable(a.default_for_new or a.default)} - set(given)
    expected = _as_pynamodb_builds(obj, given)
    assert _shape(obj.attribute_values, made_now) == _shape(expected, made_now)
    assert obj._state.adding


def test_a_class_with_its_own_setattr_is_built_by_pynamodb() -> None:
    seen: list[str] = []

    class Watched(Gadget):
        def __setattr__(self, name: str, value: Any) -> None:
            seen.append(name)
            super().__setattr__(name, value)

        class Meta:
            table = Plans
            entity_type = "WATCHED"
            pk = "W#{gadget_id}"
            sk = "W"

    obj = Watched(label="x")
    assert {"count", "label", "tags"} <= set(seen)  # every attribute went through __setattr__
    assert obj.label == "x" and obj.count == 0
