"""Batch writes and reads: BatchWriteItem (25 per request) and BatchGetItem (100 per request).

Unprocessed items and keys are retried with exponential backoff and full jitter, up to
``max_attempts`` requests per chunk; what never went in is reported in
:class:`dynorm.BatchIncomplete`. Throttled requests as a whole are retried by botocore
(standard retry mode) inside each request, not again here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from . import backend
from .backend import RetryPolicy
from .exceptions import (
    BatchIncomplete,
    DynormError,
    ServiceError,
    UnreadableItem,
    UnreadableItems,
    ValidationError,
)
from .fields import unreadable_item
from .unique_batch import create_each_steps, delete_each_steps
from .write_op import WriteOp
from .writes import older_keys, prepare_put, primary_key_of

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["RetryPolicy", "bulk_create", "bulk_delete", "bulk_delete_steps", "batch_get", "send_until_processed",
           "send_chunk", "answered", "bulk_create_steps", "batch_get_steps", "chunk_steps"]

WRITE_CHUNK = 25
READ_CHUNK = 100


def _identity(key: Mapping[str, Any]) -> tuple[str, ...]:
    """The text of each attribute of a DynamoDB JSON key (``{"PK": {"S": "a"}}`` -> ``("a",)``)."""
    return tuple([str(value) for av in key.values() for value in av.values()])


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

    Raises:
        DynormError: a request failed (see :func:`send_chunk` to learn what went in before).
    """
    pending, error = send_chunk(table, chunk, policy, sleep, capacity)
    if error is not None:
        raise error
    return pending


def send_chunk(table: str, chunk: list[dict[str, Any]], policy: RetryPolicy, sleep: Callable[[float], None],
               capacity: bool = True) -> tuple[list[dict[str, Any]], DynormError | None]:
    """Send one BatchWriteItem chunk like :func:`send_until_processed`, reporting a failure instead of raising.

    Returns:
        ``(pending, error)``: the requests not known to be written, and the error that stopped the
        chunk (``None`` when it ran to the end). When ``error`` is set, ``pending`` are the requests
        of the failed BatchWriteItem: not written when DynamoDB answered with an error, unknown
        when no answer came (see :func:`answered`); the other requests of the chunk went in.
    """
    return backend.drive(chunk_steps(table, chunk, policy, capacity), sleep)  # type: ignore[no-any-return]


def chunk_steps(table: str, chunk: list[dict[str, Any]], policy: RetryPolicy,
                capacity: bool = True, entities: tuple[Any, ...] = ()) -> backend.Steps:
    """The steps of :func:`send_chunk` (for :func:`dynorm.backend.drive`/``adrive``); ``entities``:
    the entity classes the requests are for (:attr:`dynorm.backend.Send.entities`)."""
    pending = chunk
    for attempt in range(1, policy.max_attempts + 1):
        params: dict[str, Any] = {"RequestItems": {table: pending}}
        if capacity:
            params["ReturnConsumedCapacity"] = "TOTAL"
        try:
            response = yield backend.Send("BatchWriteItem", params, entities=entities)
        except DynormError as exc:
            return pending, exc
        pending = response.get("UnprocessedItems", {}).get(table, [])
        if not pending:
            return [], None
        if attempt < policy.max_attempts:
            yield backend.Sleep(policy.delay(attempt))
    return pending, None


def answered(error: BaseException) -> bool:
    """True when DynamoDB answered the failed request (so it applied none of it); False when the
    connection failed and the request may or may not have been applied."""
    from botocore.exceptions import ClientError

    return not isinstance(error, ServiceError) or isinstance(error.__cause__, ClientError)


def _write_request(op: WriteOp) -> dict[str, Any]:
    """The WriteRequest of ``op`` in a BatchWriteItem (``PutRequest`` of its item, ``DeleteRequest`` of its key).

    Built when its chunk is sent, not for every item up front: the two dicts live while that one
    BatchWriteItem does, so the garbage collector never walks 2,000 of them during a
    ``bulk_create`` of 1,000 (issue 24).
    """
    if op.kind == "Put":
        return {"PutRequest": {"Item": op.params["Item"]}}
    return {"DeleteRequest": {"Key": op.key}}


