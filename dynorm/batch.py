"""Batch writes and reads: BatchWriteItem (25 per request) and BatchGetItem (100 per request).

Unprocessed items and keys are retried with exponential backoff and full jitter, up to
``max_attempts`` requests per chunk; what never went in is reported in
:class:`dynorm.BatchIncomplete`. Throttled requests as a whole are retried by botocore
(standard retry mode) inside each request, not again here.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from . import backend
from .backend import RetryPolicy
from .exceptions import BatchIncomplete, ValidationError
from .writes import prepare_put, primary_key_of

if TYPE_CHECKING:  # pragma: no cover
    from .models import Entity

__all__ = ["RetryPolicy", "bulk_create", "bulk_delete", "batch_get"]

WRITE_CHUNK = 25
READ_CHUNK = 100


def _identity(key: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(next(iter(v.values()))) for v in key.values())


def _chunks(seq: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(seq), size):
        yield seq[i:i + size]


def send_until_processed(table: str, chunk: list[dict[str, Any]], policy: RetryPolicy,
                         sleep: Callable[[float], None], capacity: bool = True) -> list[dict[str, Any]]:
    """Send one BatchWriteItem chunk (<= 25 write requests), retrying UnprocessedItems with backoff.

    Args:
        table: physical table name; chunk: ``PutRequest``/``DeleteRequest`` dicts.
        policy: attempts and backoff; sleep: how to wait (injectable for tests).
        capacity: ask for ReturnConsumedCapacity (recorded in ``stats``/``capture()``).

    Returns:
        the requests still unprocessed after ``policy.max_attempts`` requests (empty when all went in).
    """
    pending = chunk
    for attempt in range(1, policy.max_attempts + 1):
        params: dict[str, Any] = {"RequestItems": {table: pending}}
        if capacity:
            params["ReturnConsumedCapacity"] = "TOTAL"
        pending = backend.call("BatchWriteItem", params).get("UnprocessedItems", {}).get(table, [])
        if not pending:
            return []
        if attempt < policy.max_attempts:
            sleep(policy.delay(attempt))
    return pending


def _write(model: type[Entity], requests: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]],
           policy: RetryPolicy, verb: str, sleep: Callable[[float], None]) -> None:
    """Send (entity key, DynamoDB key, WriteRequest) triples in chunks of 25; raise BatchIncomplete for leftovers."""
    table = model._meta.table.table_name()
    failed: list[dict[str, Any]] = []
    for chunk in _chunks(requests, WRITE_CHUNK):
        by_identity = {_identity(key): entity_key for entity_key, key, _ in chunk}
        for req in send_until_processed(table, [req for _, _, req in chunk], policy, sleep):
            body = req.get("PutRequest", {}).get("Item") or req.get("DeleteRequest", {}).get("Key")
            tmeta = model._meta.table._meta
            key = {k: body[k] for k in (tmeta.pk_attribute, tmeta.sk_attribute) if k and k in body}
            failed.append(by_identity.get(_identity(key), key))
    if failed:
        raise BatchIncomplete(
            f"{verb}: {len(failed)} of {len(requests)} {model.__name__} item(s) were still unprocessed after "
            f"{policy.max_attempts} attempts per batch (throttling?); they are listed in .unprocessed. "
            "The others went in.", failed)


def _check_duplicates(model: type[Entity], keys: list[dict[str, Any]]) -> None:
    seen: dict[tuple[str, ...], int] = {}
    for i, key in enumerate(keys):
        ident = _identity(key)
        if ident in seen:
            raise ValidationError(
                f"{model.__name__}: items {seen[ident]} and {i} of the batch have the same primary key "
                f"{' / '.join(ident)}; DynamoDB refuses duplicate keys in one batch. Nothing was written.",
                entity=model.__name__)
        seen[ident] = i


def bulk_create(model: type[Entity], objs: Iterable[Entity], policy: RetryPolicy | None = None,
                sleep: Callable[[float], None] = time.sleep) -> list[Entity]:
    """Write many new items with BatchWriteItem (25 per request).

    Every item is validated and its keys computed before the first request. BatchWriteItem
    takes no conditions, so an existing item with the same key is replaced (use
    ``transaction()`` or ``create()`` to refuse overwrites). Versioned items are written at
    version 1.

    Returns:
        the instances.

    Raises:
        ValidationError: a bad value, an object of another entity, or duplicate keys (before I/O).
        BatchIncomplete: items still unprocessed after all retries (``.unprocessed``: their keys).
    """
    objs = list(objs)
    requests = []
    ops = []
    for obj in objs:
        if type(obj) is not model:
            raise ValidationError(f"bulk_create on {model.__name__} got a {type(obj).__name__}.", entity=model.__name__)
        op = prepare_put(obj, create=True, fresh=True)  # new items start at version 1
        ops.append(op)
        requests.append((obj.key, op.key, {"PutRequest": {"Item": op.params["Item"]}}))
    _check_duplicates(model, [k for _, k, _ in requests])
    _write(model, requests, policy or RetryPolicy(), "bulk_create", sleep)
    for op in ops:
        op.applied()  # only now: an instance changes once its item is in the table
    return objs


def bulk_delete(model: type[Entity], targets: Iterable[Entity | Mapping[str, Any]], policy: RetryPolicy | None = None,
                sleep: Callable[[float], None] = time.sleep) -> int:
    """Delete many items by instance or key dict with BatchWriteItem (25 per request; no version check).

    Returns:
        the number of delete requests sent (existing or not).

    Raises:
        ValidationError: bad keys or duplicates (before I/O).
        BatchIncomplete: keys still unprocessed after all retries.
    """
    targets = list(targets)
    keys = [primary_key_of(model, t) for t in targets]
    _check_duplicates(model, keys)
    entity_keys = [dict(t.key) if hasattr(t, "key") and not isinstance(t, Mapping) else dict(t) for t in targets]
    _write(model, [(ek, k, {"DeleteRequest": {"Key": k}}) for ek, k in zip(entity_keys, keys)],
           policy or RetryPolicy(), "bulk_delete", sleep)
    return len(keys)


def batch_get(model: type[Entity] | None, keys: Sequence[tuple[type[Entity], dict[str, Any]]],
              consistent: bool = False, policy: RetryPolicy | None = None,
              sleep: Callable[[float], None] = time.sleep) -> list[Any]:
    """Read items by primary key with BatchGetItem (100 distinct keys per request).

    Args:
        model: unused hint (keys carry their entity class).
        keys: (entity class, primary key in DynamoDB JSON) pairs; duplicates are read once.

    Returns:
        the items found, as entity instances (missing keys are simply absent).

    Raises:
        BatchIncomplete: keys still unprocessed after all retries.
    """
    policy = policy or RetryPolicy()
    unique: dict[tuple[str, tuple[str, ...]], tuple[type[Entity], dict[str, Any]]] = {}
    for cls, key in keys:
        unique.setdefault((cls._meta.table.table_name(), _identity(key)), (cls, key))
    out: list[Any] = []
    failed: list[dict[str, Any]] = []
    entries = list(unique.values())
    for chunk in _chunks(entries, READ_CHUNK):
        request: dict[str, dict[str, Any]] = {}
        for cls, key in chunk:
            spec = request.setdefault(cls._meta.table.table_name(), {"Keys": []})
            spec["Keys"].append(key)
            if consistent:
                spec["ConsistentRead"] = True
        tables = {cls._meta.table.table_name(): cls._meta.table for cls, _ in chunk}
        for attempt in range(1, policy.max_attempts + 1):
            resp = backend.call("BatchGetItem", {"RequestItems": request, "ReturnConsumedCapacity": "TOTAL"})
            for table_name, items in resp.get("Responses", {}).items():
                table = tables[table_name]
                type_attr = table._meta.type_attribute
                for raw in items:
                    cls = table._entities.get(raw.get(type_attr, {}).get("S"))
                    if cls is not None:
                        out.append(cls.from_raw_data(raw))
            request = resp.get("UnprocessedKeys") or {}
            if not request:
                break
            if attempt < policy.max_attempts:
                sleep(policy.delay(attempt))
        for spec in request.values():
            failed += spec.get("Keys", [])
    if failed:
        raise BatchIncomplete(f"BatchGetItem: {len(failed)} key(s) still unprocessed after {policy.max_attempts} "
                              "attempts per batch (throttling?); listed in .unprocessed.", failed)
    return out
