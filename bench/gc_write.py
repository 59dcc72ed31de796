"""The garbage a ``bulk_create`` of 1,000 leaves the collector, against raw boto3 (issue 24).

For dynorm (wire ``direct``) and raw boto3's ``batch_write_item`` (``bench/compare``'s two batch
writes), prints per call:

* the collections the call itself triggers, per generation, and the milliseconds they take
  (``gc.callbacks``), with the collector as an application has it (no collection beforehand);
* the objects the collector tracks that are alive while the last BatchWriteItem is sent, per item
  written (``len(gc.get_objects())`` then, minus before the call): what each collection walks.

    python bench/gc_write.py [--calls 12]

Uses ``DYNORM_TEST_ENDPOINT`` when set, else starts DynamoDB Local itself.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dynorm  # noqa: E402
from bench.compare import lib_boto3, lib_dynorm, shape  # noqa: E402


class _Collections:
    """Counts and times the collections of each generation while it is on (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._start = 0.0
        self.on = False

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if not self.on:
            return
        if phase == "start":
            self._start = time.process_time()
        else:
            self.count[info["generation"]] += 1
            self.seconds[info["generation"]] += time.process_time() - self._start


def _probe(name: str, fn: Callable[[int], Any], calls: int, client: Any) -> None:
    """Run ``fn`` ``calls`` times; print collections per call and tracked objects alive per item."""
    alive: list[int] = []

    def at_send(**kwargs: Any) -> None:
        alive.append(len(gc.get_objects()))

    for i in range(2):  # warm: first-use caches are not garbage
        fn(i)
    counter = _Collections()
    gc.callbacks.append(counter)
    try:
        counter.on = True
        for i in range(calls):
            fn(100 + i)
        counter.on = False
        gc.collect()
        base = len(gc.get_objects())
        client.meta.events.register("before-send.dynamodb.BatchWriteItem", at_send)
        try:
            fn(1000)
        finally:
            client.meta.events.unregister("before-send.dynamodb.BatchWriteItem", at_send)
    finally:
        gc.callbacks.remove(counter)
    n = [c / calls for c in counter.count]
    ms = [s / calls * 1e3 for s in counter.seconds]
    print(f"{name:8s} collections per call: gen0 {n[0]:.1f} ({ms[0]:.1f} ms), gen1 {n[1]:.2f} ({ms[1]:.1f} ms), "
          f"gen2 {n[2]:.2f} ({ms[2]:.1f} ms): {sum(ms):.1f} ms per call; tracked objects alive at the last "
          f"BatchWriteItem: {(alive[-1] - base) / shape.BATCH_WRITE:.1f} per item "
          f"(first: {(alive[0] - base) / shape.BATCH_WRITE:.1f})", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=12)
    args = ap.parse_args()
    with lib_dynorm.seeded() as endpoint:
        raw = lib_boto3.Boto3(endpoint, shape.PREFIX + shape.TABLE)
        mine = lib_dynorm.Dynorm("direct")
        mine.activate()
        _probe("dynorm", mine.ops()["batch_write"], args.calls, dynorm.backend.client())
        raw.activate()
        _probe("boto3", raw.ops()["batch_write"], args.calls, raw.client)
    return 0


if __name__ == "__main__":
    sys.exit(main())