def _entity_key(op: WriteOp) -> Mapping[str, Any]:
    """The primary-key fields of the item ``op`` writes (``{"sku": "A-1"}``), for reports."""
    return op.instance.key if op.instance is not None else op.entity_key


def _entity_ident(op: WriteOp) -> tuple[str, ...]:
    return tuple(map(str, _entity_key(op).values()))


def _batch_delete(model: type[EntityLike], key: dict[str, Any], entity_key: Mapping[str, Any]) -> WriteOp:
    """The DeleteRequest of ``key`` in a BatchWriteItem (no condition: BatchWriteItem takes none)."""
    return WriteOp("Delete", model, _NO_PARAMS, key, "batch delete", entity_key=dict(entity_key))


#: a batch Delete's params: its request is built from its key (:func:`_write_request`)
_NO_PARAMS: dict[str, Any] = {}


def _write(model: type[EntityLike], requests: list[WriteOp], policy: RetryPolicy, verb: str,
           then: Mapping[tuple[str, ...], list[WriteOp]] | None = None,
           on_written: Callable[[WriteOp], object] | None = None) -> backend.Steps:
    """Send the writes (Puts of their item, Deletes of their key) in BatchWriteItems of 25.

    Args:
        then: writes to send only once the write of that DynamoDB key went in (by key identity):
            they are queued after the writes not yet sent (``bulk_create`` deletes an item's
            older-version keys only after its Put is written, so a Put that fails changes nothing).
        on_written: called with each write that went in.

    Raises:
        BatchIncomplete: some items did not go in: ``.written``, ``.unprocessed`` and
            ``.uncertain`` (no answer came) list the entity keys exactly; an entity is written
            only when all its requests went in.
    """
    sent = yield from _send_chunks_steps(model, requests, policy, then, on_written)
    if not sent.failed and not sent.uncertain:
        return
    bad = {_entity_ident(op) for op in sent.failed} | {_entity_ident(op) for op in sent.uncertain}
    written: list[dict[str, Any]] = []
    seen: set[tuple[str, ...]] = set()
    for op in sent.went_in:
        ident = _entity_ident(op)
        if ident not in bad and ident not in seen:
            seen.add(ident)
            written.append(dict(_entity_key(op)))
    raise _incomplete(model, requests, policy, verb, sent, bad, written, bool(then)) from sent.stop


@dataclass
class _Sent:
    """How a batch's writes went: in, refused or unprocessed, unanswered; the error that stopped it."""

    went_in: list[WriteOp] = field(default_factory=list)
    failed: list[WriteOp] = field(default_factory=list)
    uncertain: list[WriteOp] = field(default_factory=list)
    stop: DynormError | None = None


def _send_chunks_steps(model: type[EntityLike], requests: list[WriteOp], policy: RetryPolicy,
                       then: Mapping[tuple[str, ...], list[WriteOp]] | None,
                       on_written: Callable[[WriteOp], object] | None) -> backend.Steps:
    """Send the writes 25 at a time, queueing ``then`` after what went in; stop at the first error."""
    table = model._meta.table.table_name()
    tmeta = model._meta.table._meta
    queue = list(requests)
    sent = _Sent()
    pos = 0
    while pos < len(queue):
        chunk = queue[pos:pos + WRITE_CHUNK]
        pos += len(chunk)
        pending, sent.stop = yield from chunk_steps(table, [_write_request(op) for op in chunk], policy,
                                                    entities=(model,))
        # key identities only when some request did not go in (rare): nothing per item otherwise
        by_identity = {_identity(op.key): op for op in chunk} if pending else {}
        left = set()
        for req in pending:
            body = req.get("PutRequest", {}).get("Item") or req.get("DeleteRequest", {}).get("Key")
            ident = _identity({k: body[k] for k in (tmeta.pk_attribute, tmeta.sk_attribute) if k and k in body})
            left.add(ident)
            (sent.uncertain if sent.stop is not None and not answered(sent.stop) else sent.failed).append(
                by_identity[ident])
        done = [op for op in chunk if _identity(op.key) not in left] if left else chunk
        sent.went_in += done
        follow: list[WriteOp] = []
        for op in done:
            if on_written is not None:
                on_written(op)
            if then:
                follow += then.get(_identity(op.key), [])
        queue += follow  # after the Puts still to send: full chunks, ceil(all requests / 25) BatchWriteItems
        if sent.stop is not None:
            break
    sent.failed += queue[pos:]  # never sent (the batch stopped)
    return sent


