"""``dynorm.transaction()``: several writes committed as one TransactWriteItems.

Actions are planned (and validated) as they are added, so a bad value, a 101st action or a
second action on the same item fails before any request. The block commits on exit; if it
raises, nothing is sent.
"""

from __future__ import annotations

import dataclasses
import uuid
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, cast

from . import backend
from ._deferred import load_needed_steps
from .batch import answered
from .exceptions import (
    BatchIncomplete,
    CreateCanceled,
    DynormError,
    ServiceError,
    TransactionCanceled,
    UniqueCanceled,
    ValidationError,
)
from .expressions import Q, refuse_paths
from .fallback import move_to_current, move_to_current_steps, resolve_older_steps
from .sender import send_steps
from .unique_reads import know_unique_steps, stored_unique_steps
from .write_put import WHOLE_FIELDS_ONLY
from .write_unique import SentinelOp, merge_sentinels, touches_unique
from .write_update import update_refused
from .writes import (
    WriteOp,
    is_instance,
    older_keys,
    prepare_check,
    prepare_create_checks,
    prepare_delete,
    prepare_delete_older,
    prepare_put,
    prepare_update,
)

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["Transaction", "transaction", "atransaction", "bulk_update", "bulk_update_steps", "send_delete",
           "send_delete_steps", "MAX_ACTIONS"]

#: DynamoDB's limit of actions in one TransactWriteItems.
MAX_ACTIONS = 100


def _is_entity_class(value: Any) -> bool:
    # by capability, not by importing models (a layer above this one)
    return isinstance(value, type) and hasattr(getattr(value, "_meta", None), "key_fields")


def _target(target: EntityLike | type[EntityLike], key: Mapping[str, Any] | None) -> tuple[type[EntityLike], Any]:
    if is_instance(target):
        return cast("type[EntityLike]", type(target)), target
    if _is_entity_class(target):
        target = cast("type[EntityLike]", target)
        if key is None:
            fields = ", ".join(repr(k) + ": ..." for k in target._meta.key_fields)
            raise ValidationError(f"{target.__name__}: give the key dict of the item, e.g. "
                                  f"({target.__name__}, {{{fields}}}).", entity=target.__name__)
        return target, key
    raise ValidationError(f"expected an entity instance or class, got {target!r}.")


