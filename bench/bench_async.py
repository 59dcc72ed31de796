"""Async dynorm vs sync: 2,000 GetItem, wall time and client CPU per op (issue 14).

Four ways of reading the same item N times from one process:

- ``async-50``: ``await Product.objects.aget(...)`` with 50 in flight on one event loop (aiobotocore);
- ``sync``: ``Product.objects.get(...)`` one after the other;
- ``threads-50``: the sync call from a 50-thread pool;
- ``pynamodb``: ``PModel.get(...)`` one after the other (hand-written PynamoDB).

Client CPU is ``time.process_time`` of this process (DynamoDB Local runs in another one), per op,
median of ROUNDS interleaved rounds. DynamoDB Local on a small shared machine bounds the wall-time
gain of concurrency: the server, not the client, is then the bottleneck. Target: async client
CPU per op <= 1.2x sync. Results go to ``bench/results/bench_async.json``.

    python bench/bench_async.py [--ops 2000] [--in-flight 50] [--rounds 3]

Uses ``DYNORM_TEST_ENDPOINT`` when set, else starts DynamoDB Local itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pynamodb.attributes import UnicodeAttribute  # noqa: E402
from pynamodb.models import Model  # noqa: E402

import dynorm  # noqa: E402
from bench.common import connect, fresh_table, pynamodb_meta  # noqa: E402


def measure(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ops", type=int, default=2000)
    ap.add_argument("--in-flight", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    n, width = args.ops, args.in_flight

    endpoint, server = connect("bench-async-")
    from demo_project.catalog.models import Catalog, Product

    fresh_table(Catalog)
    target = Product.objects.create(brand_id="x", category_id="1", name="Target", stock_level=5)
    pid = target.product_id
    keys = target.key_attributes()

    class PProduct(Model):
        Meta = pynamodb_meta(Catalog.table_name(), endpoint)

        pk = UnicodeAttribute(hash_key=True, attr_name="PK")
        sk = UnicodeAttribute(range_key=True, attr_name="SK")
        name = UnicodeAttribute()

    loop = asyncio.new_event_loop()

    async def async_gets() -> None:
        sem = asyncio.Semaphore(width)

        async def one() -> None:
            async with sem:
                await Product.objects.aget(product_id=pid)

        await asyncio.gather(*(one() for _ in range(n)))

    def run_async() -> None:
        loop.run_until_complete(async_gets())

    def run_sync() -> None:
        for _ in range(n):
            Product.objects.get(product_id=pid)

    pool = ThreadPoolExecutor(width)

    def run_threads() -> None:
        list(pool.map(lambda _: Product.objects.get(product_id=pid), range(n)))

    def run_pynamodb() -> None:
        for _ in range(n):
            PProduct.get(keys["PK"], "METADATA")

    impls = {f"async-{width}": run_async, "sync": run_sync, f"threads-{width}": run_threads, "pynamodb": run_pynamodb}
    # warm up: clients built, connections open, code paths hot
    async def warm() -> None:
        await asyncio.gather(*(Product.objects.aget(product_id=pid) for _ in range(width)))

    loop.run_until_complete(warm())
    list(pool.map(lambda _: Product.objects.get(product_id=pid), range(width)))
    for _ in range(20):
        Product.objects.get(product_id=pid)
        PProduct.get(keys["PK"], "METADATA")
    with dynorm.capture() as c:
        run_async()
    assert c.operations == ["GetItem"] * n, "every async request is recorded"

    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in impls}
    for _ in range(args.rounds):
        for name, fn in impls.items():
            samples[name].append(measure(fn))
    results: dict[str, Any] = {"ops": n, "in_flight": width, "rounds": args.rounds,
                               "unit": "wall ms total, client CPU µs per op (median of rounds)"}
    print(f"{n} GetItem per round, median of {args.rounds} rounds; DynamoDB Local at {endpoint}")
    print(f"{'way':<12}{'wall ms':>10}{'ops/s':>9}{'CPU µs/op':>11}{'CPU/sync':>10}{'wall/sync':>11}")
    sync_wall = statistics.median(w for w, _ in samples["sync"])
    sync_cpu = statistics.median(c for _, c in samples["sync"]) / n
    for name, rows in samples.items():
        wall = statistics.median(w for w, _ in rows)
        cpu = statistics.median(c for _, c in rows) / n
        results[name] = {"wall_ms": wall * 1e3, "ops_per_s": n / wall, "cpu_us_per_op": cpu * 1e6,
                         "cpu_vs_sync": cpu / sync_cpu, "wall_vs_sync": wall / sync_wall}
        print(f"{name:<12}{wall * 1e3:>10.0f}{n / wall:>9.0f}{cpu * 1e6:>11.0f}{cpu / sync_cpu:>10.2f}"
              f"{wall / sync_wall:>11.2f}")
    ratio = results[f"async-{width}"]["cpu_vs_sync"]
    print(f"async client CPU per op = {ratio:.2f}x sync (target <= 1.2x): {'met' if ratio <= 1.2 else 'NOT met'}")
    out = Path(__file__).parent / "results" / "bench_async.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"written {out}")
    loop.run_until_complete(dynorm.aclose())
    loop.close()
    pool.shutdown()
    Catalog.delete_table()
    if server:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
