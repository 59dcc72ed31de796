"""Shared demo printing: run one access pattern, show the call, the request, results and cost."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import dynorm


class Pattern(NamedTuple):
    """One access pattern of a demo: its title, the call as text, and a function running it."""

    title: str
    call: str
    run: Callable[[], Any]
    plan: Callable[[], Any] | None = None


def run_pattern(number: int, p: Pattern) -> tuple[Any, dynorm.Capture]:
    """Run and print one pattern; return its result and the captured requests."""
    with dynorm.capture() as c:
        result = p.run()
    if isinstance(result, (list, tuple)):
        count = len(result)
    elif isinstance(result, dict):
        count = sum(len(v) for v in result.values())
    else:
        count = 0 if result is None else 1
    stats = c.stats
    print(f"{number}. {p.title}")
    print(f"   {p.call}")
    if p.plan is not None:
        print("   " + str(p.plan()).replace("\n", "\n   "))
    cap = f"{stats.read_capacity:g} RCU" + (f", {stats.write_capacity:g} WCU" if stats.write_capacity else "")
    print(f"   -> {count} item(s) | {c.count} request(s): {' + '.join(c.operations)} | {cap}\n")
    return result, c


def run_all(title: str, patterns: list[Pattern]) -> list[dynorm.Capture]:
    """Print a heading and run every pattern in order."""
    print(f"== {title}\n")
    return [run_pattern(i, p)[1] for i, p in enumerate(patterns, start=1)]