class Transaction:
    """Collects write actions and commits them atomically (TransactWriteItems).

    Args:
        client_request_token: idempotency token (default: a new UUID); a retried commit
            with the same token within 10 minutes is not applied twice.

    Attributes:
        actions: the planned :class:`~dynorm.writes.WriteOp` objects, in order.
    """

    def __init__(self, client_request_token: str | None = None) -> None:
        self.actions: list[WriteOp] = []
        self.token = client_request_token or str(uuid.uuid4())
        self.committed = False
        self._items: dict[tuple[str, str, str], int] = {}

    def _add(self, op: WriteOp, *checks: WriteOp) -> WriteOp:
        """Add ``op`` and the actions that go with it (checks or deletes of its older-version keys):
        all of them, or none when one would break a limit."""
        if self.committed:
            raise ValidationError("this transaction was already committed; start a new one.")
        # unique constraints: the write's sentinel actions go in too (counted in the 100); a value one
        # action releases and another takes becomes one action (dynorm.write_unique.merge_sentinels)
        actions = list(self.actions)
        sentinels = merge_sentinels(actions, op.sentinels) if op.sentinels else []
        ops = (op, *checks, *sentinels)
        if len(self.actions) + len(ops) > MAX_ACTIONS:
            extra = (f" plus {len(checks)} {checks[0].kind}(s) of its keys at older key versions (Meta.read_versions "
                     f"{op.model._meta.read_versions!r} of {op.model.__name__})") if checks else ""
            raise ValidationError(
                f"a transaction holds at most {MAX_ACTIONS} actions (DynamoDB's limit); {op.description}{extra} would "
                f"be action {len(self.actions) + len(ops)}. Split the work into several transactions.",
                entity=op.model.__name__)
        for i, action in enumerate(ops):
            # a sentinel already here was merged above (merge_sentinels): only entity items may clash
            stored_twice = action.identity in self._items and not isinstance(action, SentinelOp)
            if stored_twice or action.identity in [o.identity for o in ops[:i]]:
                at = self._items.get(action.identity)
                where = f"action {at} of this transaction" if at is not None else "another of its actions"
                what = f"its key at key version {action.older_version!r}" if action.older_version else "this item"
                raise ValidationError(
                    f"{op.description}: {where} already touches {what}; DynamoDB refuses two actions on one item "
                    "in a transaction. Combine them.", entity=op.model.__name__)
        self.actions[:] = actions
        for action in ops:
            self._items[action.identity] = len(self.actions)
            self.actions.append(action)
        return op

    def _add_put(self, op: WriteOp) -> None:
        # a Put that refuses to overwrite, during a rollout: an item stored only under an older key
        # (which get() reads) must not be hidden, so its older keys are checked in this transaction
        self._add(op, *prepare_create_checks(op))

    def create(self, obj: EntityLike) -> EntityLike:
        """Add a Put that refuses to overwrite (``attribute_not_exists``).

        While ``Meta.read_versions`` lists older key versions, one ConditionCheck
        ``attribute_not_exists`` per older key goes in too (each an action of the 100, billed like
        a transactional write: 2 WCU): an item stored only under an older key (which ``get()``
        reads) fails the commit with :class:`~dynorm.exceptions.AlreadyExists` naming the version.

        Raises:
            ValidationError: a bad value, more than 100 actions with the checks, or an action on
                one of these items already (before any request; nothing is added).
        """
        self._add_put(prepare_put(obj, create=True))
        return obj

    def save(self, obj: EntityLike) -> EntityLike:
        """Add a Put of the whole instance (conditional on its version when versioned).

        A new versioned instance is a Put that refuses to overwrite: during a rollout it gets
        the checks of :meth:`create`. A new unversioned instance (an upsert) follows ``get()``'s
        ``Meta.read_versions`` fallback: an item stored only under an older key is moved to the
        current keys now (consistent GetItems + the move), and the save lands on it.
        """
        move_to_current(obj)  # read through Meta.read_versions: moved to the current keys now
        backend.drive(know_unique_steps(obj))  # a unique value not read: one GetItem
        op = prepare_put(obj)
        self._add_put(op)
        if op.kind == "Update" and obj._state.adding:
            self._follow_older(type(obj), obj.key)
        return obj

    def _follow_older(self, model: type[EntityLike], key: Mapping[str, Any]) -> None:
        """A write by key (or a new instance's upsert) follows ``get()``'s read_versions fallback: now."""
        _resolve_older(model, key)

    def update(self, target: EntityLike | type[EntityLike], key: Mapping[str, Any] | None = None, *,
               condition: Q | None = None, **changes: Any) -> None:
        """Add an Update: ``tx.update(obj, stock_level=F("stock_level") - 1)`` or
        ``tx.update(Product, {"product_id": pid}, ...)``; plain values are applied to the instance after commit."""
        model, t = _target(target, key)
        if is_instance(t):
            move_to_current(t)  # read through Meta.read_versions: moved to the current keys now
            backend.drive(know_unique_steps(t))  # a unique value not read: one GetItem
            self._add(prepare_update(model, instance=t, changes=changes, condition=condition))
            return
        _resolve_older(model, t)
        # a unique field changed by key: its stored value (the sentinel to release) is read first
        stored = backend.drive(stored_unique_steps(model, t)) if touches_unique(model, list(changes)) else None
        self._add(prepare_update(model, key=t, changes=changes, condition=condition, stored=stored))

    def delete(self, target: EntityLike | type[EntityLike], key: Mapping[str, Any] | None = None, *,
               condition: Q | None = None) -> None:
        """Add a Delete (conditional on the version of an instance read).

        With ``Meta.read_versions``, the item's keys at the older key versions are deleted in the
        same transaction (unconditionally), so ``get()``'s fallback does not find it there again;
        by key, an item found only at an older version (as ``get()`` finds it) is first moved to the
        current keys (:mod:`dynorm.fallback`), where the delete (and its condition) applies: the
        stream reads a move, then a delete (a lone REMOVE at an older key would read as a move).
        """
        model, t = _target(target, key)
        if not isinstance(t, Mapping):
            move_to_current(t)  # read through Meta.read_versions: moved to the current keys now
            backend.drive(know_unique_steps(t))  # a unique value not read: one GetItem
            self._add(prepare_delete(model, t, condition=condition), *prepare_delete_older(model, t))
            return
        # an item found only at an older version (as get() finds it) is moved to the current keys
        # first, with or without a condition: the stream then reads a move, then a delete, never a
        # lone REMOVE at an older key (which reads as a move's old half)
        _resolve_older(model, t)
        # with unique constraints, the sentinels to delete are those of the values stored: read first
        stored = backend.drive(stored_unique_steps(model, t)) if model._meta.constraints else None
        self._add(prepare_delete(model, t, condition=condition, stored=stored), *prepare_delete_older(model, t))

    def check(self, target: EntityLike | type[EntityLike], key: Mapping[str, Any] | None = None, *,
              condition: Q) -> None:
        """Add a ConditionCheck: the transaction only commits if ``condition`` holds on that item."""
        model, t = _target(target, key)
        self._add(prepare_check(model, t, condition))

    def commit(self) -> None:
        """Send TransactWriteItems (nothing when empty) and apply the results to the instances.

        Raises:
            TransactionCanceled: nothing was written; ``.reasons`` has one entry per action
                (``action``, ``description``, ``code``, ``message``, ``error``).
            ValidationError: DynamoDB refused an update for the item as stored (a document path
                through a missing map, an ``F()`` source missing), naming the updates that can cause
                it; nothing was written and the instances are unchanged.
        """
        backend.drive(self._commit_steps())

    async def acommit(self) -> None:
        """:meth:`commit` for asyncio: the same TransactWriteItems, ClientRequestToken and errors."""
        await backend.adrive(self._commit_steps())

    def _commit_steps(self) -> backend.Steps:
        if self.committed:
            return
        if not self.actions:
            self.committed = True
            return
        params = {"TransactItems": [op.transact_item() for op in self.actions],
                  "ClientRequestToken": self.token, "ReturnConsumedCapacity": "TOTAL"}
        try:
            yield backend.Send("TransactWriteItems", params,
                               entities=tuple(dict.fromkeys(op.model for op in self.actions)))
        except TransactionCanceled as exc:
            reasons = []
            lines = []
            for i, op in enumerate(self.actions):
                raw = exc.reasons[i] if i < len(exc.reasons) else {}
                code = raw.get("code") or "None"
                entry: dict[str, Any] = {"action": i, "description": op.description, "code": code,
                                         "message": raw.get("message", ""), "error": None}
                if code == "ConditionalCheckFailed":
                    entry["error"] = op.error(None, raw_item=raw.get("item"))
                    lines.append(f"action {i} ({op.description}): {entry['error']}")
                elif code not in ("None", None):
                    lines.append(f"action {i} ({op.description}): {code} {entry['message']}".rstrip())
                reasons.append(entry)
            message = "transaction cancelled, nothing was written: " + "; ".join(lines or [str(exc)])
            taken = [e for e, op in zip(reasons, self.actions)
                     if isinstance(op, SentinelOp) and e["code"] == "ConditionalCheckFailed"]
            if taken and not any(e["code"] == "ConditionalCheckFailed" and not isinstance(op, SentinelOp)
                                 for e, op in zip(reasons, self.actions)):
                # a unique value is held by another item: say so as create() does
                raise UniqueCanceled(f"{taken[0]['error']} (action {taken[0]['action']} of the transaction: the "
                                     "whole transaction was cancelled.)", reasons, cause=taken[0]["error"]) from exc
            older = [e for e, op in zip(reasons, self.actions)
                     if op.older_version and e["code"] == "ConditionalCheckFailed"]
            if older:
                # a create found the item under an older key version: say so as create() does
                raise CreateCanceled(f"{older[0]['error']} (action {older[0]['action']} of the transaction, the "
                                     "check of that key: the whole transaction was cancelled.)", reasons) from exc
            raise TransactionCanceled(message, reasons) from exc
        except ServiceError as exc:  # refused for the items as stored (a path's parent, an F() source missing)
            refused = update_refused(self.actions, exc.code, str(exc))
            if refused is None:
                raise
            raise refused from exc
        self.committed = True
        for op in self.actions:
            op.applied()


