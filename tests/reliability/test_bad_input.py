"""Bad input: each malformed input gets its documented error, and no request is sent."""

from __future__ import annotations

import datetime as dt
import decimal
import re
from pathlib import Path
from typing import Any, Callable

import pytest

import dynorm
from demo_project.catalog.models import Product
from dynorm import Entity, F, conf, fields
from tests.models import Measure, Order, Person, Reading, Retail, StoreEmployee


def _bad_yaml(tmp: Path) -> Any:
    f = tmp / "bad.yaml"
    f.write_text("models: [x\n")
    return conf.load_file(f)


def _bad_migrations(tmp: Path) -> Any:
    import sys

    from dynorm.migrations.loader import load_migrations

    pkg = tmp / "badmig_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "0001_a.py").write_text("dependencies = ['0000_nope']\noperations = []\n")
    sys.path.insert(0, str(tmp))
    try:
        return load_migrations("badmig_pkg")
    finally:
        sys.path.remove(str(tmp))


CASES: list[tuple[str, Callable[[Path], Any], type[Exception], str]] = [
    ("wrong type", lambda t: Product(brand_id=3), dynorm.ValidationError, "Product.brand_id=3: expected a string"),
    ("unknown field on create", lambda t: Product.objects.create(colour="red"), dynorm.ValidationError,
     "Product has no field 'colour'"),
    ("empty key value", lambda t: Person.objects.create(person_id="", name="x"), dynorm.InvalidKeyValue,
     "Person.person_id is empty"),
    ("missing key value", lambda t: Person.objects.create(name="x"), dynorm.ValidationError, "person_id"),
    ("bool in a key", lambda t: Product.objects.filter(brand_id=True).explain(), dynorm.ValidationError, "brand_id"),
    ("oversize item", lambda t: Product.objects.create(brand_id="1", category_id="1", name="x" * 500_000),
     dynorm.ValidationError, "over DynamoDB's 400 KB item limit"),
    ("unknown field in update", lambda t: Product.objects.filter(product_id="01HZZZZZZZZZZZZZZZZZZZZZZZ").update(
        colour="red"), dynorm.ValidationError, "no field 'colour'"),
    ("required field removed", lambda t: Product.objects.filter(product_id="01HZZZZZZZZZZZZZZZZZZZZZZZ").update(
        name=None), dynorm.ValidationError, "required"),
    ("key field changed by update", lambda t: Order.objects.filter(
        customer_id="c", order_id="01HZZZZZZZZZZZZZZZZZZZZZZZ").update(customer_id="d"),
     dynorm.KeyChangeError, "immutable"),
    ("unknown lookup field", lambda t: list(Product.objects.filter(brand_id="1", colour="red")), dynorm.InvalidQuery,
     "no field 'colour'"),
    ("no index serves the filter", lambda t: list(Product.objects.filter(name="x")), dynorm.ScanRequired, ".scan()"),
    ("bad cursor", lambda t: Product.objects.by_brand("1").page(cursor="nope"), dynorm.InvalidCursor, "malformed"),
    ("101 transaction actions", lambda t: _tx(101), dynorm.ValidationError, "at most 100 actions"),
    ("duplicate keys in a batch", lambda t: Person.objects.bulk_create([Person(person_id="a", name="1"),
                                                                       Person(person_id="a", name="2")]),
     dynorm.ValidationError, "same primary key"),
    ("empty map key", lambda t: Order.objects.create(customer_id="c", extra={"ok": {"": 1}}), dynorm.ValidationError,
     "a map key at .ok is empty"),
    # -- issue 9, section 3: values DynamoDB would refuse or change ---------------------------
    ("NaN in a Number", lambda t: Measure.objects.create(sensor="s", amount=float("nan")), dynorm.ValidationError,
     "Measure.amount=nan: nan cannot be stored"),
    ("inf in a Number set after construction", lambda t: _saved(Measure(sensor="s"), amount=float("inf")),
     dynorm.ValidationError, "Measure.amount=inf"),
    ("-inf in a Decimal", lambda t: Measure.objects.create(sensor="s", exact=decimal.Decimal("-Infinity")),
     dynorm.ValidationError, "Measure.exact"),
    ("NaN in a number set", lambda t: Measure.objects.create(sensor="s", nums={1, float("nan")}),
     dynorm.ValidationError, "Measure.nums"),
    ("0.1 and Decimal('0.1') in a number set", lambda t: Measure.objects.create(
        sensor="s", nums={0.1, decimal.Decimal("0.1")}), dynorm.ValidationError, "duplicates in a set"),
    ("NaN deep in a map", lambda t: Measure.objects.create(sensor="s", doc={"a": {"b": float("nan")}}),
     dynorm.ValidationError, "(at .a.b)"),
    ("inf in a list", lambda t: Measure.objects.create(sensor="s", entries=[1, float("inf")]),
     dynorm.ValidationError, "(at [1])"),
    ("NaN in F() arithmetic", lambda t: Measure.objects.filter(sensor="s").update(qty=F("qty") + float("nan")),
     dynorm.ValidationError, "Measure.qty in +: nan"),
    ("42 digits in F() arithmetic", lambda t: Measure.objects.filter(sensor="s").update(
        amount=F("amount") - decimal.Decimal("1." + "1" * 41)), dynorm.ValidationError, "42 significant digits"),
    ("inf in F().append()", lambda t: Measure.objects.filter(sensor="s").update(
        entries=F("entries").append([float("-inf")])), dynorm.ValidationError, "Measure.entries in append()"),
    ("NaN in F().add()", lambda t: Measure.objects.filter(sensor="s").update(nums=F("nums").add({float("nan")})),
     dynorm.ValidationError, "Measure.nums"),
    ("NaN in F().if_not_exists()", lambda t: Measure.objects.filter(sensor="s").update(
        amount=F("amount").if_not_exists(float("nan")) + 1), dynorm.ValidationError, "Measure.amount=nan"),
    ("39 significant digits in an Integer", lambda t: Measure.objects.create(sensor="s", qty=10 ** 38 + 1),
     dynorm.ValidationError, "39 significant digits"),
    ("42-digit Decimal", lambda t: Measure.objects.create(sensor="s", exact=decimal.Decimal("1." + "1" * 41)),
     dynorm.ValidationError, "42 significant digits"),
    ("42-digit Decimal in a Number", lambda t: Measure.objects.create(sensor="s", amount=decimal.Decimal("9" * 42)),
     dynorm.ValidationError, "42 significant digits"),
    ("magnitude over 9.99E+125", lambda t: Measure.objects.create(sensor="s", amount=1e200), dynorm.ValidationError,
     "outside DynamoDB's range"),
    ("int of 127 digits", lambda t: Measure.objects.create(sensor="s", qty=10 ** 126), dynorm.ValidationError,
     "outside DynamoDB's range"),
    ("magnitude under 1E-130", lambda t: Measure.objects.create(sensor="s", exact=decimal.Decimal("1E-131")),
     dynorm.ValidationError, "1E-131 is outside DynamoDB's range"),
    ("float under 1E-130 in a map", lambda t: Measure.objects.create(sensor="s", doc={"x": 5e-324}),
     dynorm.ValidationError, "outside DynamoDB's range"),
    ("NaN in a filter value", lambda t: list(Reading.objects.filter(sensor="s", value__gt=float("nan"))),
     dynorm.ValidationError, "Reading.value=nan"),
    ("key over its limit only once encoded (400 '#')", lambda t: Person.objects.create(person_id="#" * 400, name="x"),
     dynorm.InvalidKeyValue, "Person.person_id='###"),
    ("sort key over 1024 bytes (UTF-8, not characters)", lambda t: StoreEmployee.objects.create(
        store_id="s", employee_id="é" * 600, name="x"), dynorm.InvalidKeyValue, "limit for a sort key"),
    ("table partition key that an inverted GSI sorts on, over 1024 bytes", lambda t: Person.objects.create(
        person_id="p" * 1500, name="x"), dynorm.InvalidKeyValue, "key attribute PK would be"),
    ("GSI partition key over 2048 bytes", lambda t: Measure.objects.create(sensor="s", label="L" * 2100),
     dynorm.InvalidKeyValue, "key attribute GSI1PK"),
    ("GSI key over the limit in update()", lambda t: Measure.objects.filter(sensor="s").update(label="é" * 1100),
     dynorm.InvalidKeyValue, "Measure.label='"),
    ("key over the limit in update()'s key", lambda t: Measure.objects.filter(sensor="#" * 1100).update(qty=1),
     dynorm.InvalidKeyValue, "Measure.sensor"),
    ("get() by a key no item can have", lambda t: Person.objects.get(person_id="x" * 3000), dynorm.InvalidKeyValue,
     "(PK is the sort key of index INV)"),
    ("get_or_create with inf in defaults (refused before its GetItem)", lambda t: Measure.objects.get_or_create(
        sensor="s", defaults={"amount": float("inf")}), dynorm.ValidationError, "Measure.amount=inf"),
    ("update_or_create with NaN in defaults", lambda t: Measure.objects.update_or_create(
        sensor="s", defaults={"exact": decimal.Decimal("NaN")}), dynorm.ValidationError, "Measure.exact"),
    ("NaN in a transaction", lambda t: _tx_create(Measure(sensor="s"), amount=float("nan")), dynorm.ValidationError,
     "Measure.amount=nan"),
    ("maps nested 32 deep", lambda t: Measure.objects.create(sensor="s", doc=_nested(32)), dynorm.ValidationError,
     "nested more than 31 deep"),
    ("lists nested 2000 deep (no RecursionError)", lambda t: Measure.objects.create(
        sensor="s", entries=_nested(2000, list)), dynorm.ValidationError, "nested more than 31 deep"),
    ("lone surrogate in a string", lambda t: Person.objects.create(person_id="p", name="a\ud800b"),
     dynorm.ValidationError, "lone surrogate '\\ud800'"),
    ("lone surrogate in a key", lambda t: Person.objects.create(person_id="\udfff", name="x"),
     dynorm.ValidationError, "Person.person_id"),
    ("lone surrogate in a map key", lambda t: Measure.objects.create(sensor="s", doc={"ok": {"\udc80": 1}}),
     dynorm.ValidationError, "lone surrogate"),
    ("lone surrogate in a string set", lambda t: Measure.objects.create(sensor="s", words={"a", "\ud83d"}),
     dynorm.ValidationError, "Measure.words"),
    ("a map key that is not a string (1 next to '1')", lambda t: Measure.objects.create(
        sensor="s", doc={1: "a", "1": "b"}), dynorm.ValidationError, "the map key 1 at the top is not a string (int)"),
    ("datetime that leaves year 1 in UTC", lambda t: Measure.objects.create(
        sensor="s", at=dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=5)))), dynorm.ValidationError,
     "outside years 1..9999"),
    # -- issue 9, section 4: a batch is validated whole before its first request -------------
    ("bulk_create with NaN at item 30", lambda t: Measure.objects.bulk_create(
        [Measure(sensor=f"s{i}", amount=i) if i != 30 else _spoiled(Measure(sensor="s30"), amount=float("nan"))
         for i in range(50)]),
     dynorm.ValidationError, "bulk_create item 30 of 50: Measure.amount=nan"),
    ("bulk_create with a 2,100-byte key at item 40", lambda t: Person.objects.bulk_create(
        [Person(person_id="x" * 2100 if i == 40 else f"p{i}", name="n") for i in range(50)]),
     dynorm.InvalidKeyValue, "bulk_create item 40 of 50: Person.person_id='xxx"),
    ("bad YAML config", _bad_yaml, dynorm.ConfigurationError, "invalid YAML"),
    ("bad migration files", _bad_migrations, dynorm.DynormError, "depends on '0000_nope'"),
]


