"""Shared set-up for the benchmarks that need a server."""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import dynorm
from dynorm.backend import LOCAL_CREDENTIALS
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


def fresh_table(table: Any) -> str:
    """Drop the dynorm ``table`` class's table if it exists, create it, return its name."""
    if table.exists():
        table.delete_table()
    table.create_table()
    return str(table.table_name())


def pynamodb_meta(table_name: str, endpoint: str) -> type:
    """A PynamoDB ``Meta`` for a hand-written model of ``table_name`` on ``endpoint``
    (``Meta = pynamodb_meta(...)`` in the model's class body)."""
    key_id, secret = LOCAL_CREDENTIALS
    return type("Meta", (), {"table_name": table_name, "host": endpoint, "region": "us-east-1",
                             "aws_access_key_id": key_id, "aws_secret_access_key": secret})


def boto3_client(endpoint: str) -> Any:
    """A plain boto3 DynamoDB client on ``endpoint`` (the hand-written baseline)."""
    import boto3

    key_id, secret = LOCAL_CREDENTIALS
    return boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=key_id, aws_secret_access_key=secret)


def cpu_per_op(impls: dict[str, Callable[[int], Any]], n: int, rounds: int) -> dict[str, float]:
    """Median client CPU microseconds per call of each ``impls[name](i)``, over ``rounds``
    interleaved rounds of ``n`` calls (``time.process_time``: this process only)."""
    results: dict[str, list[float]] = {name: [] for name in impls}
    for _ in range(rounds):
        for name, fn in impls.items():
            start = time.process_time()
            for i in range(n):
                fn(i)
            results[name].append((time.process_time() - start) / n * 1e6)
    return {name: statistics.median(values) for name, values in results.items()}


def finish(name: str, results: dict[str, Any], table: Any, server: LocalDynamoDB | None) -> None:
    """Write ``results`` to ``bench/results/<name>.json``, drop ``table``, stop ``server``."""
    out = Path(__file__).parent / "results" / f"{name}.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"written {out}")
    table.delete_table()
    if server:
        server.stop()
