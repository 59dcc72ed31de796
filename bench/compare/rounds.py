"""Interleaved timing rounds and their ratios to the baseline.

In each round every library runs the same operation ``n`` times in turn (the order rotates from
round to round), so a machine that slows down or speeds up during the run weighs on all of them
alike; a ratio is taken within a round, then summarised over the rounds.
"""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any, Callable, Protocol


class Library(Protocol):
    """What the rounds need of one library (``bench/compare/lib_*.py``).

    Each is built on an endpoint (DynamoDB Local's, or the wiretap's in front of it) and a table,
    and writes its own update target; its ``tag`` argument suffixes the ids it writes, so a second
    instance (the wiretap's) never touches the first one's items.
    """

    name: str

    def activate(self) -> None: ...

    def ops(self) -> dict[str, Callable[[int], Any]]: ...


def cpu_rounds(libs: list[Library], op: str, n: int, rounds: int, warmup: int = 2,
               collect: bool = True) -> dict[str, list[float]]:
    """Client CPU microseconds per call of ``op``, one figure per library and round.

    ``time.process_time``: this process's CPU, every thread included (pydynox's Rust runtime
    threads too); DynamoDB Local runs in another process and is not counted. Each library's turn
    starts with :meth:`Library.activate`, ``warmup`` untimed calls and an untimed full garbage
    collection: the collector stays on during the timed calls, so each library pays for the
    collections its own objects cause, never for garbage the previous library left (one full
    collection of this process, which holds every library's models, costs 20-60 ms).
    ``collect=False`` leaves the collector as the previous turn left it.
    """
    fns = {lib.name: lib.ops()[op] for lib in libs}
    out: dict[str, list[float]] = {lib.name: [] for lib in libs}
    calls = 0
    for r in range(rounds):
        for lib in libs[r % len(libs):] + libs[:r % len(libs)]:
            fn = fns[lib.name]
            lib.activate()
            for _ in range(warmup):
                calls += 1
                fn(calls)
            if collect:
                gc.collect()
            start = time.process_time()
            for _ in range(n):
                calls += 1
                fn(calls)
            out[lib.name].append((time.process_time() - start) / n * 1e6)
    return out


def ratios(figures: dict[str, list[float]], baseline: str) -> dict[str, dict[str, float]]:
    """Per library: the baseline's median figure (``value``) and the ratio to the baseline of the
    same round, as ``median``, ``min``, ``max`` over the rounds."""
    base = figures[baseline]
    out = {}
    for name, values in figures.items():
        rs = [v / b for v, b in zip(values, base)]
        out[name] = {"value": statistics.median(values), "median": statistics.median(rs),
                     "min": min(rs), "max": max(rs)}
    return out