def _resolve_older(model: type[EntityLike], key: Mapping[str, Any]) -> None:
    """A write by key follows ``get()``'s ``Meta.read_versions`` fallback: when the item is not under
    the current keys but under an older version's, it is moved to the current keys first
    (:func:`dynorm.fallback.move_to_current`; the move changes no value).

    Requests (only with older read_versions): GetItem (consistent) per version tried, and the move.
    """
    backend.drive(resolve_older_steps(model, key))


def send_delete(op: WriteOp, older: list[WriteOp]) -> None:
    """Send a planned Delete together with the Deletes of the item's older-version keys
    (:func:`dynorm.writes.prepare_delete_older`) in one TransactWriteItems; alone (DeleteItem,
    :func:`dynorm.sender.send`) when there are none.

    Raises:
        StaleWrite, ConditionFailed: as the Delete alone would (nothing was deleted).
        TransactionCanceled: cancelled for another reason (a conflict); nothing was deleted.
    """
    backend.drive(send_delete_steps(op, older))


def send_delete_steps(op: WriteOp, older: list[WriteOp]) -> backend.Steps:
    """The steps of :func:`send_delete` (run by the sync or the asyncio driver)."""
    if not older:
        yield from send_steps(op)
        return
    tx = Transaction()
    tx._add(op, *older)
    try:
        yield from tx._commit_steps()
    except TransactionCanceled as exc:
        error = exc.reasons[0].get("error") if exc.reasons else None
        if isinstance(error, Exception):
            raise error from exc
        raise


