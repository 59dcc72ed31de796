"""Memory per decoded item: the Python heap a library's query result of 1,000 items holds."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any, Callable


def per_item(query: Callable[[], list[Any]], repeats: int) -> list[float]:
    """Bytes per item that the result of ``query()`` keeps alive, once per repeat.

    ``tracemalloc`` counts every allocation made through Python's allocators (PyO3's objects
    too) that is still held when the result is complete; the response, parsed and dropped, is
    not. One untraced call first, so caches and lazy imports filled on first use are not counted.
    """
    query()
    out = []
    for _ in range(repeats):
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        result = query()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        out.append(held / len(result))
        del result
    return out
