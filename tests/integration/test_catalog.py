"""DESIGN.md section 2 rows on the Fromatoz catalog, with request counts pinned."""

from __future__ import annotations

import pytest

import dynorm
from demo_project.catalog.models import Brand, Category, Product


@pytest.fixture
def catalog() -> dict[str, Product]:
    for i in range(1, 4):
        Brand.objects.create(brand_id=str(i), name=f"Brand {i}")
    for i in (1, 10):
        Category.objects.create(category_id=str(i), name=f"Cat {i}")
    made = {}
    made["a"] = Product.objects.create(brand_id="3", category_id="1", name="Model 3", stock_level=70)
    made["b"] = Product.objects.create(brand_id="3", category_id="1", name="Model S", stock_level=0)
    made["c"] = Product.objects.create(brand_id="3", category_id="10", name="Model X", stock_level=5)
    made["d"] = Product.objects.create(brand_id="2", category_id="1", name="Pixel", stock_level=9)
    return made


def names(items: object) -> list[str]:
    return sorted(i.name for i in items)  # type: ignore[attr-defined]


def test_get_is_one_getitem(catalog: dict[str, Product]) -> None:
    with dynorm.capture() as c:
        p = Product.objects.get(product_id=catalog["a"].product_id)
    assert c.operations == ["GetItem"]
    assert (p.name, p.stock_level, p.version, p.brand_id) == ("Model 3", 70, 1, "3")
    assert p.created_at == catalog["a"].created_at.replace(microsecond=catalog["a"].created_at.microsecond)


def test_get_missing_raises_does_not_exist(catalog: dict[str, Product]) -> None:
    with pytest.raises(Product.DoesNotExist) as err:
        Product.objects.get(product_id="01HZZZZZZZZZZZZZZZZZZZZZZZ")
    assert isinstance(err.value, dynorm.DoesNotExist) and "Product matching product_id=" in str(err.value)


def test_all_brands_and_categories_one_query_each(catalog: dict[str, Product]) -> None:
    with dynorm.capture() as c:
        brands = list(Brand.objects.all())
        cats = list(Category.objects.all())
    assert [b.brand_id for b in brands] == ["1", "2", "3"]
    assert [x.category_id for x in cats] == ["1", "10"]
    assert c.operations == ["Query", "Query"]


def test_by_brand_and_category_are_one_query_and_category_1_is_not_10(catalog: dict[str, Product]) -> None:
    with dynorm.capture() as c:
        assert names(Product.objects.by_brand("3")) == ["Model 3", "Model S", "Model X"]
        assert names(Product.objects.by_brand("3").in_category("1")) == ["Model 3", "Model S"]
        assert names(Product.objects.by_category("1")) == ["Model 3", "Model S", "Pixel"]
        assert names(Product.objects.by_category("1").of_brand("3")) == ["Model 3", "Model S"]
    assert c.operations == ["Query"] * 4
    assert [r.index for r in c.requests] == ["GSI1", "GSI1", "GSI2", "GSI2"]


def test_filter_expression_and_stats(catalog: dict[str, Product]) -> None:
    qs = Product.objects.filter(category_id="1", stock_level__gt=0)
    assert names(qs) == ["Model 3", "Pixel"]
    assert qs.stats.requests == 1 and qs.stats.items == 2 and qs.stats.scanned == 3
    assert qs.stats.read_capacity > 0


def test_scan_required_and_explicit_scan(catalog: dict[str, Product]) -> None:
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ScanRequired):
            list(Product.objects.filter(name="Pixel"))
    assert c.count == 0
    with dynorm.capture() as c:
        assert names(Product.objects.scan().filter(name="Pixel")) == ["Pixel"]
    assert c.operations == ["Scan"]


def test_scan_returns_only_this_entity(catalog: dict[str, Product]) -> None:
    assert len(Product.objects.scan()) == 4
    assert len(Brand.objects.scan()) == 3


def test_count_exists_first_last(catalog: dict[str, Product]) -> None:
    with dynorm.capture() as c:
        assert Product.objects.by_brand("3").count() == 3
    assert c.operations == ["Query"] and c.requests[0].params["Select"] == "COUNT"
    assert Product.objects.by_brand("3").exists() and not Product.objects.by_brand("9").exists()
    ordered = [p.category_id for p in Product.objects.by_brand("3")]
    assert ordered == sorted(ordered, key=lambda x: f"C#{x}#")  # GSI1SK order
    assert Product.objects.by_brand("3").first().category_id == "1"
    assert Product.objects.by_brand("3").last().category_id == "10"
    assert Product.objects.by_brand("3").order_by("-sk").first().category_id == "10"
    assert Product.objects.by_brand("9").first() is None


def test_slice_pages_past_filtered_items(catalog: dict[str, Product]) -> None:
    for i in range(6):
        Product.objects.create(brand_id="5", category_id="1", name=f"N{i}", stock_level=i % 2)
    with dynorm.capture() as c:
        got = list(Product.objects.by_brand("5").in_stock()[:3])
    assert len(got) == 3 and all(p.stock_level == 1 for p in got)
    assert c.count >= 2  # Limit applies before the filter: dynorm keeps paging
    with dynorm.capture() as c:
        assert len(list(Product.objects.by_brand("5")[:6])) == 6
    assert c.count == 1  # an exactly-full page does not cost an extra request
    assert [p.name for p in Product.objects.by_brand("5")[2:4]] == \
        [p.name for p in list(Product.objects.by_brand("5"))[2:4]]
    assert len(Product.objects.by_brand("5")[::2]) == 3
    assert Product.objects.by_brand("5")[1].name == list(Product.objects.by_brand("5"))[1].name


