"""Migration throughput and memory: ``dynorm migrate`` vs hand-written rewrites, same server, one run.

For N items of an entity at key version v1 (with a GSI), measures items/s of:

* ``dynorm migrate --segments S`` (move mode; a subprocess, as users run it), S in 1, 2, 4;
* a hand-written parallel Scan + TransactWriteItems move (Put new + conditional Delete old,
  50 items per transaction, 4 threads), without checkpoints or a ledger;
* a hand-written Scan + BatchWriteItem copy (no conditions, no delete).

The items are loaded as a dynorm table holds them: each with the revision token every dynorm write
sets, so move mode's "unchanged" condition is the token (and the version), as the hand-written
move's is the version. The ratio to the hand-written move is the median of ``--pairs`` interleaved
runs. Items no dynorm write has touched (no token; move mode then compares every attribute, which
also catches raw writers that leave the version alone) are measured in the same pairs.

Peak RSS of the migrate process is its ``VmHWM`` (sampled from ``/proc``) for each run, and for a second,
larger table (``--big``) to show that memory does not grow with the table.

Also: ``--consistent-read`` against the default eventually consistent scans (items/s and the RCU
the scans reported), and with ``--baseline DIR`` (a checkout of an earlier dynorm, e.g. made with
``git archive``) the same ``migrate --segments 4`` run by that code, for a before/after figure.
On a shared machine figures move by 2x from run to run: compare ratios within one run.

    python bench/bench_migrate.py [--items 20000] [--big 100000] [--pairs 3] [--baseline DIR]

Results: ``bench/results/bench_migrate.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import connect  # noqa: E402
from dynorm import backend  # noqa: E402
from dynorm.migrations.api import make_migrations  # noqa: E402
from dynorm.migrations.executor import Executor, MigrateOptions  # noqa: E402
from dynorm.migrations.loader import load_migrations  # noqa: E402
from dynorm.writes import new_token  # noqa: E402

MODELS = '''
from dynorm import Entity, Index, Table, fields

class BenchShop(Table):
    class Meta:
        table_name = "benchmig"
        gsi_count = 1

class Item(Entity):
    item_id = fields.String()
    group = fields.String()
    payload = fields.String()
    n = fields.Integer(default=0)
    version = fields.Version()

    class Meta:
        table = BenchShop
        entity_type = "ITEM"
        key_version = "{version}"
        pk = "{{version}}#I#{{item_id}}"
        sk = "METADATA"
        indexes = {{"by_group": Index("GSI1", pk="{{version}}#G#{{group}}", sk="I#{{item_id}}")}}
'''


def setup_project(root: Path) -> Any:
    pkg = root / "benchproj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    sys.path.insert(0, str(root))
    (pkg / "models.py").write_text(MODELS.format(version="v1"))
    models = importlib.import_module("benchproj.models")
    make_migrations("benchproj.migrations", [models.BenchShop])
    (pkg / "models.py").write_text(MODELS.format(version="v2"))
    models = importlib.reload(models)
    make_migrations("benchproj.migrations", [models.BenchShop])
    return models


def reset_and_load(models: Any, n: int, tokens: bool = True) -> None:
    """Drop and recreate the table, then write ``n`` v1 items with BatchWriteItem.

    With ``tokens`` each item carries the revision token (``_dynorm_rev``) that every dynorm write
    sets, as on a table dynorm has been writing; without, the items look written by another writer
    (or before dynorm), and move mode compares every attribute instead of the token.
    """
    table = models.BenchShop
    if table.exists():
        table.delete_table()
    Executor(load_migrations("benchproj.migrations")).migrate(MigrateOptions(target="0001_initial"))
    name = table.table_name()
    rev = table._meta.revision_attribute
    payload = "x" * 200
    items = []
    for i in range(n):
        iid = f"{i:07d}"
        items.append({"PutRequest": {"Item": {
            "PK": {"S": f"v1#I#{iid}"}, "SK": {"S": "METADATA"}, "GSI1PK": {"S": f"v1#G#{i % 50}"},
            "GSI1SK": {"S": f"I#{iid}"}, "entityType": {"S": "ITEM"}, "item_id": {"S": iid},
            "group": {"S": str(i % 50)}, "payload": {"S": payload}, "n": {"N": str(i)}, "version": {"N": "1"}}}})
        if tokens:
            items[-1]["PutRequest"]["Item"][rev] = {"S": new_token()}

    def write(chunk: list[dict[str, Any]]) -> None:
        pending = chunk
        while pending:
            resp = backend.call("BatchWriteItem", {"RequestItems": {name: pending}})
            pending = resp.get("UnprocessedItems", {}).get(name, [])

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, [items[i:i + 25] for i in range(0, n, 25)]))


def count_at(models: Any, prefix: str) -> int:
    name = models.BenchShop.table_name()
    total = 0
    params: dict[str, Any] = {"TableName": name, "Select": "COUNT", "FilterExpression": "begins_with(PK, :p)",
                              "ExpressionAttributeValues": {":p": {"S": prefix}}}
    while True:
        resp = backend.call("Scan", params)
        total += resp["Count"]
        if "LastEvaluatedKey" not in resp:
            return total
        params["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def run_migrate(root: Path, segments: int, endpoint: str, prefix: str, extra: tuple[str, ...] = (),
                code: Path = REPO, summary: dict[str, Any] | None = None) -> tuple[float, int]:
    cfg = root / "dynorm.yaml"
    cfg.write_text(f"models: [benchproj.models]\nmigrations: benchproj.migrations\ntable_prefix: '{prefix}'\n"
                   f"connection: {{region: us-east-1, endpoint: '{endpoint}'}}\n")
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{code}"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "dynorm", "--config", str(cfg), "migrate", "--segments",
                             str(segments), "--json", *extra], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    # Peak RSS of the migrate process itself: VmHWM belongs to the address space created by
    # exec (ru_maxrss from wait4 would include the forked copy of this benchmark process).
    peak = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as status_file:
                for line in status_file:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.05)
    elapsed = time.perf_counter() - start
    out = proc.stdout.read().decode() if proc.stdout else ""
    if proc.returncode != 0:
        raise SystemExit(f"migrate failed: {out}")
    if summary is not None:
        summary.update(json.loads(out))
    return elapsed, peak  # KiB


def _scan_segments(name: str, segments: int, handle: Any) -> None:
    def segment(s: int) -> None:
        params: dict[str, Any] = {"TableName": name, "Segment": s, "TotalSegments": segments,
                                  "FilterExpression": "begins_with(PK, :p)",
                                  "ExpressionAttributeValues": {":p": {"S": "v1#"}}, "Limit": 200}
        while True:
            resp = backend.client().scan(**params)
            handle(resp["Items"])
            if "LastEvaluatedKey" not in resp:
                return
            params["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    with ThreadPoolExecutor(segments) as pool:
        list(pool.map(segment, range(segments)))


def _rekeyed(item: dict[str, Any]) -> dict[str, Any]:
    new = dict(item)
    iid = item["item_id"]["S"]
    new["PK"] = {"S": f"v2#I#{iid}"}
    new["GSI1PK"] = {"S": f"v2#G#{item['group']['S']}"}
    return new


def hand_transact_move(models: Any, segments: int = 4) -> float:
    name = models.BenchShop.table_name()
    client = backend.client()

    def handle(items: list[dict[str, Any]]) -> None:
        for i in range(0, len(items), 50):
            actions = []
            for item in items[i:i + 50]:
                actions.append({"Put": {"TableName": name, "Item": _rekeyed(item),
                                        "ConditionExpression": "attribute_not_exists(PK)"}})
                actions.append({"Delete": {"TableName": name, "Key": {"PK": item["PK"], "SK": item["SK"]},
                                           "ConditionExpression": "#v = :v",
                                           "ExpressionAttributeNames": {"#v": "version"},
                                           "ExpressionAttributeValues": {":v": item["version"]}}})
            client.transact_write_items(TransactItems=actions, ClientRequestToken=str(uuid.uuid4()))

    start = time.perf_counter()
    _scan_segments(name, segments, handle)
    return time.perf_counter() - start


def hand_batch_copy(models: Any, segments: int = 4) -> float:
    name = models.BenchShop.table_name()
    client = backend.client()

    def handle(items: list[dict[str, Any]]) -> None:
        for i in range(0, len(items), 25):
            pending = [{"PutRequest": {"Item": _rekeyed(it)}} for it in items[i:i + 25]]
            while pending:
                resp = client.batch_write_item(RequestItems={name: pending})
                pending = resp.get("UnprocessedItems", {}).get(name, [])

    start = time.perf_counter()
    _scan_segments(name, segments, handle)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=20000)
    ap.add_argument("--big", type=int, default=100000, help="items for the memory run (0 to skip)")
    ap.add_argument("--pairs", type=int, default=3, help="interleaved migrate / hand-move pairs for the ratio")
    ap.add_argument("--baseline", type=Path, default=None, help="an earlier dynorm checkout to compare with")
    args = ap.parse_args()
    prefix = "benchmig-"
    endpoint, server = connect(prefix, heap_mb=1536)
    root = Path(tempfile.mkdtemp())
    models = setup_project(root)
    n = args.items
    results: dict[str, Any] = {"items": n, "runs": {}}
    print(f"migration of {n} items (v1 -> v2, primary key and GSI1 rewritten):")
    for segments in (1, 2, 4):
        reset_and_load(models, n)
        elapsed, rss = run_migrate(root, segments, endpoint, prefix)
        assert count_at(models, "v2#") == n and count_at(models, "v1#") == 0
        results["runs"][f"migrate_segments_{segments}"] = {"items_per_s": n / elapsed, "seconds": elapsed,
                                                           "peak_rss_mib": rss / 1024}
        print(f"  dynorm migrate --segments {segments}: {n / elapsed:7.0f} items/s  ({elapsed:.1f} s, "
              f"peak RSS {rss / 1024:.0f} MiB)")
    for label, extra in (("eventually consistent (default)", ()), ("--consistent-read", ("--consistent-read",))):
        reset_and_load(models, n)
        summary: dict[str, Any] = {}
        elapsed, _ = run_migrate(root, 4, endpoint, prefix, extra, summary=summary)
        assert count_at(models, "v2#") == n
        key = "migrate_4_consistent" if extra else "migrate_4_eventual"
        results["runs"][key] = {"items_per_s": n / elapsed, "seconds": elapsed, "rcu": summary.get("read_units")}
        print(f"  migrate --segments 4, {label}: {n / elapsed:7.0f} items/s, scans reported "
              f"{summary.get('read_units')} RCU")
    if args.baseline:
        reset_and_load(models, n)
        elapsed, _ = run_migrate(root, 4, endpoint, prefix, code=args.baseline.resolve())
        assert count_at(models, "v2#") == n and count_at(models, "v1#") == 0
        results["runs"]["baseline_migrate_segments_4"] = {"items_per_s": n / elapsed, "seconds": elapsed}
        print(f"  baseline ({args.baseline}) migrate --segments 4: {n / elapsed:7.0f} items/s ({elapsed:.1f} s)")
    # The gate: migrate --segments 4 against the hand-written transactional move, in interleaved
    # pairs (the machine's load moves between runs; a pair shares it), median ratio.
    pairs: dict[str, list[float]] = {"migrate": [], "hand": [], "no_tokens": []}
    for _ in range(args.pairs):
        reset_and_load(models, n)
        elapsed, _ = run_migrate(root, 4, endpoint, prefix)
        assert count_at(models, "v2#") == n and count_at(models, "v1#") == 0
        pairs["migrate"].append(n / elapsed)
        reset_and_load(models, n)
        elapsed = hand_transact_move(models)
        assert count_at(models, "v2#") == n and count_at(models, "v1#") == 0
        pairs["hand"].append(n / elapsed)
        reset_and_load(models, n, tokens=False)
        elapsed, _ = run_migrate(root, 4, endpoint, prefix)
        assert count_at(models, "v2#") == n and count_at(models, "v1#") == 0
        pairs["no_tokens"].append(n / elapsed)
    hand = statistics.median(pairs["hand"])
    results["runs"]["hand_scan_transact_move_4"] = {"items_per_s": hand, "all": pairs["hand"]}
    results["runs"]["migrate_4_paired"] = {"items_per_s": statistics.median(pairs["migrate"]),
                                           "all": pairs["migrate"]}
    results["runs"]["migrate_4_no_tokens"] = {"items_per_s": statistics.median(pairs["no_tokens"]),
                                              "all": pairs["no_tokens"]}
    print(f"  hand-written scan + TransactWriteItems move (4 threads): {hand:7.0f} items/s "
          f"(median of {args.pairs})")
    print(f"  migrate --segments 4, paired with it:                  "
          f"{results['runs']['migrate_4_paired']['items_per_s']:7.0f} items/s")
    print(f"  migrate --segments 4, items no dynorm write touched (every attribute compared): "
          f"{results['runs']['migrate_4_no_tokens']['items_per_s']:7.0f} items/s")
    reset_and_load(models, n)
    elapsed = hand_batch_copy(models)
    assert count_at(models, "v2#") == n
    results["runs"]["hand_scan_batch_copy_4"] = {"items_per_s": n / elapsed, "seconds": elapsed}
    print(f"  hand-written scan + BatchWriteItem copy (4 threads):   {n / elapsed:7.0f} items/s ({elapsed:.1f} s)")
    ratios = [m / h for m, h in zip(pairs["migrate"], pairs["hand"])]
    bare = [m / h for m, h in zip(pairs["no_tokens"], pairs["hand"])]
    results["ratio_migrate4_vs_hand_move"] = statistics.median(ratios)
    results["ratio_migrate4_vs_hand_move_all"] = ratios
    results["ratio_no_tokens_vs_hand_move"] = statistics.median(bare)
    d4 = results["runs"]["migrate_4_paired"]["items_per_s"]
    results["ratio_migrate4_vs_hand_copy"] = d4 / results["runs"]["hand_scan_batch_copy_4"]["items_per_s"]
    print(f"  ratio migrate(4) / hand move: median {results['ratio_migrate4_vs_hand_move']:.2f} "
          f"(pairs: {', '.join(f'{r:.2f}' for r in ratios)}); items without a token: "
          f"{results['ratio_no_tokens_vs_hand_move']:.2f}; migrate(4) / hand copy: "
          f"{results['ratio_migrate4_vs_hand_copy']:.2f}")
    if args.big:
        reset_and_load(models, args.big)
        elapsed, rss = run_migrate(root, 4, endpoint, prefix)
        assert count_at(models, "v2#") == args.big
        results["big"] = {"items": args.big, "items_per_s": args.big / elapsed, "peak_rss_mib": rss / 1024}
        print(f"  {args.big} items, --segments 4: {args.big / elapsed:7.0f} items/s, peak RSS {rss / 1024:.0f} MiB")
    out = Path(__file__).parent / "results" / "bench_migrate.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"written {out}")
    models.BenchShop.delete_table()
    if server:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
