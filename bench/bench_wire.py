"""Client CPU per operation on the two wires: dynorm ``direct`` vs dynorm ``botocore`` vs raw boto3.

``wire: direct`` encodes and decodes data-plane bodies with dynorm's JSON codec under botocore's
transport (docs/architecture.md, "The wire"); ``wire: botocore`` is botocore's serializer and
parser. Measures process CPU time (``time.process_time``; DynamoDB Local runs in another process)
per get, put, update, query of 100 and of 1,000 items, and batch write of 1,000 items, the
implementations interleaved round by round, and prints each median with the ratios to raw boto3
(a plain ``boto3.client("dynamodb")``, DynamoDB JSON by hand). The ``client-*`` columns send the
hand-written boto3 requests through dynorm's own botocore client on each wire: the codec alone,
without dynorm's models. Results go to ``bench/results/bench_wire.json``.

    python bench/bench_wire.py [--ops 300] [--rounds 5]

Uses ``DYNORM_TEST_ENDPOINT`` when set, else starts DynamoDB Local itself.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dynorm  # noqa: E402
from bench.common import boto3_client, connect, finish, fresh_table  # noqa: E402
from dynorm import backend  # noqa: E402
from dynorm.backend import wire_json  # noqa: E402

#: op -> (calls per round as a fraction of --ops, minimum)
SCALE = {"get": (1.0, 20), "put": (1.0, 20), "update": (1.0, 20), "query100": (0.1, 5), "query1000": (0.01, 3),
         "batch_write1000": (0.01, 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ops", type=int, default=300, help="gets, puts and updates per round (queries and batches fewer)")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    endpoint, server = connect("benchwire-")
    from demo_project.catalog.models import Catalog, Product

    table = fresh_table(Catalog)
    kv = Product._meta.key_version
    for brand, count in (("q100", 100), ("q1000", 1000)):
        Product.objects.bulk_create([Product(brand_id=brand, category_id=str(i % 5), name=f"Query item {i}",
                                             description="x" * 40, stock_level=i) for i in range(count)])
    target = Product.objects.create(brand_id="x", category_id="1", name="Target", stock_level=5)
    keys = target.key_attributes()
    key = {"PK": {"S": keys["PK"]}, "SK": {"S": keys["SK"]}}
    raw = dict(backend.call("GetItem", {"TableName": table, "Key": key})["Item"])
    counter = iter(range(10**9))

    def raw_item() -> dict[str, Any]:
        n = next(counter)
        return {**raw, "PK": {"S": f"{kv}#P#raw{n}"}, "product_id": {"S": f"raw{n}"}}

    def boto3_query(client: Any, brand: str) -> list[Any]:
        items, start = [], {}
        while True:
            page = client.query(TableName=table, IndexName="GSI1", KeyConditionExpression="GSI1PK = :p",
                                ExpressionAttributeValues={":p": {"S": f"{kv}#B#{brand}"}}, **start)
            items += page["Items"]
            if "LastEvaluatedKey" not in page:
                return items
            start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}

    def boto3_batch_write(client: Any) -> None:
        requests = [{"PutRequest": {"Item": raw_item()}} for _ in range(1000)]
        for n in range(0, 1000, 25):
            client.batch_write_item(RequestItems={table: requests[n:n + 25]})

    def dynorm_ops() -> dict[str, Callable[[], Any]]:
        return {
            "get": lambda: Product.objects.get(product_id=target.product_id),
            "put": lambda: Product(brand_id="b", category_id="c", name="Put", stock_level=1).save(),
            "update": lambda: target.update(stock_level=dynorm.F("stock_level") + 1),
            "query100": lambda: list(Product.objects.by_brand("q100")),
            "query1000": lambda: list(Product.objects.by_brand("q1000")),
            "batch_write1000": lambda: Product.objects.bulk_create(
                [Product(brand_id="bw", category_id="c", name="Batch", stock_level=1) for _ in range(1000)]),
        }

    def boto3_ops(client: Any) -> dict[str, Callable[[], Any]]:
        return {
            "get": lambda: client.get_item(TableName=table, Key=key),
            "put": lambda: client.put_item(TableName=table, Item=raw_item()),
            "update": lambda: client.update_item(TableName=table, Key=key, ReturnValues="ALL_NEW",
                                                 UpdateExpression="SET stock_level = stock_level + :one",
                                                 ExpressionAttributeValues={":one": {"N": "1"}}),
            "query100": lambda: boto3_query(client, "q100"),
            "query1000": lambda: boto3_query(client, "q1000"),
            "batch_write1000": lambda: boto3_batch_write(client),
        }

    def impl(name: str, op: str) -> Callable[[], Any]:
        """The function to time (the wire switched beforehand, outside the timed loop)."""
        if name == "boto3":
            return boto3_ops(boto3)[op]
        dynorm.configure(wire=name.rpartition("-")[2])
        return boto3_ops(backend.client())[op] if name.startswith("client-") else dynorm_ops()[op]

    boto3 = boto3_client(endpoint)
    assert len(dynorm_ops()["query1000"]()) == len(boto3_query(boto3, "q1000")) == 1000
    impls = ["direct", "botocore", "client-direct", "client-botocore", "boto3"]
    results: dict[str, Any] = {"ops": args.ops, "rounds": args.rounds, "json": wire_json.json_library(),
                               "unit": "client CPU microseconds per operation (median of interleaved rounds)"}
    print(f"client CPU µs/op, median of {args.rounds} interleaved rounds; JSON library: {wire_json.json_library()}")
    print(f"{'op':<16}{'direct':>9}{'botocore':>9}{'client-d':>9}{'client-b':>9}{'boto3':>9}"
          f"{'direct/boto3':>13}{'botocore/boto3':>15}{'client d/b':>11}")
    for op, (share, least) in SCALE.items():
        n = max(least, int(args.ops * share))
        samples: dict[str, list[float]] = {name: [] for name in impls}
        for rnd in range(args.rounds + 1):  # round 0 warms up
            for name in impls:
                fn = impl(name, op)
                start = time.process_time()
                for _ in range(n):
                    fn()
                if rnd:
                    samples[name].append((time.process_time() - start) / n * 1e6)
        row = {name: statistics.median(values) for name, values in samples.items()}
        row["direct/boto3"] = row["direct"] / row["boto3"]
        row["botocore/boto3"] = row["botocore"] / row["boto3"]
        row["client direct/botocore"] = row["client-direct"] / row["client-botocore"]
        results[op] = row
        print(f"{op:<16}" + "".join(f"{row[name]:>9.0f}" for name in impls)
              + f"{row['direct/boto3']:>13.2f}{row['botocore/boto3']:>15.2f}{row['client direct/botocore']:>11.2f}")
    finish("bench_wire", results, Catalog, server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
