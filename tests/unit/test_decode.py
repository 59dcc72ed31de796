"""dynorm's fast from_raw_data builds exactly the instance PynamoDB's path builds."""

from __future__ import annotations

import datetime as dt
import decimal

from pynamodb.attributes import AttributeContainer

from demo_project.catalog.models import Product
from tests.models import Order


def slow(cls: type, raw: dict) -> object:
    obj = cls(_user_instantiated=False)
    AttributeContainer._container_deserialize(obj, raw)
    return obj


def test_fast_decode_matches_pynamodb() -> None:
    p = Product(brand_id="1", category_id="2", name="x", stock_level=3, version=4)
    o = Order(customer_id="c", total=decimal.Decimal("1.5"), tags={"a"}, lines=[1, {"x": 2}],
              extra={"k": "v"}, expires_at=dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc), version=2)
    for obj in (p, o):
        for attr, value in obj.key_attributes().items():
            setattr(obj, type(obj)._dynamo_to_python_attr(attr), value)
        raw = obj.serialize()
        fast, reference = type(obj).from_raw_data(raw), slow(type(obj), raw)
        assert type(fast) is type(obj)
        assert fast.attribute_values == reference.attribute_values
        assert fast.to_dict() == obj.to_dict()


def test_missing_attributes_get_defaults_and_base_model_dispatches() -> None:
    p = Product(brand_id="1", category_id="2", name="x")
    raw = {k: v for k, v in p.serialize(null_check=False).items() if k != "stock_level"}
    assert Product.from_raw_data(raw).stock_level == 0
    base = Product._meta.table._model_base
    assert type(base.from_raw_data(raw)) is Product