def _spoiled(obj: Any, **changes: Any) -> Any:
    for name, value in changes.items():
        setattr(obj, name, value)  # plain assignment is not validated; every write is
    return obj


def _saved(obj: Any, **changes: Any) -> Any:
    return _spoiled(obj, **changes).save()


def _tx_create(obj: Any, **changes: Any) -> None:
    for name, value in changes.items():
        setattr(obj, name, value)
    with dynorm.transaction() as tx:
        tx.create(Person(person_id="fine", name="x"))
        tx.create(obj)


def _nested(depth: int, kind: type = dict) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value} if kind is dict else [value]
    return value


def _tx(n: int) -> None:
    with dynorm.transaction() as tx:
        for i in range(n):
            tx.create(Person(person_id=f"p{i}", name="x"))


@pytest.mark.parametrize("name, action, error, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_its_error_and_sends_nothing(tmp_path: Path, name: str, action: Callable[[Path], Any],
                                                   error: type[Exception], message: str) -> None:
    with dynorm.capture() as c:
        with pytest.raises(error, match=re.escape(message)):
            action(tmp_path)
    assert c.count == 0, f"{name}: {c.operations}"


class BigItem(Entity):
    sku = fields.String()
    name = fields.String(null=True)

    class Meta:
        table = Retail
        entity_type = "BIG_ITEM"
        pk = "{version}#BIG#{sku}"
        sk = "METADATA"


