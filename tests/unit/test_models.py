"""Entity declarations: validation at class definition, check(), values before I/O."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

import dynorm
from demo_project.catalog.models import Product
from dynorm import Entity, Index, Table, fields
from tests.models import Order, Store


class Scratch(Table):
    class Meta:
        table_name = "scratch"
        gsi_count = 1


def _entity(name: str, meta: dict, **fields_: object) -> type:
    Meta = type("Meta", (), {"table": Scratch, **meta})
    return type(name, (Entity,), {"__module__": __name__, "Meta": Meta, **fields_})


def test_unknown_placeholder_is_reported_with_class_name() -> None:
    with pytest.raises(dynorm.ModelError, match=r"Thing\.Meta\.pk template .*\{thing_id\}"):
        _entity("Thing", {"pk": "T#{thing_id}", "sk": "X"}, other=fields.String())


def test_unknown_index_is_reported() -> None:
    with pytest.raises(dynorm.ModelError, match="index 'GSI9'"):
        _entity("Thing2", {"pk": "T#{a}", "sk": "X", "indexes": {"x": Index("GSI9", pk="A#{a}", sk="B")}},
                a=fields.String())


@pytest.mark.parametrize("name", ["objects", "save", "pk"])
def test_reserved_field_names(name: str) -> None:
    with pytest.raises(dynorm.ModelError, match="reserved"):
        _entity("Thing3", {"pk": "T#{a}", "sk": "X"}, a=fields.String(), **{name: fields.String()})


def test_field_stored_as_key_attribute_is_refused() -> None:
    with pytest.raises(dynorm.ModelError, match="GSI1PK"):
        _entity("Thing4", {"pk": "T#{a}", "sk": "X"}, a=fields.String(), b=fields.String(attr_name="GSI1PK"))


def test_missing_table_and_unknown_meta_option() -> None:
    with pytest.raises(dynorm.ModelError, match="Meta.table"):
        type("NoTable", (Entity,), {"__module__": __name__, "a": fields.String()})
    with pytest.raises(dynorm.ModelError, match="unknown option"):
        _entity("Thing5", {"pk": "T#{a}", "sk": "X", "colour": "red"}, a=fields.String())


def test_check_reports_colliding_templates() -> None:
    class Clash(Table):
        class Meta:
            table_name = "clash"

    def make(name: str, pk: str, sk: str) -> type:
        Meta = type("Meta", (), {"table": Clash, "pk": pk, "sk": sk})
        return type(name, (Entity,), {"__module__": __name__, "Meta": Meta, "a": fields.String()})

    make("A1", "{version}#X#{a}", "META")
    make("B1", "{version}#X#{a}", "META")
    make("C1", "{version}#X#{a}", "OTHER#{a}")
    problems = Clash.check()
    assert len(problems) == 1 and "A1(A1) and B1(B1)" in problems[0]


def test_demo_tables_check_clean() -> None:
    assert Product._meta.table.check() == []
    assert Store._meta.table.check() == []


def test_validation_before_io_names_entity_field_value() -> None:
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError) as err:
            Product(brand_id="1", category_id="2", name="x", stock_level="lots")
        assert (err.value.entity, err.value.field, err.value.value) == ("Product", "stock_level", "lots")
        with pytest.raises(dynorm.ValidationError, match="no field 'colour'"):
            Product(colour="red")
        with pytest.raises(dynorm.ValidationError, match="not a valid ULID"):
            Product(product_id="not-a-ulid")
        with pytest.raises(dynorm.ValidationError, match="boolean|integer"):
            Product(stock_level=True)
        p = Product(brand_id="1", category_id="2")
        with pytest.raises(dynorm.ValidationError, match=r"Product\.name is required"):
            p.save()
    assert c.count == 0


def test_key_attributes_and_sparse_index() -> None:
    o = Order(customer_id="c1", order_id="01HZZZZZZZZZZZZZZZZZZZZZZZ", placed_at=dt.datetime(2024, 1, 1))
    keys = o.key_attributes()
    assert keys["PK"] == "v2#CUST#c1" and keys["SK"] == "ORDER#01HZZZZZZZZZZZZZZZZZZZZZZZ"
    assert keys["GSI1PK"] is None and keys["GSI1SK"] is None  # no coupon: not in GSI1
    o.coupon = "SPRING"
    assert o.key_attributes()["GSI1PK"] == "v2#COUPON#SPRING"


def test_field_values_normalize() -> None:
    o = Order(customer_id="c", total=3, tags={"a"}, lines=("x",))
    assert o.total == decimal.Decimal(3) and o.lines == ["x"]
    naive = dt.datetime(2024, 1, 1)
    assert Order(customer_id="c", placed_at=naive).placed_at.tzinfo is dt.timezone.utc
    with pytest.raises(dynorm.ValidationError, match="element 1"):
        Order(customer_id="c", tags={1})


def test_entity_is_a_pynamodb_model() -> None:
    from pynamodb.models import Model

    assert issubclass(Product, Model)
    assert issubclass(Product.DoesNotExist, dynorm.DoesNotExist)
    assert issubclass(Product.MultipleObjectsReturned, dynorm.MultipleObjectsReturned)