def _incomplete(model: type[EntityLike], requests: list[WriteOp], policy: RetryPolicy, verb: str, sent: _Sent,
                bad: set[tuple[str, ...]], written: list[dict[str, Any]], followed: bool) -> BatchIncomplete:
    """The error of a batch some items did not go in, listing exactly which (and which may have)."""
    unsure = {_entity_ident(op) for op in sent.uncertain}
    seen = {tuple(map(str, ek.values())) for ek in written}
    not_done: list[dict[str, Any]] = []
    maybe: list[dict[str, Any]] = []
    for op in requests:
        ident = _entity_ident(op)
        if ident in bad and ident not in seen:
            seen.add(ident)
            (maybe if ident in unsure else not_done).append(dict(_entity_key(op)))
    stop = sent.stop
    if stop is None:
        why = f"still unprocessed after {policy.max_attempts} attempts per batch (throttling?)"
    elif maybe:
        why = (f"in a BatchWriteItem that got no answer ({stop}); those {len(maybe)} may or may not have gone "
               "in (.uncertain; writing them again is safe)")
    else:
        why = f"refused by DynamoDB ({stop})"
    leftover = ""
    if followed:
        first = {id(op) for op in requests}
        put_in = {_entity_ident(op) for op in sent.went_in if id(op) in first}
        half = [ek for ek in not_done + maybe if tuple(map(str, ek.values())) in put_in]
        if half:
            leftover = (f" {len(half)} of them went in under the current key version, but their item under an older "
                        "key version (Meta.read_versions) may still be there: run the same call again for them "
                        "(it replaces, and deletes the older copy).")
    total = len({_entity_ident(op) for op in requests})
    return BatchIncomplete(
        f"{verb}: {len(written)} of {total} {model.__name__} item(s) went in (listed in .written); "
        f"{len(not_done) + len(maybe)} did not: {why}. The ones not written are in .unprocessed.{leftover}",
        not_done, written=written, uncertain=maybe)


def _check_duplicates(model: type[EntityLike], keys: Iterable[dict[str, Any]]) -> dict[tuple[str, ...], int]:
    """Refuse two keys alike (before I/O); return each key's identity -> its position."""
    seen: dict[tuple[str, ...], int] = {}
    for i, key in enumerate(keys):
        ident = _identity(key)
        if ident in seen:
            raise ValidationError(
                f"{model.__name__}: items {seen[ident]} and {i} of the batch have the same primary key "
                f"{' / '.join(ident)}; DynamoDB refuses duplicate keys in one batch. Nothing was written.",
                entity=model.__name__)
        seen[ident] = i
    return seen


def bulk_create(model: type[EntityLike], objs: Iterable[EntityLike], policy: RetryPolicy | None = None,
                sleep: Callable[[float], None] = time.sleep) -> list[EntityLike]:
    """Write many new items with BatchWriteItem (25 per request); see :func:`bulk_create_steps`."""
    return backend.drive(bulk_create_steps(model, objs, policy), sleep)  # type: ignore[no-any-return]


