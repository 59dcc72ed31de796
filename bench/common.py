"""Shared set-up for the benchmarks that need a server."""

from __future__ import annotations

import os

import dynorm
from dynorm.local import LocalDynamoDB


def connect(table_prefix: str, heap_mb: int = 384) -> tuple[str, LocalDynamoDB | None]:
    """Point dynorm at ``$DYNORM_TEST_ENDPOINT``, else at a DynamoDB Local started here.

    Returns:
        (endpoint, the server to stop at the end, or ``None`` when it was already running).
    """
    server = None
    endpoint = os.environ.get("DYNORM_TEST_ENDPOINT")
    if not endpoint:
        server = LocalDynamoDB(heap_mb=heap_mb).start()
        endpoint = server.endpoint
    dynorm.configure(endpoint=endpoint, table_prefix=table_prefix)
    return endpoint, server
