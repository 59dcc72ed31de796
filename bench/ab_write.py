"""A/B of dynorm's client CPU on writes against raw boto3 (issue 24): the ratio, nothing else.

Runs the comparison benchmark's operations (``bench/compare/lib_dynorm.py``, ``lib_boto3.py``)
for dynorm (wire ``direct``) and raw boto3 only, interleaved, and prints per operation the median
over rounds of dynorm's ``time.process_time`` per call divided by boto3's in the same round.

    python bench/ab_write.py [--rounds 7] [--ops batch_write,put,update,get] [--scale 1.0] [--no-collect]

``--no-collect``: no full garbage collection before each library's turn (``make bench`` does one),
so each pays the collections its garbage causes whenever they fall.

Uses ``DYNORM_TEST_ENDPOINT`` when set, else starts DynamoDB Local itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.compare import lib_boto3, lib_dynorm, rounds, shape  # noqa: E402

#: calls per library and round at --scale 1 (those of bench_compare.py)
COUNTS = {"batch_write": 2, "put": 200, "update": 200, "get": 200}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--ops", default="batch_write,put,update,get")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--no-collect", action="store_true", help="no gc.collect() before each library's turn")
    args = ap.parse_args()
    with lib_dynorm.seeded() as endpoint:
        libs = [lib_boto3.Boto3(endpoint, shape.PREFIX + shape.TABLE), lib_dynorm.Dynorm("direct")]
        for op in args.ops.split(","):
            n = max(1, round(COUNTS[op] * args.scale))
            figures = rounds.cpu_rounds(libs, op, n, args.rounds, collect=not args.no_collect)
            r = rounds.ratios(figures, "boto3")["dynorm (direct)"]
            base = rounds.ratios(figures, "boto3")["boto3"]["value"]
            print(f"{op:12s} boto3 {base:9.0f} µs  dynorm/boto3 median {r['median']:.3f} "
                  f"(min {r['min']:.3f}, max {r['max']:.3f}; {r['value']:.0f} µs)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
