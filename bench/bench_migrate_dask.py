"""Migration throughput on Dask against ``--worker i/N`` processes: the same move, the same server, one run.

For N items of an entity at key version v1 (with a GSI), measures items/s of:

* ``dynorm migrate --executor dask --dask-workers W`` (a LocalCluster of W worker processes, one
  thread each, 4 Scan segments per worker), W in 1, 2, 4. Two figures are given: the whole command,
  cluster start included, and the rekey operation alone (its ``seconds`` in the ``--json`` summary);
* ``dynorm migrate --worker i/N --segments 4N`` with N processes started together (the threads
  engine), N in 1, 2, 4, timed until the last one exits. Each process waits for the others'
  segments to finish, then the last run records the migration as applied. A final plain
  ``migrate`` run is included in the time.

DynamoDB Local is one Java process on the same 2 cores as the clients, so it is the bottleneck:
more client processes cannot make it faster, and on a shared machine figures move by 2x from run
to run. Compare the ratios within one run; ``docs/migrations.md`` gives figures for real DynamoDB.

    python bench/bench_migrate_dask.py [--items 10000]

Results: ``bench/results/bench_migrate_dask.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_migrate import count_at, reset_and_load, setup_project  # noqa: E402
from bench.common import connect  # noqa: E402


def _cmd(root: Path, endpoint: str, prefix: str, *args: str) -> tuple[list[str], dict[str, str]]:
    cfg = root / "dynorm.yaml"
    cfg.write_text(f"models: [benchproj.models]\nmigrations: benchproj.migrations\ntable_prefix: '{prefix}'\n"
                   f"connection: {{region: us-east-1, endpoint: '{endpoint}'}}\n")
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{REPO}"}
    return [sys.executable, "-m", "dynorm", "--config", str(cfg), "migrate", "--json", *args], env


def run_dask(root: Path, endpoint: str, prefix: str, workers: int) -> tuple[float, float]:
    """(seconds of the whole command, seconds of the rekey operation)."""
    cmd, env = _cmd(root, endpoint, prefix, "--executor", "dask", "--dask-workers", str(workers))
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=3600)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"migrate failed: {done.stdout}\n{done.stderr[-2000:]}")
    summary = json.loads(done.stdout)
    rekey = next(op for op in summary["operations"] if op["operation"].startswith("rekey"))
    return elapsed, float(rekey["seconds"])


def run_split(root: Path, endpoint: str, prefix: str, n: int) -> float:
    """Seconds for ``--worker i/n`` processes started together, then a plain run recording it applied."""
    start = time.perf_counter()
    procs = []
    for i in range(n):
        cmd, env = _cmd(root, endpoint, prefix, "--segments", str(4 * n), "--worker", f"{i}/{n}")
        procs.append(subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    for p in procs:
        _, err = p.communicate(timeout=3600)
        if p.returncode != 0:
            raise SystemExit(f"migrate --worker failed: {err.decode()[-2000:]}")
    cmd, env = _cmd(root, endpoint, prefix, "--segments", str(4 * n))
    subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True, timeout=3600)
    return time.perf_counter() - start


def run_paced(models: Any, budget: float, workers: int = 3) -> dict[str, float]:
    """A DaskExecutor run with ``--max-wcu budget`` on ``workers`` processes: the WCU/s it reached."""
    from dynorm.migrations.dask_executor import DaskExecutor
    from dynorm.migrations.executor import MigrateOptions
    from dynorm.migrations.loader import load_migrations

    report = DaskExecutor(load_migrations("benchproj.migrations"), n_workers=workers).migrate(
        MigrateOptions(segments=4 * workers, max_wcu=budget))
    rekey = next(op for op in report.operations if op.description.startswith("rekey"))
    return {"budget_wcu": budget, "wcu": report.write_units, "seconds": rekey.seconds,
            "wcu_per_s": report.write_units / rekey.seconds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=10000)
    ap.add_argument("--budget", type=float, default=3000.0, help="--max-wcu of the paced run (3 Dask workers)")
    args = ap.parse_args()
    prefix = "benchdask-"
    endpoint, server = connect(prefix, heap_mb=1536)
    root = Path(tempfile.mkdtemp())
    models = setup_project(root)
    n = args.items
    results: dict[str, Any] = {"items": n, "cpus": os.cpu_count(), "runs": {}}
    print(f"migration of {n} items (v1 -> v2, primary key and GSI1 rewritten), {os.cpu_count()} CPUs:")
    for workers in (1, 2, 4):
        reset_and_load(models, n)
        whole, rekey = run_dask(root, endpoint, prefix, workers)
        assert count_at(models, "v2#") == n and count_at(models, "v1#") == 0
        results["runs"][f"dask_{workers}"] = {"items_per_s": n / whole, "rekey_items_per_s": n / rekey,
                                              "seconds": whole, "rekey_seconds": rekey}
        print(f"  --executor dask --dask-workers {workers}: {n / whole:6.0f} items/s whole command ({whole:.1f} s), "
              f"{n / rekey:6.0f} items/s in the rekey ({rekey:.1f} s)")
    for procs in (1, 2, 4):
        reset_and_load(models, n)
        elapsed = run_split(root, endpoint, prefix, procs)
        assert count_at(models, "v2#") == n and count_at(models, "v1#") == 0
        results["runs"][f"worker_split_{procs}"] = {"items_per_s": n / elapsed, "seconds": elapsed}
        print(f"  --worker i/{procs} x {procs} processes:     {n / elapsed:6.0f} items/s ({elapsed:.1f} s)")
    reset_and_load(models, n)
    paced = run_paced(models, args.budget)
    assert count_at(models, "v2#") == n
    results["paced_dask_3"] = paced
    print(f"  --executor dask, 3 workers, --max-wcu {args.budget:.0f}: {paced['wcu_per_s']:.0f} WCU/s estimated "
          f"({paced['wcu']:.0f} WCU in {paced['seconds']:.1f} s; budget + 1 s of burst at most)")
    base = results["runs"]["worker_split_1"]["items_per_s"]
    for run in results["runs"].values():
        run["ratio_vs_one_process"] = run["items_per_s"] / base
    print("  ratios vs one threads process: " + ", ".join(
        f"{k} {v['ratio_vs_one_process']:.2f}" for k, v in results["runs"].items()))
    out = Path(__file__).parent / "results" / "bench_migrate_dask.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"written {out}")
    models.BenchShop.delete_table()
    if server:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
