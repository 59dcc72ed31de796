"""Building querysets sends nothing; evaluation sends exactly the planned request."""

from __future__ import annotations

import pytest

import dynorm
from demo_project.catalog.models import Product


def test_builders_send_no_request() -> None:
    with dynorm.capture() as c:
        qs = Product.objects.by_brand("3").in_category("1").filter(stock_level__gt=0).order_by("-sk")
        qs = qs.only("name")[:10]
        qs.explain()
        repr(Product.objects.filter(brand_id="1").explain())
    assert c.count == 0


def test_clones_do_not_share_state() -> None:
    base = Product.objects.by_brand("3")
    narrowed = base.in_category("1")
    assert base.explain().readable(base.explain().key_condition) == 'GSI1PK = "v2#B#3"'
    assert "begins_with" in narrowed.explain().key_condition


def test_manager_not_reachable_from_instances() -> None:
    p = Product(brand_id="1", category_id="2", name="x")
    with pytest.raises(AttributeError, match="Manager isn't accessible via Product instances"):
        p.objects  # noqa: B018


def test_sliced_queryset_refuses_filter() -> None:
    with pytest.raises(dynorm.InvalidQuery):
        Product.objects.by_brand("3")[:5].filter(name="x")
