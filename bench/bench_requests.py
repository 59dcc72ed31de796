"""Requests and read capacity per access pattern: dynorm next to hand-written boto3 calls.

For the Fromatoz catalog (the article's own boto3 code, adapted to versioned keys) and the
kayak rental (the article's key design), each access pattern is run through dynorm's named
queryset method and as a raw boto3 request; both read the same data on the same server.
Target: equal request count and capacity <= the hand-written one.

    python bench/bench_requests.py

Results: ``bench/results/bench_requests.json``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dynorm  # noqa: E402
from dynorm import backend  # noqa: E402
from dynorm.local import LocalDynamoDB  # noqa: E402


def raw_all(operation: str, **params: Any) -> tuple[int, float, int]:
    """Send a hand-written request (following LastEvaluatedKey); return (requests, RCU, items)."""
    client = backend.client()
    method = getattr(client, {"Query": "query", "GetItem": "get_item"}[operation])
    requests, rcu, items = 0, 0.0, 0
    while True:
        resp = method(ReturnConsumedCapacity="TOTAL", **params)
        requests += 1
        rcu += resp.get("ConsumedCapacity", {}).get("CapacityUnits", 0.0)
        items += len(resp.get("Items", [])) if operation == "Query" else int("Item" in resp)
        if "LastEvaluatedKey" not in resp:
            return requests, rcu, items
        params["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def measure(fn: Callable[[], Any]) -> tuple[int, float, int]:
    with dynorm.capture() as c:
        result = fn()
    n = len(result) if isinstance(result, list) else int(result is not None)
    return c.count, c.stats.read_capacity, n


def q(table: str, pk_attr: str, pk: str, index: str | None = None, sk_attr: str | None = None,
      sk: str | None = None, begins: bool = False) -> Callable[[], tuple[int, float, int]]:
    names = {"#p": pk_attr}
    values: dict[str, Any] = {":p": {"S": pk}}
    cond = "#p = :p"
    if sk_attr and sk is not None:
        names["#s"] = sk_attr
        values[":s"] = {"S": sk}
        cond += " AND begins_with(#s, :s)" if begins else " AND #s = :s"
    params: dict[str, Any] = {"TableName": table, "KeyConditionExpression": cond,
                              "ExpressionAttributeNames": names, "ExpressionAttributeValues": values}
    if index:
        params["IndexName"] = index
    return lambda: raw_all("Query", **params)


def main() -> int:
    server = None
    endpoint = os.environ.get("DYNORM_TEST_ENDPOINT")
    if not endpoint:
        server = LocalDynamoDB().start()
        endpoint = server.endpoint
    dynorm.configure(endpoint=endpoint, table_prefix="benchreq-")
    from demo_project.catalog import load as catalog_load
    from demo_project.catalog.models import Brand, Catalog, Category, Product
    from demo_project.kayak import load as kayak_load
    from demo_project.kayak import models as k

    for table in (Catalog, k.Kayak):
        if table.exists():
            table.delete_table()
        table.create_table()
    catalog_load.load()
    ids = kayak_load.load()
    p = Product.objects.by_category("3").first()
    assert p is not None
    pid, bid, cid = p.product_id, p.brand_id, p.category_id
    v = Product._meta.key_version
    ct = Catalog.table_name()
    kt = k.Kayak.table_name()
    s, c, e, r = ids["store_id"], ids["customer_id"], ids["employee_id"], ids["renter_id"]
    kv = k.StoreMetadata._meta.key_version
    cases: list[tuple[str, Callable[[], Any], Callable[[], tuple[int, float, int]]]] = [
        ("catalog: all brands", lambda: list(Brand.objects.all()), q(ct, "PK", f"{v}#BRANDS")),
        ("catalog: all categories", lambda: list(Category.objects.all()), q(ct, "PK", f"{v}#CATEGORIES")),
        ("catalog: product by id", lambda: Product.objects.get(product_id=pid),
         lambda: raw_all("GetItem", TableName=ct, Key={"PK": {"S": f"{v}#P#{pid}"}, "SK": {"S": "METADATA"}})),
        ("catalog: products by brand", lambda: list(Product.objects.by_brand(bid)),
         q(ct, "GSI1PK", f"{v}#B#{bid}", "GSI1")),
        ("catalog: products by brand and category", lambda: list(Product.objects.by_brand(bid).in_category(cid)),
         q(ct, "GSI1PK", f"{v}#B#{bid}", "GSI1", "GSI1SK", f"C#{cid}#", begins=True)),
        ("catalog: products by category", lambda: list(Product.objects.by_category(cid)),
         q(ct, "GSI2PK", f"{v}#C#{cid}", "GSI2")),
        ("catalog: products by category and brand", lambda: list(Product.objects.by_category(cid).of_brand(bid)),
         q(ct, "GSI2PK", f"{v}#C#{cid}", "GSI2", "GSI2SK", f"B#{bid}#", begins=True)),
        ("kayak: all stores", lambda: list(k.StoreMetadata.objects.all_stores()), q(kt, "PK1", f"{kv}#stores", "GSI1")),
        ("kayak: inventory of a store", lambda: list(k.StoreInventoryItem.objects.of_store(s)),
         q(kt, "PK", f"{kv}#store#storeULID#{s}", None, "SK", "inventory#metadata#", begins=True)),
        ("kayak: current employees", lambda: list(k.StoreEmployee.objects.current_at(s)),
         q(kt, "PK", f"{kv}#store#storeULID#{s}", None, "SK", "employee#metadata#", begins=True)),
        ("kayak: employees ever at a store", lambda: list(k.EmploymentRelationship.objects.ever_at_store(s)),
         q(kt, "PK2", f"{kv}#employment#{s}", "GSI2")),
        ("kayak: stores of an employee", lambda: list(k.EmploymentRelationship.objects.stores_of(e)),
         q(kt, "PK3", f"{kv}#employment#{e}", "GSI3")),
        ("kayak: rentals a customer has out", lambda: list(k.StoreActiveRental.objects.out_by(r)),
         q(kt, "PK4", f"{kv}#activeRentals#personULID#{r}", "GSI4")),
        ("kayak: rental history at a location", lambda: list(k.RentalRelationship.objects.history_at(c, s)),
         q(kt, "PK3", f"{kv}#rentalPersonLocation#{c}", "GSI3", "SK3", f"{kv}#rentalLocationPerson#{s}")),
        ("kayak: rental history everywhere", lambda: list(k.RentalRelationship.objects.history(c)),
         q(kt, "PK3", f"{kv}#rentalPersonLocation#{c}", "GSI3")),
    ]
    rows = []
    print(f"{'access pattern':<42}{'dynorm req/RCU/items':>24}{'boto3 req/RCU/items':>24}")
    for name, mine, theirs in cases:
        d, b = measure(mine), theirs()
        rows.append({"pattern": name, "dynorm": {"requests": d[0], "rcu": d[1], "items": d[2]},
                     "boto3": {"requests": b[0], "rcu": b[1], "items": b[2]}})
        flag = "" if (d[0] == b[0] and d[1] <= b[1] and d[2] == b[2]) else "  <-- differs"
        print(f"{name:<42}{f'{d[0]} / {d[1]:g} / {d[2]}':>24}{f'{b[0]} / {b[1]:g} / {b[2]}':>24}{flag}")
    equal = all(r["dynorm"]["requests"] == r["boto3"]["requests"] and r["dynorm"]["rcu"] <= r["boto3"]["rcu"]
                and r["dynorm"]["items"] == r["boto3"]["items"] for r in rows)
    print(f"all patterns: equal requests and items, capacity <= hand-written: {equal}")
    out = Path(__file__).parent / "results" / "bench_requests.json"
    out.write_text(json.dumps({"patterns": rows, "all_equal": equal}, indent=2))
    print(f"written {out}")
    for table in (Catalog, k.Kayak):
        table.delete_table()
    if server:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
