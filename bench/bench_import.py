"""Import and start-up time (AWS Lambda cold starts): ``import dynorm`` vs ``import pynamodb.models``,
and ``dynorm --help`` wall time, median of N runs each (fresh interpreters).

    python bench/bench_import.py [--runs 10]

Results: ``bench/results/bench_import.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def wall(cmd: list[str], runs: int) -> float:
    """Median wall seconds of ``cmd`` over ``runs`` runs (after one warm-up for the OS cache)."""
    subprocess.run(cmd, check=True, capture_output=True)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    py = sys.executable
    # Deployed code runs from compiled bytecode (pip compiles site-packages such as PynamoDB);
    # compile dynorm too, or its import would include compiling every module from source.
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "dynorm"), quiet=1)
    baseline = wall([py, "-c", "pass"], args.runs)
    results = {
        "python -c pass": baseline,
        "import pynamodb.models": wall([py, "-c", "import pynamodb.models"], args.runs),
        "import dynorm": wall([py, "-c", "import dynorm"], args.runs),
        "dynorm --help": wall([py, "-m", "dynorm", "--help"], args.runs),
    }
    results["ratio import dynorm / import pynamodb (minus interpreter start)"] = (
        (results["import dynorm"] - baseline) / (results["import pynamodb.models"] - baseline))
    print(f"median wall time of {args.runs} runs:")
    for k, v in results.items():
        print(f"  {k:<66} {v:8.3f}" + ("" if k.startswith("ratio") else " s"))
    out = Path(__file__).parent / "results" / "bench_import.json"
    out.write_text(json.dumps({"runs": args.runs, **results}, indent=2))
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
