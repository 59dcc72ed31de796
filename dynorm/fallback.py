"""Writes on an instance read through ``Meta.read_versions`` land on the current key version.

An instance that ``get()`` found under an older key version (``obj._state.fallback``) is first
moved: one consistent GetItem of the old item, then one TransactWriteItems that puts it, every
attribute as stored (undeclared ones and the revision token included), under the current keys
and deletes the old item conditional on it being unchanged (planned by
:func:`dynorm.writes.prepare_move_to_current`). Only then is the write itself (save, update,
delete) planned and sent as usual against the current keys, with its usual conditions (the
version read, ``condition=``...). The move changes no value, so it is harmless even when the
write after it fails; and since the old item is gone, no later read (nor ``DeleteVersion``)
sees the old value, and an index field changed by the write is listed once.

Races: the old item was written since the instance read it (another revision token than the
one read, ``obj._state.fallback_revision``) -> :class:`~dynorm.exceptions.StaleWrite`, nothing
is moved or deleted; the old item changed since the GetItem -> read it again and retry; the old item is
gone (a migration moved it, or it was deleted) -> nothing to move, the write goes to the
current keys; an item under the current keys with another token (written there since) -> it
is the current one: the old leftover is deleted (conditional on being unchanged) and the
write goes to the current item.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Mapping

from . import backend
from .backend import RetryPolicy
from .exceptions import ConditionFailed, StaleWrite, TransactionCanceled
from .registry import default_manager
from .writes import older_keys, other_entity_type, prepare_move_to_current

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["move_to_current", "move_to_current_steps", "resolve_older_steps"]

ATTEMPTS = 8


def move_to_current(obj: EntityLike) -> None:
    """Move ``obj``'s item to the current key version (see :func:`move_to_current_steps`)."""
    backend.drive(move_to_current_steps(obj))


def move_to_current_steps(obj: EntityLike) -> backend.Steps:
    """Move ``obj``'s item from the older key version it was read under to the current one.

    A no-op for an instance not read through ``Meta.read_versions``. Afterwards the instance
    points at its current keys (``obj._state.fallback`` is ``None``). Each attempt
    (:func:`_move_attempt_steps`) ends moved, gone or changed; a changed item is read again
    after a backoff.

    Requests: GetItem (ConsistentRead) + TransactWriteItems per attempt (a DeleteItem when the
    current item exists already).

    Raises:
        StaleWrite: the old item was written since ``obj`` was read, or kept changing for 8
            attempts; nothing was written.
        DoesNotExist: an item of another entity type is stored under the current keys; nothing was written.
        InvalidKeyValue: a stored value cannot be put in the current keys.
        ServiceError: DynamoDB refused a request.
    """
    state = obj._state
    if not state.fallback:
        return
    meta = obj._meta
    old_key = meta.primary_key(obj.attribute_values, state.fallback)  # key fields are always read
    policy = RetryPolicy()
    for attempt in range(ATTEMPTS):
        outcome = yield from _move_attempt_steps(obj, old_key)
        if outcome != CHANGED:
            break
        yield backend.Sleep(policy.delay(attempt + 1))
    else:
        raise StaleWrite(f"{meta.entity} {obj.key}: the item read under key version {state.fallback!r} kept "
                         f"changing while it was moved to version {meta.key_version!r} ({ATTEMPTS} attempts); "
                         "nothing was written. Read it again and retry.")
    _point_at_current_keys(obj)


#: How one attempt of a move ended: the item is under the current keys, was not there to move, or
#: changed while it was moved (read it again).
MOVED, GONE, CHANGED = "moved", "gone", "changed"


