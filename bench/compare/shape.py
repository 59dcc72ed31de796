"""The item every library reads and writes, and its keys: one place, so the requests match.

The item is a catalog product as dynorm stores it: ``PK``/``SK``, one overloaded GSI
(``GSI1PK``/``GSI1SK``), ``entityType``, a version number for optimistic locking, and five
fields. Pure data; no library is imported here.
"""

from __future__ import annotations

from typing import Any

#: table name under the benchmark's table prefix (``bench-compare``)
TABLE = "compare"
PREFIX = "bench-"
KEY_VERSION = "v1"
ENTITY_TYPE = "ITEM"
#: a fixed stand-in for the revision token dynorm writes on each write (``_dynorm_rev``), so the
#: hand-written boto3 request carries the same attributes as dynorm's
REV = "benchbenchbench0"
#: the item every library gets (GetItem) in the get benchmark and in the cold start
TARGET = "target"
#: partitions of GSI1 holding exactly 100 and 1,000 items, for the two query benchmarks
QUERY_GROUPS = {"query100": ("q100", 100), "query1000": ("q1000", 1000)}
BATCH_WRITE = 1000
BATCH_GET = 100
DESCRIPTION = "A fine product of the benchmark catalog, described in one sentence."


def pk(item_id: str) -> str:
    """The partition key of item ``item_id``."""
    return f"{KEY_VERSION}#I#{item_id}"


SK = "METADATA"


def gsi1pk(group: str) -> str:
    """The GSI1 partition key of the items of ``group``."""
    return f"{KEY_VERSION}#G#{group}"


def gsi1sk(item_id: str) -> str:
    """The GSI1 sort key of item ``item_id``."""
    return f"I#{item_id}"


def fields(item_id: str, group: str, n: int) -> dict[str, Any]:
    """The declared fields of item ``item_id`` (Python values; ``n`` sets name and stock level)."""
    return {"item_id": item_id, "group": group, "name": f"Item {n}", "description": DESCRIPTION,
            "stock_level": n, "created_at": "2026-01-01T00:00:00.000000Z"}


def raw_item(item_id: str, group: str, n: int, version: int = 1) -> dict[str, Any]:
    """Item ``item_id`` in DynamoDB JSON, every attribute dynorm writes (keys, type, version, revision)."""
    f = fields(item_id, group, n)
    return {"PK": {"S": pk(item_id)}, "SK": {"S": SK},
            "GSI1PK": {"S": gsi1pk(group)}, "GSI1SK": {"S": gsi1sk(item_id)},
            "entityType": {"S": ENTITY_TYPE}, "item_id": {"S": item_id}, "group": {"S": group},
            "name": {"S": f["name"]}, "description": {"S": DESCRIPTION},
            "stock_level": {"N": str(n)}, "created_at": {"S": f["created_at"]},
            "version": {"N": str(version)}, "_dynorm_rev": {"S": REV}}


def raw_key(item_id: str) -> dict[str, Any]:
    """The primary key of item ``item_id`` in DynamoDB JSON."""
    return {"PK": {"S": pk(item_id)}, "SK": {"S": SK}}


def query_ids(group: str, count: int) -> list[str]:
    """The item ids of a query group, in GSI1 sort-key order."""
    return [f"{group}-{j:05d}" for j in range(count)]
