"""`make demo`: the Fromatoz catalog on DynamoDB Local, migrated from v1 to v2 keys, then queried.

Steps (each a subcommand, run in this order by ``make demo``)::

    python -m demo_project.catalog.demo reset      # drop the demo table left by an earlier run
    dynorm migrate 0001_initial                    # create the table (catalog at key version v1)
    python -m demo_project.catalog.demo load-v1    # load brands, categories, products under v1 keys
    dynorm migrate                                 # 0002_catalog_v2: rewrite every item to v2 keys
    python -m demo_project.catalog.demo patterns   # the nine access patterns, on v2 keys

Each pattern prints the call, the request it issued (``explain()``), the result count,
and the requests and read/write capacity it consumed (``dynorm.capture()``).
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import dynorm
from dynorm import F, Q

from .load import load
from .models import Brand, Catalog, Category, Product


def _run(number: int, title: str, call: str, fn: Callable[[], Any], plan: dynorm.Plan | None) -> Any:
    with dynorm.capture() as c:
        result = fn()
    count = len(result) if isinstance(result, list) else 1
    stats = c.stats
    print(f"{number}. {title}")
    print(f"   {call}")
    if plan is not None:
        print("   " + str(plan).replace("\n", "\n   "))
    ops = " + ".join(c.operations)
    cap = f"{stats.read_capacity:g} RCU" + (f", {stats.write_capacity:g} WCU" if stats.write_capacity else "")
    print(f"   -> {count} item(s) | {c.count} request(s): {ops} | {cap}\n")
    return result


def reset() -> int:
    """Delete the demo table (and its migration ledger) left by an earlier run."""
    if Catalog.exists():
        Catalog.delete_table()
        print(f"Deleted table {Catalog.table_name()} from an earlier run.")
    return 0


def load_v1() -> int:
    """Load the demo data under key version v1 (as an application deployed before the migration did)."""
    models = (Brand, Category, Product)
    current = [m._meta.key_version for m in models]
    for m in models:  # demo only: write with the old key version the 0001 migration describes
        m._meta.key_version = "v1"
    try:
        with dynorm.capture() as c:
            counts = load()
    finally:
        for m, v in zip(models, current):
            m._meta.key_version = v
    ops = ", ".join(f"{c.operations.count(op)} {op}" for op in sorted(set(c.operations)))
    print(f"Loaded {', '.join(f'{v} {k}' for k, v in counts.items())} under v1 keys ({ops}).")
    sample = Product.objects.scan().first()
    print(f"A product is stored at PK={sample._dynorm_pk!r} (before the migration)." if sample else "")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one demo step (``reset``, ``load-v1`` or ``patterns``); return an exit code."""
    step = (argv if argv is not None else sys.argv[1:] or ["patterns"])[0]
    if step == "reset":
        return reset()
    if step == "load-v1":
        return load_v1()
    if step != "patterns":
        print(f"unknown step {step!r}: use reset, load-v1 or patterns", file=sys.stderr)
        return 2
    print(f"dynorm demo: Fromatoz product catalog on {dynorm.get_settings().endpoint} "
          f"(key version {Product._meta.key_version})\n")

    some = Product.objects.by_category("3").filter(stock_level__gte=10).first()
    assert some is not None
    pid, bid, cid = some.product_id, some.brand_id, some.category_id

    _run(1, "Get all brands", "Brand.objects.all()", lambda: list(Brand.objects.all()),
         Brand.objects.all().explain())
    _run(2, "Get all categories", "Category.objects.all()", lambda: list(Category.objects.all()),
         Category.objects.all().explain())
    product = _run(3, "Get product by id", f"Product.objects.get(product_id={pid!r})",
                   lambda: Product.objects.get(product_id=pid), Product.objects.filter(product_id=pid).explain())
    print(f"   {product.name}: stock level {product.stock_level}, version {product.version}\n")

    def decrease(n: int) -> Product:
        # one request, never below zero: a one-action TransactWriteItems (applied exactly once under
        # SDK retries); the new stock level and version are read (one GetItem) when first read
        return Product.objects.filter(product_id=pid).update(stock_level=F("stock_level") - n,
                                                             condition=Q(stock_level__gte=n))

    def increase(n: int) -> Product:
        return Product.objects.filter(product_id=pid).update(stock_level=F("stock_level") + n)

    p = _run(4, "Decrease stock level",
             "Product.objects.filter(product_id=pid).update(stock_level=F('stock_level') - 2, "
             "condition=Q(stock_level__gte=2))", lambda: decrease(2), None)
    with dynorm.capture() as c:
        shown = f"stock level now {p.stock_level}, version {p.version}"
    print(f"   {shown} (read on first access: {' + '.join(c.operations)}, {c.stats.read_capacity:g} RCU)\n")
    p = _run(5, "Increase stock level",
             "Product.objects.filter(product_id=pid).update(stock_level=F('stock_level') + 5)",
             lambda: increase(5), None)
    print(f"   stock level now {p.stock_level}, version {p.version}\n")
    try:
        decrease(10_000)
    except dynorm.ConditionFailed as exc:
        print(f"   decrease by 10000 refused: {exc} (stock stays {exc.item.stock_level})\n")
    _run(6, "Get products by brand", f"Product.objects.by_brand({bid!r})",
         lambda: list(Product.objects.by_brand(bid)), Product.objects.by_brand(bid).explain())
    _run(7, "Get products by brand and category", f"Product.objects.by_brand({bid!r}).in_category({cid!r})",
         lambda: list(Product.objects.by_brand(bid).in_category(cid)),
         Product.objects.by_brand(bid).in_category(cid).explain())
    _run(8, "Get products by category", f"Product.objects.by_category({cid!r})",
         lambda: list(Product.objects.by_category(cid)), Product.objects.by_category(cid).explain())
    _run(9, "Get products by category and brand", f"Product.objects.by_category({cid!r}).of_brand({bid!r})",
         lambda: list(Product.objects.by_category(cid).of_brand(bid)),
         Product.objects.by_category(cid).of_brand(bid).explain())

    print("DynamoDB Local keeps running with this data. Next steps:")
    print("  make shell   # a dynorm shell on this data (try: Product.objects.by_brand('3').in_category('1'))")
    print("  make stop    # stop DynamoDB Local")
    return 0


if __name__ == "__main__":
    sys.exit(main())