@contextmanager
def transaction(client_request_token: str | None = None) -> Iterator[Transaction]:
    """Collect writes in a block and commit them as one TransactWriteItems on exit.

    Example::

        with dynorm.transaction() as tx:
            tx.update(order, status="PAID")
            tx.update(product, stock_level=F("stock_level") - 1, condition=Q(stock_level__gte=1))
            tx.create(Payment(order_id=order.order_id, amount=order.total))

    If the block raises, nothing is sent.

    Raises:
        TransactionCanceled: DynamoDB cancelled it (a condition failed, a conflict); nothing
            was written.
        ValidationError: bad input, more than 100 actions, or two actions on one item
            (raised when the action is added, before any request).
    """
    tx = Transaction(client_request_token)
    yield tx
    tx.commit()


def bulk_update(model: type[EntityLike], objs: Iterable[EntityLike], fields: Iterable[str], *,
                chunk_size: int = MAX_ACTIONS) -> int:
    """Write ``fields`` of many instances; see :func:`bulk_update_steps`."""
    return backend.drive(bulk_update_steps(model, objs, fields, chunk_size=chunk_size))  # type: ignore[no-any-return]


def bulk_update_steps(model: type[EntityLike], objs: Iterable[EntityLike], fields: Iterable[str], *,
                      chunk_size: int = MAX_ACTIONS) -> backend.Steps:
    """Write ``fields`` of many instances: one Update each, up to ``chunk_size`` actions per TransactWriteItems.

    Django's ``bulk_update(objs, fields)``. Every update is planned (and validated) before the
    first write; with a ``fields.Version()`` each is conditional on the version read, and the
    instances' versions are bumped after their chunk commits. A chunk commits whole or not at all.
    An instance whose named field is deferred (``only()``, or an ``F()`` result a transaction did
    not return) and not assigned since has its deferred fields loaded first, as reading the field
    would: one GetItem per such instance, awaited under the asyncio driver (``abulk_update``).

    Args:
        model: the entity class; every object must be an instance of it.
        objs: the instances, changed in memory.
        fields: names of the fields to write (not primary-key fields, not the version).
        chunk_size: actions per transaction (1..100). Each item's actions stay in one transaction (its
            Update, and on an entity with unique constraints the Delete and Put of each unique value it
            changes), and so do items that exchange unique values (:func:`_chunks_by_actions`).

    Returns:
        The number of items updated.

    Raises:
        ValidationError: no fields, an unknown or key field, a document path (``"stock__W01"``: name
            the whole field, or use ``obj.update(stock__W01=...)``), a foreign object, one item twice,
            a bad value, an item (or items exchanging values) needing more than ``chunk_size``
            actions (before any request; the table is unchanged).
        TransactionCanceled: the first chunk was cancelled (a stale version, a failed
            condition): nothing was written.
        BatchIncomplete: a later chunk was cancelled, refused (throttled after botocore's retries)
            or got no answer: ``written`` lists the objects updated, ``unprocessed`` those that were
            not, ``uncertain`` (part of ``unprocessed``) those of a request that got no answer, which
            may or may not have been applied (sending them again is safe: a re-sent chunk writes the
            same values; a versioned one fails its version check if it was applied). Also raised
            for the first chunk when it got no answer.
        ServiceError: the first chunk was refused; nothing was written.
    """
    objs = list(objs)
    names = [fields] if isinstance(fields, str) else list(fields)
    entity = model.__name__
    if not names:
        raise ValidationError(f"{entity}.objects.bulk_update() needs the names of the fields to write.",
                              entity=entity)
    # a path's value is not written from memory, as in save(update_fields=...) (never a REMOVE of it)
    refuse_paths(model._meta, names, "objects.bulk_update()", WHOLE_FIELDS_ONLY)
    if not 1 <= chunk_size <= MAX_ACTIONS:
        raise ValidationError(f"bulk_update chunk_size must be 1..{MAX_ACTIONS}, got {chunk_size!r}.", entity=entity)
    ops = yield from _plan_bulk_updates_steps(model, objs, names)
    done = 0
    for start, chunk in _chunks_by_actions(entity, ops, chunk_size):
        tx = Transaction()
        for op in chunk:
            tx._add(op)
        try:
            yield from tx._commit_steps()
        except DynormError as exc:
            error = _chunk_failed(entity, objs, done, start, start + len(chunk), exc)
            if error is exc:
                raise  # nothing written before it: its own error stands
            raise error from exc
        done += len(chunk)
    return done