def bulk_create_steps(model: type[EntityLike], objs: Iterable[EntityLike],
                      policy: RetryPolicy | None = None) -> backend.Steps:
    """Write many new items with BatchWriteItem (25 write requests per BatchWriteItem).

    Every item is validated and its keys computed before the first request. BatchWriteItem
    takes no conditions, so an existing item with the same key is replaced (use
    ``transaction()`` or ``create()`` to refuse overwrites). Versioned items are written at
    version 1.

    During a key-version rollout (``Meta.read_versions`` lists older versions) the replacement
    covers the item ``get()`` would read under an older key too: once an item's PutRequest went
    in, a DeleteRequest for each of its older-version keys is queued after the requests not yet
    sent (so a Put that fails deletes nothing, and every BatchWriteItem but the last is full).
    Requests: ``ceil(n * (1 + older versions) / 25)`` BatchWriteItem (plus retries of unprocessed
    requests); WCU: 1 per KB per Put, 1 per Delete (an absent key costs 1 too).

    Returns:
        the instances.

    Raises:
        ValidationError: a bad value, an object of another entity, duplicate keys, or an item's
            older-version key that is another item's key in the batch (before I/O).
        BatchIncomplete: items still unprocessed after all retries (``.unprocessed``: their
            keys; an item whose Put went in but whose older-version Delete did not is among
            them, and the message says so: the same call again finishes it).
    """
    objs = list(objs)
    if model._meta.constraints:  # unique values are claimed by conditional writes: no BatchWriteItem
        return (yield from create_each_steps(model, objs))
    # one WriteOp per item and nothing else until its chunk is sent: every object built here lives
    # until the call returns, so the garbage collector walks it in each collection meanwhile (issue 24)
    ops: list[WriteOp] = []
    for i, obj in enumerate(objs):
        if type(obj) is not model:
            raise ValidationError(f"bulk_create on {model.__name__} got a {type(obj).__name__}.", entity=model.__name__)
        try:
            ops.append(prepare_put(obj, create=True, fresh=True))  # new items start at version 1
        except ValidationError as exc:  # every item is checked before the first request
            exc.args = (f"bulk_create item {i} of {len(objs)}: {exc} Nothing was written.",)
            raise
    current = _check_duplicates(model, [op.key for op in ops])
    # during a rollout: the older-version keys of each item, deleted once its Put went in
    then: dict[tuple[str, ...], list[WriteOp]] = {}
    deleted: dict[tuple[str, ...], int] = {}
    rollout = any(v != model._meta.key_version for v in model._meta.read_versions)
    for i, op in enumerate(ops if rollout else ()):
        for version, old in older_keys(model, objs[i], op.key):
            ident = _identity(old)
            if ident in current:
                raise ValidationError(
                    f"bulk_create on {model.__name__}: item {i}'s key at the older key version {version!r} "
                    f"(Meta.read_versions) is the key of item {current[ident]} ({' / '.join(ident)}); replacing "
                    f"item {i} would delete it. Nothing was written.", entity=model.__name__, value=objs[i])
            if ident in deleted:
                continue  # two items with one older key: deleted once, after the first Put
            deleted[ident] = i
            then.setdefault(_identity(op.key), []).append(_batch_delete(model, old, objs[i].key))
    del current, deleted
    # only an instance whose item went in changes (version 1, no longer adding)
    yield from _write(model, ops, policy or RetryPolicy(), "bulk_create", then,
                      lambda op: op.applied() if op.kind == "Put" else None)
    return objs


def bulk_delete(model: type[EntityLike], targets: Iterable[EntityLike | Mapping[str, Any]],
                policy: RetryPolicy | None = None, sleep: Callable[[float], None] = time.sleep) -> int:
    """Delete many items by instance or key dict with BatchWriteItem; see :func:`bulk_delete_steps`."""
    return backend.drive(bulk_delete_steps(model, targets, policy), sleep)  # type: ignore[no-any-return]


def bulk_delete_steps(model: type[EntityLike], targets: Iterable[EntityLike | Mapping[str, Any]],
                      policy: RetryPolicy | None = None) -> backend.Steps:
    """Delete many items by instance or key dict with BatchWriteItem (25 per request; no version check).

    During a key-version rollout (``Meta.read_versions`` lists older versions) an item stored under
    an older key is moved to the current keys first (an instance read there: its move; a key dict:
    ``get()``'s consistent GetItems, then the move), so the stream reads it as moved, then deleted.

    Returns:
        the number of delete requests sent (existing or not).

    Raises:
        ValidationError: bad keys or duplicates (before I/O).
        BatchIncomplete: keys still unprocessed after all retries.
    """
    targets = list(targets)
    keys = [primary_key_of(model, t) for t in targets]
    _check_duplicates(model, keys)
    if any(v != model._meta.key_version for v in model._meta.read_versions):
        # during a rollout an item stored under an older key version is moved to the current keys
        # first (as an instance's delete() does), then deleted there: the stream then shows a move
        # and a delete at the current keys, never a lone REMOVE at an older key (read as a move)
        from .fallback import move_to_current_steps, resolve_older_steps

        for t in targets:
            if isinstance(t, Mapping):
                yield from resolve_older_steps(model, t)
            else:
                yield from move_to_current_steps(t)
        keys = [primary_key_of(model, t) for t in targets]
    if model._meta.constraints:  # the sentinels go with each item: no BatchWriteItem
        return (yield from delete_each_steps(model, targets))
    entity_keys = [t.key if hasattr(t, "key") and not isinstance(t, Mapping) else t for t in targets]
    requests = [_batch_delete(model, k, ek) for ek, k in zip(entity_keys, keys)]
    # with Meta.read_versions, the item's keys at the older versions too: get() must not find it there
    seen = list(keys)
    for ek, t in zip(entity_keys, targets):
        for _, k in older_keys(model, t):
            if k not in seen:  # two copies of one item read (a Scan during a copy rollout): once
                seen.append(k)
                requests.append(_batch_delete(model, k, ek))
    yield from _write(model, requests, policy or RetryPolicy(), "bulk_delete")
    return len(keys)