def test_only_and_values(catalog: dict[str, Product]) -> None:
    with dynorm.capture() as c:
        rows = Product.objects.by_brand("3").in_category("1").values("name", "stock_level")
    assert sorted(rows, key=lambda r: r["name"]) == [{"name": "Model 3", "stock_level": 70},
                                                      {"name": "Model S", "stock_level": 0}]
    assert "ProjectionExpression" in c.requests[0].params
    partial = Product.objects.by_brand("2").only("name").first()
    assert partial.name == "Pixel"
    with pytest.raises(dynorm.ValidationError, match="only"):
        partial.save()
    with dynorm.capture() as c:
        assert partial.brand_id == "2"  # deferred: loaded on first touch, never shown as None
    assert c.operations == ["GetItem"]


def test_iterator_and_pages(catalog: dict[str, Product]) -> None:
    for i in range(7):
        Product.objects.create(brand_id="7", category_id="2", name=f"P{i}")
    assert len(list(Product.objects.by_brand("7").iterator())) == 7
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = Product.objects.by_brand("7").page(size=3, cursor=cursor)
        seen += [p.name for p in page]
        pages += 1
        cursor = page.cursor
        if cursor is None:
            break
    assert sorted(seen) == sorted(f"P{i}" for i in range(7)) and pages == 3
    first = Product.objects.by_brand("7").page(size=3)
    with pytest.raises(dynorm.InvalidCursor, match="another query"):
        Product.objects.by_brand("3").page(size=3, cursor=first.cursor)
    with pytest.raises(dynorm.InvalidCursor):
        # a changed last character (when it already was "x", "x" changed nothing: a flaky 1 in 64)
        Product.objects.by_brand("7").page(size=3, cursor=first.cursor[:-1] + ("y" if first.cursor[-1] == "x" else "x"))


def test_multiple_objects_returned(catalog: dict[str, Product]) -> None:
    with pytest.raises(Product.MultipleObjectsReturned):
        Product.objects.get(brand_id="3")
    assert Product.objects.get(brand_id="2").name == "Pixel"


def test_create_refuses_overwrite_and_loses_nothing(catalog: dict[str, Product]) -> None:
    pid = catalog["a"].product_id
    with pytest.raises(dynorm.AlreadyExists, match="nothing was overwritten"):
        Product.objects.create(product_id=pid, brand_id="1", category_id="1", name="Impostor")
    assert Product.objects.get(product_id=pid).name == "Model 3"


def test_optimistic_locking(catalog: dict[str, Product]) -> None:
    pid = catalog["a"].product_id
    one = Product.objects.get(product_id=pid)
    two = Product.objects.get(product_id=pid)
    one.stock_level -= 3
    one.save()
    assert one.version == 2
    two.stock_level += 100
    with pytest.raises(dynorm.StaleWrite, match="changed since it was read"):
        two.save()
    fresh = Product.objects.get(product_id=pid)
    assert (fresh.stock_level, fresh.version) == (67, 2)
    with pytest.raises(dynorm.StaleWrite):
        two.delete()
    two.refresh_from_db()
    assert two.version == 2
    two.delete()
    with pytest.raises(Product.DoesNotExist):
        Product.objects.get(product_id=pid)


def test_save_moves_item_between_gsi_partitions(catalog: dict[str, Product]) -> None:
    p = Product.objects.get(product_id=catalog["d"].product_id)
    p.brand_id = "1"
    p.save()
    assert names(Product.objects.by_brand("2")) == []
    assert names(Product.objects.by_brand("1")) == ["Pixel"]


def test_primary_key_change_is_refused(catalog: dict[str, Product]) -> None:
    p = Product.objects.get(product_id=catalog["d"].product_id)
    p.product_id = "01HZZZZZZZZZZZZZZZZZZZZZZZ"
    with dynorm.capture() as c:
        with pytest.raises(dynorm.KeyChangeError):
            p.save()
    assert c.count == 0


def test_hash_in_key_value_round_trips_and_stays_in_its_partition(catalog: dict[str, Product]) -> None:
    sneaky = Product.objects.create(brand_id="3#C#1", category_id="1", name="Sneaky")
    assert names(Product.objects.by_brand("3#C#1")) == ["Sneaky"]
    assert "Sneaky" not in names(Product.objects.by_brand("3"))
    assert Product.objects.get(product_id=sneaky.product_id).brand_id == "3#C#1"
    raw = dynorm.backend.call("GetItem", {"TableName": Product._meta.table.table_name(),
                                          "Key": {"PK": {"S": f"v2#P#{sneaky.product_id}"}, "SK": {"S": "METADATA"}}})
    assert raw["Item"]["GSI1PK"] == {"S": "v2#B#3$23C$231"}


def test_pynamodb_escape_hatch(catalog: dict[str, Product]) -> None:
    pid = catalog["a"].product_id
    p = Product.get(f"v2#P#{pid}", "METADATA")  # PynamoDB's own Model.get
    assert p.name == "Model 3" and isinstance(p, Product)


def test_scan_count_counts_only_this_entity(catalog: dict[str, Product]) -> None:
    with dynorm.capture() as c:
        assert Product.objects.scan().count() == 4
        assert Brand.objects.scan().count() == 3
    assert c.operations == ["Scan", "Scan"]


def test_repr_shows_results_like_django(catalog: dict[str, Product]) -> None:
    with dynorm.capture() as c:
        text = repr(Product.objects.by_brand("2"))
    assert text.startswith("<ProductQuerySet [<Product product_id=") and c.operations == ["Query"]
    assert c.requests[0].params["Limit"] == 21
    assert "ScanRequired" in repr(Product.objects.filter(name="x"))