def _chunks_by_actions(entity: str, ops: list[WriteOp], chunk_size: int) -> list[tuple[int, list[WriteOp]]]:
    """Cut ``ops`` (in order) into transactions of at most ``chunk_size`` actions, each item whole.

    An item's actions (its Update and the Delete/Put of each unique value it changes) stay together.
    Items whose sentinel actions touch one value (one releases it, another takes it: a swap, a chain)
    must commit in one transaction (in two, the taker would find the value still held), so the
    smallest run of consecutive items holding every such pair is one unit.

    Returns:
        ``(index of the chunk's first op, its ops)`` per transaction.

    Raises:
        ValidationError: a unit needs more than ``chunk_size`` actions (before any request).
    """
    units: list[tuple[int, int]] = []  # [first, last] indexes of each unit, in order
    first_seen: dict[Any, int] = {}
    for i, op in enumerate(ops):
        lo = i
        for s in op.sentinels:
            lo = min(lo, first_seen.setdefault(s.identity, i))
        while units and units[-1][1] >= lo:  # a value shared with an earlier item: one unit back to it
            lo = min(lo, units.pop()[0])
        units.append((lo, i))
    chunks: list[tuple[int, list[WriteOp]]] = []
    size = 0
    for lo, hi in units:
        trial = Transaction()
        for op in ops[lo:hi + 1]:
            trial._add(op)
        n = len(trial.actions)
        if n > chunk_size:
            what = f"objs[{lo}]" if lo == hi else f"objs[{lo}:{hi + 1}] (they exchange unique values, so they " \
                "commit in one transaction)"
            raise ValidationError(
                f"{entity}.objects.bulk_update(): {what} need(s) {n} actions (each changed unique value adds "
                f"the Delete of its old sentinel and the Put of the new one), more than chunk_size={chunk_size}; "
                "raise chunk_size (up to 100) or update fewer fields at once. Nothing was sent.", entity=entity)
        if chunks and size + n <= chunk_size:
            chunks[-1][1].extend(ops[lo:hi + 1])
            size += n
        else:
            chunks.append((lo, list(ops[lo:hi + 1])))
            size = n
    return chunks


