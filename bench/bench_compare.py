"""dynorm vs raw boto3, PynamoDB and pydynox: one table of client CPU, cold start and memory.

Every library does the same logical request on the same item of the same table of one
DynamoDB Local (``bench/compare/shape.py``); rounds are interleaved and each figure is a ratio to
raw boto3 within its round: the median over rounds, with the spread (min–max). ``make bench``
runs it (after ``pip install -e '.[bench]'``). A library that is not installed is left out with
a line saying how to install it.

    python bench/bench_compare.py [--rounds 7] [--scale 1.0] [--cold-runs 20] [--memory-repeats 3]

Rows: get, put, update one attribute, query-100, query-1,000, batch write 1,000, batch get 100
(client CPU µs per operation), cold start (import + model + one GetItem, whole process, wall and
CPU), memory per decoded item (bytes held by a query-1,000 result). Columns: boto3, PynamoDB,
pydynox, dynorm (one per wire mode the installed dynorm has). Writes the table and the requests
each library sent to ``bench/results/compare.md`` and ``compare.json``.

Uses ``DYNORM_TEST_ENDPOINT`` when set, else starts DynamoDB Local itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dynorm  # noqa: E402
from bench.common import connect  # noqa: E402
from bench.compare import coldstart, lib_boto3, lib_dynorm, lib_pydynox, lib_pynamodb, memory, report, rounds, shape  # noqa: E402
from bench.compare.wiretap import Wiretap, summary  # noqa: E402

#: calls per library and round at --scale 1 (about 0.3-1 s of client CPU each)
COUNTS = {"get": 200, "put": 200, "update": 200, "query100": 30, "query1000": 4, "batch_write": 2, "batch_get": 20}
SKIPPED = "skipped: pip install dynorm[bench]"
BASELINE = "boto3"


def libraries(endpoint: str, table: str, tag: str = "") -> tuple[list[Any], list[str]]:
    """The libraries to compare (boto3 first) and a line for each one left out."""
    libs: list[Any] = []
    skipped = []
    try:
        libs.append(lib_boto3.Boto3(endpoint, table, tag))
    except ImportError:
        skipped.append(f"boto3: {SKIPPED}")
    libs.append(lib_pynamodb.PynamoDB(endpoint, table, tag))
    if lib_pydynox.available():
        libs.append(lib_pydynox.Pydynox(endpoint, table, tag))
    else:
        skipped.append(f"pydynox: {SKIPPED}")
    libs += [lib_dynorm.Dynorm(wire, tag) for wire in lib_dynorm.wire_modes()]
    return libs, skipped


def requests_sent(endpoint: str, table: str) -> dict[str, dict[str, str]]:
    """``{operation: {library: summary}}`` of what each library sent for one call of each
    operation, read on the wire (:mod:`bench.compare.wiretap`); each call's second run counts."""
    out: dict[str, dict[str, str]] = {}
    with Wiretap(endpoint) as tap:
        dynorm.configure(endpoint=tap.endpoint)
        try:
            libs, _ = libraries(tap.endpoint, table, tag="-tap")
            for lib in libs:
                lib.activate()
                for op, fn in lib.ops().items():
                    fn(0)
                    tap.take()
                    fn(1)
                    out.setdefault(op, {})[lib.name] = summary(tap.take())
        finally:
            dynorm.configure(endpoint=endpoint)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds of every CPU figure")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies the calls per round (0.01: a smoke run)")
    ap.add_argument("--cold-runs", type=int, default=20,
                    help="cold starts of each library (each one's ratio moves by about ±0.2 on a 2-core machine)")
    ap.add_argument("--memory-repeats", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2, help="untimed calls before each library's turn")
    ap.add_argument("--results", type=Path, default=report.RESULTS, help="folder for compare.md and compare.json")
    args = ap.parse_args()

    endpoint, server = connect(shape.PREFIX)
    table = shape.PREFIX + shape.TABLE
    try:
        lib_dynorm.seed()
        libs, skipped = libraries(endpoint, table)
        names = [lib.name for lib in libs]
        print(f"comparing {', '.join(names)} on {endpoint}: {args.rounds} interleaved rounds")
        results: dict[str, Any] = {}
        raw: dict[str, Any] = {}
        for op, count in COUNTS.items():
            n = max(1, round(count * args.scale))
            figures = rounds.cpu_rounds(libs, op, n, args.rounds, args.warmup)
            raw[op] = {"calls_per_round": n, "us_per_call": figures}
            results[op] = rounds.ratios(figures, BASELINE)
            print(f"  {op}: {n} calls per library and round")
        mem = {}
        for lib in libs:
            lib.activate()
            mem[lib.name] = memory.per_item(lambda lib=lib: lib.query("q1000"), args.memory_repeats)
        raw["memory"] = {"bytes_per_item": mem}
        results["memory"] = rounds.ratios(mem, BASELINE)
        if args.cold_runs:
            specs = {lib.name: cold_spec(lib) for lib in libs}
            cold = coldstart.measure(specs, endpoint, table, args.cold_runs)
            raw["cold_start"] = cold
            results["cold_start"] = rounds.ratios({k: v["wall"] for k, v in cold.items()}, BASELINE)
            results["cold_start_cpu"] = rounds.ratios({k: v["cpu"] for k, v in cold.items()}, BASELINE)
        sent = requests_sent(endpoint, table)
    finally:
        lib_dynorm.drop()
        if server:
            server.stop()

    info = report.machine()
    text = report.table(results, names, BASELINE)
    notes = [f"{info['date']}; {info['cpu']}, {info['cores']} cores, load average "
             f"{info['load_average'][0]:.2f}; Python {info['python']}; "
             + ", ".join(f"{k} {v}" for k, v in info["versions"].items() if v),
             f"Cells: ratio to raw boto3 in the same round, median ({args.rounds} rounds; cold start "
             f"{args.cold_runs} runs; memory {args.memory_repeats} repeats) and (min–max); below 1.00× is "
             "less than boto3.", *skipped]
    print()
    print(text)
    for line in notes:
        print(line)
    requests_md = ["| operation | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    requests_md += [f"| {op} | " + " | ".join(sent[op].get(n, "—") for n in names) + " |" for op in sent]
    markdown = "\n".join([text, "", *notes, "", "Requests sent (one call, read on the wire):", "", *requests_md])
    paths = report.write(args.results, "compare", markdown,
                         {"machine": info, "args": {**vars(args), "results": str(args.results)},
                          "results": results, "raw": raw, "requests": sent, "skipped": skipped})
    print("written " + ", ".join(str(p) for p in paths))
    return 0


def cold_spec(lib: Any) -> str:
    """``cold.py``'s LIBRARY argument for ``lib``."""
    if isinstance(lib, lib_dynorm.Dynorm):
        return f"dynorm:{lib.wire}" if lib.wire else "dynorm"
    return lib.name.lower()


if __name__ == "__main__":
    sys.exit(main())
