"""Bad input: each malformed input gets its documented error, and no request is sent."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import pytest

import dynorm
from demo_project.catalog.models import Product
from dynorm import conf
from tests.models import Order, Person


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
    ("bad YAML config", _bad_yaml, dynorm.ConfigurationError, "invalid YAML"),
    ("bad migration files", _bad_migrations, dynorm.DynormError, "depends on '0000_nope'"),
]


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