def _plan_bulk_updates_steps(model: type[EntityLike], objs: list[EntityLike], names: list[str]) -> backend.Steps:
    """Plan (and validate) one Update per instance before any write; return the ops.

    A named field deferred (``only()``, an ``F()`` result a transaction did not return) is loaded
    first, one GetItem, awaited under the asyncio driver (reading it there would block).
    """
    entity = model.__name__
    ops: list[WriteOp] = []
    seen: dict[Any, int] = {}
    for i, obj in enumerate(objs):
        if not isinstance(obj, model) or not is_instance(obj):
            raise ValidationError(f"{entity}.objects.bulk_update(): objs[{i}] is {obj!r}, not a {entity}.",
                                  entity=entity, value=obj)
        yield from load_needed_steps(obj, names)
        yield from know_unique_steps(obj)  # a unique value not read: one GetItem
        op = prepare_update(model, instance=obj, changes={n: getattr(obj, n, None) for n in names})
        if op.identity in seen:
            raise ValidationError(f"{entity}.objects.bulk_update(): objs[{seen[op.identity]}] and objs[{i}] are the "
                                  "same item; pass each item once.", entity=entity, value=obj)
        seen[op.identity] = i
        ops.append(op)
    return ops


def _chunk_failed(entity: str, objs: list[EntityLike], done: int, start: int, end: int,
                  exc: DynormError) -> DynormError:
    """The error of a chunk ``objs[start:end]`` that did not commit after ``done`` items did.

    The first chunk's own error stands when nothing may have been written; otherwise a
    :class:`BatchIncomplete` says which went in, which did not and which may have (no answer).
    """
    if isinstance(exc, TransactionCanceled):
        if done == 0:
            return exc
        return BatchIncomplete(
            f"{entity}.objects.bulk_update(): {done} of {len(objs)} items were updated (objs[:{done}]); "
            f"objs[{start}:] were not ({exc})", unprocessed=objs[start:], written=objs[:done])
    # refused (throttled after botocore's retries) or unanswered: the chunks before it
    # went in, so a plain error would hide them from a caller who then sends them again
    unsure = not answered(exc)
    if done == 0 and not unsure:
        return exc
    if unsure:
        what = (f"objs[{start}:{end}] may or may not have been updated (their request got no answer; "
                "sending them again is safe: .uncertain)")
    else:
        what = f"objs[{start}:{end}] were not"
    return BatchIncomplete(
        f"{entity}.objects.bulk_update(): {done} of {len(objs)} items were updated (objs[:{done}], "
        f".written); {what}; objs[{end}:] were not sent (.unprocessed). Cause: {exc}",
        unprocessed=objs[start:] if not unsure else objs[end:], written=objs[:done],
        uncertain=objs[start:end] if unsure else ())


