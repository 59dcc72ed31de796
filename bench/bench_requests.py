"""Requests and read capacity per access pattern: dynorm next to hand-written boto3 calls.

For every read access pattern of the five seed models in demo_project (the articles' own
boto3 code or key designs: Fromatoz catalog, kayak rental, customer orders, Monithor, the
arxiv-like library), the pattern is run through dynorm's named queryset method and as a raw
boto3 request; both read the same data on the same server. (Writes -- register, publish,
stock changes -- are one request either way and are covered by the seed-model tests.)
Target: equal request count and capacity <= the hand-written one.

    python bench/bench_requests.py

Results: ``bench/results/bench_requests.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dynorm  # noqa: E402
from bench.common import connect  # noqa: E402
from dynorm import backend  # noqa: E402


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
      sk: str | None = None, begins: bool = False, between: tuple[str, str] | None = None,
      forward: bool = True, limit: int | None = None) -> Callable[[], tuple[int, float, int]]:
    """A hand-written Query: partition key, optional sort-key condition, order and Limit."""
    names = {"#p": pk_attr}
    values: dict[str, Any] = {":p": {"S": pk}}
    cond = "#p = :p"
    if sk_attr and between is not None:
        names["#s"] = sk_attr
        values[":lo"], values[":hi"] = {"S": between[0]}, {"S": between[1]}
        cond += " AND #s BETWEEN :lo AND :hi"
    elif sk_attr and sk is not None:
        names["#s"] = sk_attr
        values[":s"] = {"S": sk}
        cond += " AND begins_with(#s, :s)" if begins else " AND #s = :s"
    params: dict[str, Any] = {"TableName": table, "KeyConditionExpression": cond,
                              "ExpressionAttributeNames": names, "ExpressionAttributeValues": values}
    if index:
        params["IndexName"] = index
    if not forward:
        params["ScanIndexForward"] = False
    if limit is not None:  # one page of at most `limit` items, as a hand-written "newest N" would
        params["Limit"] = limit
        client = backend.client()

        def once() -> tuple[int, float, int]:
            resp = client.query(ReturnConsumedCapacity="TOTAL", **params)
            return 1, resp.get("ConsumedCapacity", {}).get("CapacityUnits", 0.0), len(resp["Items"])
        return once
    return lambda: raw_all("Query", **params)


def get(table: str, key: dict[str, str]) -> Callable[[], tuple[int, float, int]]:
    """A hand-written GetItem."""
    return lambda: raw_all("GetItem", TableName=table, Key={k: {"S": v} for k, v in key.items()})


def main() -> int:
    endpoint, server = connect("benchreq-")
    from demo_project.catalog import load as catalog_load
    from demo_project.catalog.models import Brand, Catalog, Category, Product
    from demo_project.kayak import load as kayak_load
    from demo_project.kayak import models as k
    from demo_project.library import load as library_load
    from demo_project.library import models as lib
    from demo_project.monithor import load as monithor_load
    from demo_project.monithor import models as mon
    from demo_project.orders import load as orders_load
    from demo_project.orders import models as o

    tables = (Catalog, k.Kayak, o.Shopfront, mon.Monithor, lib.Library)
    for table in tables:
        if table.exists():
            table.delete_table()
        table.create_table()
    catalog_load.load()
    ids = kayak_load.load()
    orders_load.load()
    mids = monithor_load.load()
    lids = library_load.load()
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
    import datetime as dt

    ot, cust = o.Shopfront.table_name(), "123"
    cases += [
        ("orders: customer", lambda: o.Customer.objects.get(customer_id=cust),
         get(ot, {"PK": f"v1#CUSTOMER#{cust}", "SK": "A"})),
        ("orders: customer + newest 3 orders", lambda: list(o.Customer.objects.with_newest_orders(cust, 3)),
         q(ot, "PK", f"v1#CUSTOMER#{cust}", forward=False, limit=4)),
        ("orders: all orders of a customer", lambda: list(o.Order.objects.of_customer(cust)),
         q(ot, "PK", f"v1#CUSTOMER#{cust}", None, "SK", "#ORDER#", begins=True)),
        ("orders: orders placed in February", lambda: list(o.Order.objects.placed_between(cust, "2020-02-01",
                                                                                          "2020-02-29")),
         q(ot, "PK", f"v1#CUSTOMER#{cust}", None, "SK", between=("#ORDER#2020-02-01", "#ORDER#2020-02-29"))),
    ]
    mt, now = mon.Monithor.table_name(), mids["now"]
    org, proj, mid, user = mids["org_id"], mids["project_id"], mids["monitor_id"], mids["user_id"]

    def iso(t: dt.datetime) -> str:
        return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    hour, day = now + dt.timedelta(hours=1), now - dt.timedelta(days=1)
    cases += [
        ("monithor: organization", lambda: mon.Organization.objects.get(org_id=org),
         get(mt, {"PK": f"org#{org}", "SK": f"org#{org}"})),
        ("monithor: projects of an organization", lambda: list(mon.Project.objects.of_organization(org)),
         q(mt, "GSI", f"org#{org}", "GSI", "SK", "project#", begins=True)),
        ("monithor: monitors of a project", lambda: list(mon.Monitor.objects.of_project(proj)),
         q(mt, "GSI", f"project#{proj}", "GSI", "SK", "monitor#", begins=True)),
        ("monithor: monitors due in the next hour", lambda: list(mon.Monitor.objects.due_between(now, hour)),
         q(mt, "PK", "monitors", "pk_run", "nextrun_at", between=(iso(now), iso(hour)))),
        ("monithor: logs of the last day", lambda: list(mon.Log.objects.of_monitor_between(mid, day, now)),
         q(mt, "PK", f"monitor#{mid}", "pk_created", "created_at", between=(iso(day), iso(now)))),
        ("monithor: projects of a user", lambda: list(mon.Membership.objects.projects_of(user)),
         q(mt, "PK", f"user#{user}", None, "SK", f"user#{user}|project#", begins=True)),
        ("monithor: users of a project", lambda: list(mon.Membership.objects.users_of(proj)),
         q(mt, "GSI", f"project#{proj}", "GSI", "SK", "user#", begins=True)),
    ]
    lt = lib.Library.table_name()
    au, art, kw, cat = lids["author_id"], lids["article_id"], lids["keyword"], lids["category"]
    cases += [
        ("library: fetch the article", lambda: lib.Article.objects.get(author_id=au, article_id=art),
         get(lt, {"PK": f"author:{au}", "SK": f"article:{art}"})),
        ("library: articles by the author", lambda: list(lib.Article.objects.by_author(au)),
         q(lt, "PK", f"author:{au}", None, "SK", "article:", begins=True)),
        ("library: titles for a keyword", lambda: list(lib.KeywordArticle.objects.articles_for(kw)),
         q(lt, "PK", f"keyword:{kw}")),
        ("library: titles by the author for a keyword",
         lambda: list(lib.KeywordArticle.objects.articles_for_by(kw, au)),
         q(lt, "PK", f"keyword:{kw}", None, "SK", f"author:{au}#article:", begins=True)),
        ("library: keywords of the article", lambda: list(lib.ArticleKeyword.objects.keywords_of(art)),
         q(lt, "PK", f"article:{art}")),
        ("library: a category chronologically", lambda: list(lib.Article.objects.in_category(cat)),
         q(lt, "category", cat, "ByCategory")),
        ("library: the author chronologically", lambda: list(lib.Article.objects.by_author_chronological(au)),
         q(lt, "PK", f"author:{au}", "year_lsi")),
    ]
    rows = []
    print(f"{'access pattern':<46}{'dynorm req/RCU/items':>22}{'boto3 req/RCU/items':>22}")
    for name, mine, theirs in cases:
        d, b = measure(mine), theirs()
        rows.append({"pattern": name, "dynorm": {"requests": d[0], "rcu": d[1], "items": d[2]},
                     "boto3": {"requests": b[0], "rcu": b[1], "items": b[2]}})
        flag = "" if (d[0] == b[0] and d[1] <= b[1] and d[2] == b[2]) else "  <-- differs"
        print(f"{name:<46}{f'{d[0]} / {d[1]:g} / {d[2]}':>22}{f'{b[0]} / {b[1]:g} / {b[2]}':>22}{flag}")
    equal = all(r["dynorm"]["requests"] == r["boto3"]["requests"] and r["dynorm"]["rcu"] <= r["boto3"]["rcu"]
                and r["dynorm"]["items"] == r["boto3"]["items"] for r in rows)
    print(f"all patterns: equal requests and items, capacity <= hand-written: {equal}")
    out = Path(__file__).parent / "results" / "bench_requests.json"
    out.write_text(json.dumps({"patterns": rows, "all_equal": equal}, indent=2))
    print(f"written {out}")
    for table in tables:
        table.delete_table()
    if server:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