def batch_get(model: type[EntityLike] | None, keys: Sequence[tuple[type[EntityLike], dict[str, Any]]],
              consistent: bool = False, policy: RetryPolicy | None = None,
              sleep: Callable[[float], None] = time.sleep,
              unreadable: list[UnreadableItem] | None = None) -> list[Any]:
    """Read items by primary key with BatchGetItem (100 distinct keys per request); see :func:`batch_get_steps`."""
    return backend.drive(batch_get_steps(keys, consistent, policy, unreadable), sleep)  # type: ignore[no-any-return]


def batch_get_steps(keys: Sequence[tuple[type[EntityLike], dict[str, Any]]], consistent: bool = False,
                    policy: RetryPolicy | None = None, unreadable: list[UnreadableItem] | None = None) -> backend.Steps:
    """Read items by primary key with BatchGetItem (100 distinct keys per request).

    Args:
        keys: (entity class, primary key in DynamoDB JSON) pairs; duplicates are read once.
        unreadable: when given, items that cannot be decoded are skipped and appended here
            (``skip_unreadable()``); when ``None`` they raise :class:`UnreadableItems` at the end.

    Returns:
        the items found, as entity instances (missing keys are simply absent).

    Raises:
        BatchIncomplete: keys still unprocessed after all retries.
        UnreadableItems: stored items that cannot be decoded (``.items``: the others).
    """
    bad: list[UnreadableItem] = [] if unreadable is None else unreadable
    policy = policy or RetryPolicy()
    unique: dict[tuple[str, tuple[str, ...]], tuple[type[EntityLike], dict[str, Any]]] = {}
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
        models = tuple(dict.fromkeys(cls for cls, _ in chunk))
        for attempt in range(1, policy.max_attempts + 1):
            resp = yield backend.Send("BatchGetItem", {"RequestItems": request, "ReturnConsumedCapacity": "TOTAL"},
                                      entities=models)
            for table_name, items in resp.get("Responses", {}).items():
                table = tables[table_name]
                type_attr = table._meta.type_attribute
                for raw in items:
                    cls = table._entities.get(raw.get(type_attr, {}).get("S"))
                    if cls is not None:
                        try:
                            out.append(cls.from_raw_data(raw))
                        except Exception as exc:  # noqa: BLE001 - one bad item must not hide the others
                            bad.append(unreadable_item(cls, raw, exc, (table._meta.pk_attribute,
                                                                       table._meta.sk_attribute or "")))
            request = resp.get("UnprocessedKeys") or {}
            if not request:
                break
            if attempt < policy.max_attempts:
                yield backend.Sleep(policy.delay(attempt))
        for spec in request.values():
            failed += spec.get("Keys", [])
    if failed:
        raise BatchIncomplete(f"BatchGetItem: {len(failed)} key(s) still unprocessed after {policy.max_attempts} "
                              "attempts per batch (throttling?); listed in .unprocessed.", failed)
    if bad and unreadable is None:
        more = f" (and {len(bad) - 1} more, in .errors)" if len(bad) > 1 else ""
        raise UnreadableItems(f"{bad[0]}{more} The {len(out)} item(s) that decoded are in .items; use "
                              ".skip_unreadable() to read past unreadable items.", bad, out)
    return out
