"""Decode throughput, no server: DynamoDB JSON pages of mixed entity types into instances.

dynorm (the decoder a collection queryset uses: dispatch on the type attribute, unknown
types as UnknownItem) vs PynamoDB ``from_raw_data`` on a hand-written discriminated model of
the same items. Median of rounds; items/s and the ratio dynorm/PynamoDB.

    python bench/bench_decode.py [--items 20000] [--rounds 5]

Results: ``bench/results/bench_decode.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pynamodb.attributes import (  # noqa: E402
    DiscriminatorAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.models import Model  # noqa: E402

from demo_project.catalog.models import Brand, Category, Product  # noqa: E402
from dynorm.iterables import decoder  # noqa: E402
from dynorm.plan import QueryState  # noqa: E402
from dynorm.query import QuerySet  # noqa: E402


class PBase(Model):
    class Meta:
        table_name = "fromatoz"
        host = "http://127.0.0.1:1"

    pk = UnicodeAttribute(hash_key=True, attr_name="PK")
    sk = UnicodeAttribute(range_key=True, attr_name="SK")
    gsi1pk = UnicodeAttribute(null=True, attr_name="GSI1PK")
    gsi1sk = UnicodeAttribute(null=True, attr_name="GSI1SK")
    gsi2pk = UnicodeAttribute(null=True, attr_name="GSI2PK")
    gsi2sk = UnicodeAttribute(null=True, attr_name="GSI2SK")
    cls = DiscriminatorAttribute(attr_name="entityType")


class PProduct(PBase, discriminator="PRODUCT"):
    product_id = UnicodeAttribute()
    brand_id = UnicodeAttribute()
    category_id = UnicodeAttribute()
    name = UnicodeAttribute()
    description = UnicodeAttribute(null=True)
    stock_level = NumberAttribute()
    created_at = UnicodeAttribute()
    version = VersionAttribute()


class PBrand(PBase, discriminator="BRAND"):
    brand_id = UnicodeAttribute()
    name = UnicodeAttribute()


class PCategory(PBase, discriminator="CATEGORY"):
    category_id = UnicodeAttribute()
    name = UnicodeAttribute()


def make_items(n: int) -> list[dict[str, Any]]:
    """Raw items as a Query returns them: 80% products, 10% brands, 10% categories."""
    items = []
    for i in range(n):
        if i % 10 == 8:
            items.append(Brand(brand_id=str(i), name=f"Brand {i}"))
        elif i % 10 == 9:
            items.append(Category(category_id=str(i), name=f"Category {i}"))
        else:
            items.append(Product(brand_id=str(i % 7), category_id=str(i % 5), name=f"Product {i}",
                                 description="A fine product", stock_level=i % 100))
    raw = []
    for obj in items:
        for attr, value in obj.key_attributes().items():
            setattr(obj, type(obj)._dynamo_to_python_attr(attr), value)
        if hasattr(obj, "version") and obj._meta.version_field:
            obj.version = 1
        raw.append(obj.serialize())
    return raw


def rate(fn: Any, items: list[dict[str, Any]], rounds: int) -> float:
    results = []
    for _ in range(rounds):
        start = time.perf_counter()
        for item in items:
            fn(item)
        results.append(len(items) / (time.perf_counter() - start))
    return statistics.median(results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    items = make_items(args.items)
    qs: QuerySet[Any] = QuerySet(Brand, QueryState(Brand, collection=True))
    decode = decoder(qs, _collection_plan(qs))
    assert type(decode(items[0])) is Product and type(PBase.from_raw_data(items[0])) is PProduct
    results = {"items": args.items, "rounds": args.rounds,
               "dynorm": rate(decode, items, args.rounds),
               "pynamodb": rate(PBase.from_raw_data, items, args.rounds)}
    results["dynorm/pynamodb"] = results["dynorm"] / results["pynamodb"]
    print(f"decode of {args.items} mixed items (80% products), median of {args.rounds} rounds:")
    print(f"  dynorm collection decoder   {results['dynorm']:10.0f} items/s")
    print(f"  PynamoDB from_raw_data      {results['pynamodb']:10.0f} items/s")
    print(f"  ratio dynorm/PynamoDB       {results['dynorm/pynamodb']:10.2f}")
    out = Path(__file__).parent / "results" / "bench_decode.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"written {out}")
    return 0


def _collection_plan(qs: QuerySet[Any]) -> Any:
    from dynorm.plan import Plan

    return Plan("Query", "fromatoz", None, "primary", None, None, None, {}, {}, {}, entity_types=None)


if __name__ == "__main__":
    sys.exit(main())
