"""The two test tiers: ``make test`` (the fast gate) and ``make test-all`` (CI, ``DYNORM_TEST_TIER=full``).

Property and differential tests take their example counts from :func:`examples`, so the fast
gate still runs every one of them, on fewer generated cases, and CI runs the full counts.
"""

from __future__ import annotations

import os

#: True under ``make test-all`` (``DYNORM_TEST_TIER=full``): full example counts.
FULL = os.environ.get("DYNORM_TEST_TIER", "") == "full"


def examples(full: int, fast: int | None = None) -> int:
    """The hypothesis ``max_examples`` for this tier: ``full`` under ``make test-all``, else
    ``fast`` (default: a quarter of ``full``, at least 10, never more than ``full``)."""
    if FULL:
        return full
    return min(full, fast if fast is not None else max(10, full // 4))