def _move_attempt_steps(obj: EntityLike, old_key: dict[str, Any]) -> backend.Steps:
    """Read the old item, then move it (one TransactWriteItems); return MOVED, GONE or CHANGED."""
    model = type(obj)
    meta = model._meta
    raw = (yield backend.Send("GetItem", {"TableName": meta.table.table_name(), "Key": old_key,
                                          "ConsistentRead": True}, entities=(model,))).get("Item")
    if raw is None:
        return GONE  # moved by a migration, or deleted: the write goes to the current keys
    _refuse_written_since(obj, raw)
    put, delete = prepare_move_to_current(model, raw)
    canceled = yield from _transact_steps(model, [{"Put": put}, {"Delete": delete}])
    if canceled is None:
        return MOVED
    codes = [str(r.get("code")) for r in canceled.reasons]
    if codes[:1] != ["ConditionalCheckFailed"]:
        return CHANGED  # the Delete's condition failed (the old item changed), or a conflict
    other = other_entity_type(model, canceled.reasons[0].get("item"))
    if other is not None:
        # not this entity's item: neither the current one nor a copy, so the old item is no
        # leftover (deleting it would lose it) and nothing may be written there
        raise model.DoesNotExist(
            f"{meta.entity} {obj.key} was read under key version {obj._state.fallback!r} and cannot move to "
            f"version {meta.key_version!r}: {other} is stored under its current keys; nothing was "
            "written. Give the two entity types distinct key templates (dynorm check reports the "
            "overlap).") from canceled
    # an item written under the current keys since: it is the current one; drop the leftover
    dropped = yield from _delete_leftover_steps(model, old_key, delete)
    return MOVED if dropped else CHANGED


def _refuse_written_since(obj: EntityLike, raw: Mapping[str, Any]) -> None:
    """Refuse to move an old item written since ``obj`` read it (another revision token)."""
    state = obj._state
    meta = obj._meta
    read = state.fallback_revision
    rev = meta.table._meta.revision_attribute
    if read is not None and read.get(rev) != raw.get(rev):
        # written since this instance read it (an application still on that version): moving it
        # (or deleting it as a leftover) would carry or drop a write this instance never saw
        raise StaleWrite(f"{meta.entity} {obj.key}: the item read under key version {state.fallback!r} was "
                         f"written since (revision {raw.get(rev, {}).get('S')!r}, read as "
                         f"{read.get(rev, {}).get('S')!r}); nothing was written. Read it again and retry.")


def _transact_steps(model: type[EntityLike], items: list[dict[str, Any]]) -> backend.Steps:
    """Send one TransactWriteItems; return ``None`` when it committed, else the cancellation (reasons per action)."""
    try:
        yield backend.Send("TransactWriteItems", {"TransactItems": items, "ClientRequestToken": str(uuid.uuid4())},
                           entities=(model,))
    except TransactionCanceled as exc:
        return exc
    return None


def _delete_leftover_steps(model: type[EntityLike], old_key: dict[str, Any], delete: dict[str, Any]) -> backend.Steps:
    """Delete the old item, conditional on it being unchanged (DeleteItem); return False when it changed."""
    params: dict[str, Any] = {"TableName": delete["TableName"], "Key": old_key,
                              "ConditionExpression": delete["ConditionExpression"],
                              "ExpressionAttributeNames": delete["ExpressionAttributeNames"]}
    if delete.get("ExpressionAttributeValues"):
        params["ExpressionAttributeValues"] = delete["ExpressionAttributeValues"]
    try:
        yield backend.Send("DeleteItem", params, entities=(model,))
    except ConditionFailed:
        return False  # the old item changed meanwhile: read it again
    return True


def _point_at_current_keys(obj: EntityLike) -> None:
    """After the move: the instance holds its current key attributes and no longer names the old version."""
    model = type(obj)
    values = obj.attribute_values
    for attr, text in model._meta.key_attributes(values).items():
        name = model._dynamo_to_python_attr(attr)
        if text is None:
            values.pop(name, None)
        else:
            values[name] = text
    obj._state.fallback = None
    obj._state.fallback_revision = None


def resolve_older_steps(model: type[EntityLike], key: Mapping[str, Any]) -> backend.Steps:
    """Follow ``get()``'s ``Meta.read_versions`` fallback before a write by key: when the item is not
    under the current keys but under an older version's, move it to the current keys first
    (:func:`move_to_current_steps`; the move changes no value), so the write lands on it.

    Requests (only with older read_versions): a consistent GetItem per version tried, then the move
    (GetItem + TransactWriteItems) when the item was found under an older version.

    Raises:
        StaleWrite: the item kept changing while it was moved; nothing was written.
    """
    if not older_keys(model, key):
        return
    try:
        obj = yield from default_manager(model).consistent()._get_steps((), dict(key))
    except model.DoesNotExist:
        return  # nowhere: the write goes to the current keys, as without read_versions
    yield from move_to_current_steps(obj)
