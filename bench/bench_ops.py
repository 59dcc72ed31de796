"""Client CPU per operation: dynorm vs hand-written PynamoDB vs raw boto3 (one server, one run).

Measures process CPU time (``time.process_time``; DynamoDB Local runs in another process) per
get, put and query-of-100-items, median of ROUNDS rounds, and prints the ratios
dynorm/PynamoDB and dynorm/boto3. Results go to ``bench/results/bench_ops.json``.

    python bench/bench_ops.py [--ops 2000] [--query-ops 200] [--rounds 5]

Uses ``DYNORM_TEST_ENDPOINT`` when set, else starts DynamoDB Local itself.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pynamodb.attributes import NumberAttribute, UnicodeAttribute, VersionAttribute  # noqa: E402
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex  # noqa: E402
from pynamodb.models import Model  # noqa: E402

from bench.common import boto3_client, connect, cpu_per_op, finish, fresh_table, pynamodb_meta  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ops", type=int, default=2000, help="gets and puts per round")
    ap.add_argument("--query-ops", type=int, default=200, help="100-item queries per round")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    endpoint, server = connect("bench-")
    from demo_project.catalog.models import Catalog, Product

    table = fresh_table(Catalog)

    class PByBrand(GlobalSecondaryIndex["PProduct"]):
        class Meta:
            index_name = "GSI1"
            projection = AllProjection()
        gsi1pk = UnicodeAttribute(hash_key=True, attr_name="GSI1PK")
        gsi1sk = UnicodeAttribute(range_key=True, attr_name="GSI1SK")

    class PProduct(Model):
        """The same items, written by hand with PynamoDB."""

        Meta = pynamodb_meta(table, endpoint)

        pk = UnicodeAttribute(hash_key=True, attr_name="PK")
        sk = UnicodeAttribute(range_key=True, attr_name="SK")
        gsi1pk = UnicodeAttribute(attr_name="GSI1PK")
        gsi1sk = UnicodeAttribute(attr_name="GSI1SK")
        gsi2pk = UnicodeAttribute(attr_name="GSI2PK")
        gsi2sk = UnicodeAttribute(attr_name="GSI2SK")
        entity_type = UnicodeAttribute(attr_name="entityType")
        product_id = UnicodeAttribute()
        brand_id = UnicodeAttribute()
        category_id = UnicodeAttribute()
        name = UnicodeAttribute()
        description = UnicodeAttribute(null=True)
        stock_level = NumberAttribute()
        created_at = UnicodeAttribute()
        version = VersionAttribute()
        by_brand = PByBrand()

    client = boto3_client(endpoint)

    # 100 products of one brand for the query benchmark, plus one product to get
    for i in range(100):
        Product.objects.create(brand_id="bench", category_id=str(i % 5), name=f"Query item {i}", stock_level=i)
    target = Product.objects.create(brand_id="x", category_id="1", name="Target", stock_level=5)
    pid = target.product_id
    kv = Product._meta.key_version
    keys = target.key_attributes()
    key = {"PK": {"S": keys["PK"]}, "SK": {"S": keys["SK"]}}
    item = dict(client.get_item(TableName=table, Key=key)["Item"])

    seq = itertools.count()
    # three items, one per implementation: their versioned saves must not race each other
    d_obj = Product.objects.create(brand_id="x", category_id="1", name="Saved by dynorm", stock_level=0)
    p_item = Product.objects.create(brand_id="x", category_id="1", name="Saved by PynamoDB", stock_level=0)
    p_obj = PProduct.get(p_item.key_attributes()["PK"], "METADATA")
    b_item = Product.objects.create(brand_id="x", category_id="1", name="Saved by boto3", stock_level=0)
    b_key = {"PK": {"S": b_item.key_attributes()["PK"]}, "SK": {"S": "METADATA"}}
    b_raw = dict(client.get_item(TableName=table, Key=b_key)["Item"])

    def _save(obj: Any, i: int) -> None:
        obj.stock_level = i
        obj.save()

    def put_item(i: int) -> dict[str, Any]:
        return {**item, "PK": {"S": f"{kv}#P#put{i}"}, "product_id": {"S": f"put{i}"}}

    ops: dict[str, dict[str, Callable[[int], Any]]] = {
        "get": {
            "dynorm": lambda i: Product.objects.get(product_id=pid),
            "pynamodb": lambda i: PProduct.get(keys["PK"], "METADATA"),
            "boto3": lambda i: client.get_item(TableName=table, Key=key),
        },
        "put": {
            "dynorm": lambda i: Product(brand_id="b", category_id="c", name=f"Put {i}", stock_level=i).save(),
            "pynamodb": lambda i: PProduct(f"{kv}#P#p{(i := next(seq))}", "METADATA",
                                           gsi1pk=f"{kv}#B#b", gsi1sk=f"C#c#P#p{i}",
                                           gsi2pk=f"{kv}#C#c", gsi2sk=f"B#b#P#p{i}", entity_type="PRODUCT",
                                           product_id=f"p{i}", brand_id="b", category_id="c", name=f"Put {i}",
                                           stock_level=i, created_at="2024-01-01T00:00:00.000000Z").save(),
            "boto3": lambda i: client.put_item(TableName=table, Item=put_item(i)),
        },
        # save() of an item read: dynorm's UpdateItem (keeps undeclared attributes) vs PynamoDB's
        # versioned PutItem vs a hand-written conditional PutItem
        "save": {
            "dynorm": lambda i: _save(d_obj, i),
            "pynamodb": lambda i: _save(p_obj, i),
            "boto3": lambda i: client.put_item(TableName=table, Item={**b_raw, "stock_level": {"N": str(i)}},
                                               ConditionExpression="attribute_exists(PK)"),
        },
        "query100": {
            "dynorm": lambda i: list(Product.objects.by_brand("bench")),
            "pynamodb": lambda i: list(PProduct.by_brand.query(f"{kv}#B#bench")),
            "boto3": lambda i: client.query(TableName=table, IndexName="GSI1",
                                            KeyConditionExpression="GSI1PK = :p",
                                            ExpressionAttributeValues={":p": {"S": f"{kv}#B#bench"}})["Items"],
        },
    }
    assert len(ops["query100"]["dynorm"](0)) == 100 and len(ops["query100"]["pynamodb"](0)) == 100
    results: dict[str, Any] = {"ops": args.ops, "query_ops": args.query_ops, "rounds": args.rounds,
                               "unit": "client CPU microseconds per operation (median of rounds)"}
    print(f"client CPU µs/op, median of {args.rounds} rounds ({args.ops} gets/puts, "
          f"{args.query_ops} queries of 100 items per round)")
    print(f"{'op':<10}{'dynorm':>10}{'pynamodb':>10}{'boto3':>10}{'d/pynamodb':>12}{'d/boto3':>9}")
    for op, impls in ops.items():
        n = args.query_ops if op == "query100" else args.ops
        for fn in impls.values():  # warm up
            for i in range(20):
                fn(10_000_000 + i)
        row = cpu_per_op(impls, n, args.rounds)
        row["dynorm/pynamodb"] = row["dynorm"] / row["pynamodb"]
        row["dynorm/boto3"] = row["dynorm"] / row["boto3"]
        results[op] = row
        print(f"{op:<10}{row['dynorm']:>10.0f}{row['pynamodb']:>10.0f}{row['boto3']:>10.0f}"
              f"{row['dynorm/pynamodb']:>12.2f}{row['dynorm/boto3']:>9.2f}")
    finish("bench_ops", results, Catalog, server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