class _AsyncTransaction(Transaction):
    """The transaction of :class:`atransaction`: no blocking request inside the event loop.

    An instance read through ``Meta.read_versions`` (``obj._state.fallback``) is not moved to
    its current keys when its save/update/delete is added (the sync :class:`Transaction` does
    that there, with blocking requests) but at :meth:`acommit`, by the asyncio driver, right
    before the TransactWriteItems. The action is planned (and validated) when added, and
    planned again against the current keys once the item is moved.
    """

    def __init__(self, client_request_token: str | None = None) -> None:
        super().__init__(client_request_token)
        self._moves: list[tuple[int, Any, Callable[[], WriteOp]]] = []
        self._by_key: list[tuple[type[EntityLike], Mapping[str, Any]]] = []  # resolved at acommit

    def _add_moved(self, obj: EntityLike, plan: Callable[[], WriteOp]) -> None:
        op = plan()  # bad input fails now, before any request
        # the item lands on its current keys: that is the item this action touches
        self._add(dataclasses.replace(op, key=type(obj)._meta.primary_key(obj.attribute_values)))
        self._moves.append((len(self.actions) - 1, obj, plan))

    def _follow_older(self, model: type[EntityLike], key: Mapping[str, Any]) -> None:
        self._by_key.append((model, key))  # get()'s read_versions fallback runs at acommit, not here

    def save(self, obj: EntityLike) -> EntityLike:
        """Add a Put of the whole instance (conditional on its version when versioned)."""
        if not obj._state.fallback:
            return super().save(obj)
        self._add_moved(obj, lambda: prepare_put(obj))
        return obj

    def update(self, target: EntityLike | type[EntityLike], key: Mapping[str, Any] | None = None, *,
               condition: Q | None = None, **changes: Any) -> None:
        """Add an Update (see :meth:`Transaction.update`)."""
        model, t = _target(target, key)
        if not is_instance(t) and touches_unique(model, list(changes)):
            _refuse_unique_by_key(model, "update")
        if not is_instance(t):  # by key: get()'s read_versions fallback runs at acommit, not here
            self._add(prepare_update(model, key=t, changes=changes, condition=condition))
            if older_keys(model, t):
                self._by_key.append((model, t))
            return None
        if not t._state.fallback:
            return super().update(target, key, condition=condition, **changes)
        self._add_moved(t, lambda: prepare_update(model, instance=t, changes=changes, condition=condition))
        return None

    def delete(self, target: EntityLike | type[EntityLike], key: Mapping[str, Any] | None = None, *,
               condition: Q | None = None) -> None:
        """Add a Delete (conditional on the version of an instance read)."""
        model, t = _target(target, key)
        if isinstance(t, Mapping) and model._meta.constraints:
            _refuse_unique_by_key(model, "delete")
        if isinstance(t, Mapping) and older_keys(model, t):
            # by key: get()'s read_versions fallback (and the move) runs at acommit, not here
            self._add(prepare_delete(model, t, condition=condition), *prepare_delete_older(model, t))
            self._by_key.append((model, t))
            return None
        if not (is_instance(t) and t._state.fallback):
            return super().delete(target, key, condition=condition)
        self._add_moved(t, lambda: prepare_delete(model, t, condition=condition))
        return None

    def _commit_steps(self) -> backend.Steps:
        if not self.committed and self._by_key:
            for model, key in self._by_key:
                yield from resolve_older_steps(model, key)  # consistent GetItems (+ the move), awaited
            self._by_key = []
        if not self.committed and self._moves:
            for i, obj, plan in self._moves:
                yield from move_to_current_steps(obj)  # GetItem + TransactWriteItems (no-op once moved)
                self.actions[i] = plan()
            self._moves = []
        yield from super()._commit_steps()


def _refuse_unique_by_key(model: type[EntityLike], verb: str) -> None:
    """In ``atransaction()``: a write by key of a unique value needs a blocking read of the value stored."""
    raise ValidationError(
        f"{model.__name__}: in dynorm.atransaction(), {verb}() by key of an entity with unique constraints would "
        "need a blocking GetItem of its stored unique values (the sentinels to release); read the instance first "
        f"(obj = await {model.__name__}.objects.aget(...)) and pass it: tx.{verb}(obj, ...).", entity=model.__name__)


class atransaction:  # noqa: N801 - named like the function it mirrors
    """``async with dynorm.atransaction() as tx``: :func:`transaction` for asyncio.

    The block collects actions exactly as :func:`transaction` does (adding actions sends
    nothing); leaving it awaits one TransactWriteItems with the transaction's
    ClientRequestToken. If the block raises, nothing is sent. An instance read through
    ``Meta.read_versions`` is moved to its current keys on exit, just before the commit (a
    consistent GetItem and a TransactWriteItems, awaited), not when its action is added.

    Args:
        client_request_token: idempotency token (default: a new UUID).

    Raises:
        TransactionCanceled: DynamoDB cancelled it; nothing was written.
        ValidationError: bad input, more than 100 actions, or two actions on one item.
    """

    def __init__(self, client_request_token: str | None = None) -> None:
        self.tx: Transaction = _AsyncTransaction(client_request_token)

    async def __aenter__(self) -> Transaction:
        return self.tx

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            await self.tx.acommit()
