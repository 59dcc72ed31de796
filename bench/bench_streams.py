"""Stream decoding throughput, no server: a batch of MODIFY records into ``dynorm.streams`` changes.

Records shaped as AWS Lambda passes them (NEW_AND_OLD_IMAGES), of the catalog's Product; half of
them a key-version move (a REMOVE at v1 and the INSERT at v2, as ``dynorm migrate`` writes them), to
show the cost of pairing. Median of rounds; records/s.

    python bench/bench_streams.py [--records 10000] [--rounds 5]

Results: ``bench/results/bench_streams.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from demo_project.catalog.models import Product  # noqa: E402
from dynorm.streams import changes  # noqa: E402


def image(i: int, version: str, rev: str, name: str) -> dict[str, Any]:
    return {"PK": {"S": f"{version}#P#{i:08d}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "PRODUCT"},
            "product_id": {"S": f"{i:08d}"}, "brand_id": {"S": "3"}, "category_id": {"S": "1"},
            "name": {"S": name}, "stock_level": {"N": str(i % 50)}, "version": {"N": "2"},
            "_dynorm_rev": {"S": rev}, "created_at": {"S": "2026-01-01T00:00:00.000000+0000"}}


def record(event: str, seq: int, new: dict[str, Any] | None, old: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"Keys": {k: (new or old or {})[k] for k in ("PK", "SK")}, "SequenceNumber": str(seq),
                            "StreamViewType": "NEW_AND_OLD_IMAGES"}
    if new is not None:
        body["NewImage"] = new
    if old is not None:
        body["OldImage"] = old
    return {"eventName": event, "eventSource": "aws:dynamodb", "dynamodb": body}


def batch(n: int, version: str) -> list[dict[str, Any]]:
    out = []
    for i in range(n // 2):
        out.append(record("MODIFY", 2 * i, image(i, version, f"r{i}b", "new"), image(i, version, f"r{i}a", "old")))
        out.append(record("REMOVE", 2 * i + 1, None, image(100000 + i, "v1", f"m{i}", "x")))
        out.append(record("INSERT", 2 * i + 1, image(100000 + i, version, f"m{i}", "x"), None))
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    records = batch(args.records, Product._meta.key_version)
    times = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        found = list(changes(records, table=Product._meta.table))
        times.append(time.perf_counter() - start)
    kinds = sorted({c.kind for c in found})
    med = statistics.median(times)
    result = {"records": len(records), "changes": len(found), "kinds": kinds, "seconds": med,
              "records_per_s": len(records) / med, "us_per_record": med / len(records) * 1e6}
    print(f"dynorm.streams.changes: {len(records)} records -> {len(found)} changes {kinds} in {med * 1000:.0f} ms "
          f"({result['records_per_s']:.0f} records/s, {result['us_per_record']:.0f} us/record)")
    out = Path(__file__).parent / "results" / "bench_streams.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