def test_save_of_an_oversize_item_is_refused_before_any_request_like_create() -> None:
    size = 400 * 1024 - 60  # the declared fields fit; PK/SK/type/revision push the item over 400 KB
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError):
            BigItem.objects.create(sku="big1", name="x" * size)
    assert c.count == 0
    BigItem.objects.create(sku="big2", name="small")
    obj = BigItem.objects.get(sku="big2")
    obj.name = "x" * size
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError, match="400 KB"):
            obj.save()
    assert c.count == 0


class LsiLabel(Entity):
    """``label`` is stored as ``placed_at``, the sort key of Retail's LSI1 (1024-byte limit)."""

    lid = fields.String()
    label = fields.String(null=True, attr_name="placed_at")

    class Meta:
        table = Retail
        entity_type = "LSI_LABEL"
        pk = "{version}#LSILABEL#{lid}"
        sk = "METADATA"


@pytest.mark.parametrize("value", ["y" * 1100, ""])
@pytest.mark.parametrize("how", ["create", "save", "update", "queryset_update", "save_update_fields",
                                 "transaction_update", "bulk_create"])
def test_a_bad_lsi_sort_key_value_is_refused_before_any_request_on_every_write(how: str, value: str) -> None:
    """Over 1024 bytes or empty: DynamoDB refuses both in an LSI sort-key attribute."""
    LsiLabel.objects.create(lid="b", label="short")
    obj = LsiLabel.objects.get(lid="b")
    with dynorm.capture() as c:
        with pytest.raises(dynorm.InvalidKeyValue, match="LsiLabel.label") as info:
            if how == "create":
                LsiLabel.objects.create(lid="new", label=value)
            elif how == "save":
                obj.label = value
                obj.save()
            elif how == "update":
                obj.update(label=value)
            elif how == "queryset_update":
                LsiLabel.objects.filter(lid="b").update(label=value)
            elif how == "save_update_fields":
                obj.label = value
                obj.save(update_fields=["label"])
            elif how == "transaction_update":
                with dynorm.transaction() as tx:
                    tx.update(obj, label=value)
            else:
                LsiLabel.objects.bulk_create([LsiLabel(lid="n1", label="ok"), LsiLabel(lid="n2", label=value)])
    assert c.count == 0
    assert info.value.entity == "LsiLabel" and info.value.field == "label"
    assert LsiLabel.objects.get(lid="b").label == "short"
