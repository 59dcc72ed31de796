"""The write protocol of one instance: ``save()``, ``update()``, ``delete()`` and ``refresh_from_db()``.

Each is a generator of steps (``backend.Send``/``Sleep``), so ``Entity.save()`` (the sync driver)
and ``Entity.asave()`` (the asyncio driver) run the same protocol; the ``Entity`` methods only
drive these steps. Each reads top to bottom:

``save``
    1. load the deferred fields the write needs (one GetItem; :mod:`dynorm._deferred`);
    2. an instance read under an older key version is moved to the current one
       (:func:`dynorm.fallback.move_to_current_steps`);
    3. plan the write (:func:`dynorm.writes.prepare_put`);
    4. a creating Put during a rollout goes with a check per older key (``AlreadyExists`` naming
       the version); the upsert of a new unversioned instance too, and when a check finds an item
       under an older key, that item is the one this save changes: it is moved to the current keys
       (as ``get()`` finds it) and the save is planned again and sent there; any other write is
       sent alone (:func:`dynorm.sender.send_steps`).

``update``: the move (2), then one UpdateItem (:func:`dynorm.writes.prepare_update`).

``delete``: the move (2), then one DeleteItem, or with ``Meta.read_versions`` one
TransactWriteItems deleting its keys at the older versions too.

``refresh_from_db``: one consistent GetItem, whole or projected on the fields named.

Which way the upsert goes is decided from what DynamoDB said (the cancellation reason of each
action, :class:`dynorm.sender.Refused`), not by catching the error a user would see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from . import backend
from ._deferred import load_needed_steps
from .exceptions import ValidationError
from .fallback import move_to_current_steps, resolve_older_steps
from .fields import decode_item
from .sender import send_checked_steps, send_create_steps, send_steps
from .transaction import send_delete_steps
from .unique_reads import know_unique_steps
from .writes import (
    WriteOp,
    prepare_create_checks,
    prepare_delete,
    prepare_delete_older,
    prepare_older_checks,
    prepare_put,
    prepare_update,
    stored_key,
)

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike
    from .expressions import Q

__all__ = ["save_steps", "update_steps", "delete_steps", "refresh_steps"]


# -- save --------------------------------------------------------------------------------------
def save_steps(obj: EntityLike, update_fields: Iterable[str] | None, create: bool) -> backend.Steps:
    """The requests of ``obj.save(update_fields=..., _create=...)`` (see ``Entity.save``).

    Requests: PutItem or UpdateItem; preceded by a GetItem when a deferred field is needed, by the
    move (GetItem + TransactWriteItems) for an instance read under an older key version; during a
    rollout a create or a new instance's upsert is one TransactWriteItems with its checks, and an
    upsert that finds an item under an older key adds get()'s GetItems, the move and the UpdateItem.

    Raises:
        as ``Entity.save``: ValidationError, InvalidKeyValue, KeyChangeError, StaleWrite,
        AlreadyExists, DoesNotExist.
    """
    update_fields = yield from _load_needed_steps(obj, update_fields)
    yield from move_to_current_steps(obj)  # read under an older key version: moved to the current one first
    yield from know_unique_steps(obj)  # a unique value not read: one GetItem (dynorm.unique_reads)
    op = prepare_put(obj, create=create, update_fields=update_fields)
    # during a rollout an item may exist only under an older key: creating one under the current
    # key would hide it from every read, so a create checks those keys too
    checks = prepare_create_checks(op)
    if checks:
        yield from send_create_steps(op, checks)
        return
    older = prepare_older_checks(op) if op.kind == "Update" and obj._state.adding else []
    if older:
        sent = yield from _upsert_steps(op, older)
        if sent:
            return
        # the item stored under an older key is the one this save changes: moved to the current
        # keys (as get() would find it), then the save is planned again and sent there
        yield from resolve_older_steps(type(obj), obj.key)
        op = prepare_put(obj, create=create, update_fields=update_fields)
    yield from send_steps(op)


def _load_needed_steps(obj: EntityLike, update_fields: Iterable[str] | None) -> backend.Steps:
    """Load the deferred fields the save needs first (one GetItem); return ``update_fields`` as a list.

    As Django does: a deferred field the write needs (a named field, or a field of an index key it
    rewrites) is loaded first, never written as None; a whole save needs every field (one changed
    by an F() whose result did not come back). A partial instance saved whole is refused by the
    planner, so nothing is loaded for it.
    """
    state = obj._state
    if state.deferred is None or isinstance(update_fields, str):
        return update_fields
    meta = obj._meta
    if update_fields is None:
        needed = set() if state.partial else set(meta.fields)
    else:
        update_fields = list(update_fields)
        names = set(update_fields)
        needed = set(names)
        for bound in meta.indexes.values():
            if bound.writes_key_attributes and names & set(bound.fields):
                needed |= set(bound.fields)
    yield from load_needed_steps(obj, needed)
    return update_fields


def _upsert_steps(op: WriteOp, older: list[WriteOp]) -> backend.Steps:
    """Send a new unversioned instance's upsert with a check per older key (one TransactWriteItems).

    Returns:
        True when it was written; False when a check found an item under an older key (nothing
        was written: the caller moves that item and sends the upsert again).

    Raises:
        AlreadyExists: only the upsert's own condition failed (an item of another entity type is
            stored under the current key); nothing was written.
    """
    refused = yield from send_checked_steps(op, older)
    if refused is None:
        return True
    if refused.older_item:
        return False
    raise refused.error() from refused.cause


# -- update and delete -------------------------------------------------------------------------
def update_steps(obj: EntityLike, condition: Q | None, changes: dict[str, Any]) -> backend.Steps:
    """The requests of ``obj.update(condition=..., **changes)``: the move when read under an older key
    version, then one UpdateItem (a TransactWriteItems + GetItem for an unversioned ``F()`` increment).

    Returns:
        ``obj``, refreshed from the item as written.
    """
    yield from move_to_current_steps(obj)  # read under an older key version: moved to the current one first
    yield from know_unique_steps(obj)  # a unique value not read: one GetItem (dynorm.unique_reads)
    yield from send_steps(prepare_update(type(obj), instance=obj, changes=changes, condition=condition))
    return obj


def delete_steps(obj: EntityLike, condition: Q | None) -> backend.Steps:
    """The requests of ``obj.delete(condition=...)``: the move when read under an older key version, then
    one DeleteItem, or one TransactWriteItems that also deletes its keys at the older versions
    ``Meta.read_versions`` lists."""
    yield from move_to_current_steps(obj)  # read under an older key version: moved to the current one first
    yield from know_unique_steps(obj)  # a unique value not read: one GetItem (dynorm.unique_reads)
    model = type(obj)
    yield from send_delete_steps(prepare_delete(model, obj, condition=condition), prepare_delete_older(model, obj))


# -- refresh_from_db ---------------------------------------------------------------------------
def refresh_steps(obj: EntityLike, fields: Iterable[str] | None = None) -> backend.Steps:
    """The request of ``obj.refresh_from_db(fields=...)``: one GetItem (ConsistentRead).

    Raises:
        Entity.DoesNotExist: the item is gone. ValidationError: an unknown field name (before any
        request). UnreadableItems: the stored item cannot be decoded; the instance is unchanged.
    """
    names = _refresh_names(obj, fields)
    if names == []:
        return
    resp = yield backend.Send("GetItem", _refresh_params(obj, names), entities=(type(obj),))
    if "Item" not in resp:
        raise obj.DoesNotExist(f"{obj._meta.entity} with {obj._describe_key()} no longer exists.")
    if names is None:
        _take_whole(obj, resp["Item"])
    else:
        _take_fields(obj, names, resp["Item"])


def _refresh_names(obj: EntityLike, fields: Iterable[str] | None) -> list[str] | None:
    """The field names to reload (``None``: all), each checked against the entity's fields."""
    if fields is None:
        return None
    meta = obj._meta
    names = [fields] if isinstance(fields, str) else list(dict.fromkeys(fields))
    for n in names:
        if n not in meta.fields:
            raise ValidationError(f"{meta.entity}.refresh_from_db(fields=...): {meta.entity} has no field "
                                  f"{n!r}; fields: {', '.join(meta.fields)}.", entity=meta.entity, field=n)
    return names


def _refresh_params(obj: EntityLike, names: list[str] | None) -> dict[str, Any]:
    """The GetItem of a refresh: consistent, projected on the entity type and ``names`` when given."""
    meta = obj._meta
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Key": stored_key(obj),
                              "ConsistentRead": True, "ReturnConsumedCapacity": "TOTAL"}
    if names is not None:
        attrs = [meta.table._meta.type_attribute, *(meta.fields[n].attr_name for n in names)]
        params["ProjectionExpression"] = ", ".join(f"#r{i}" for i in range(len(attrs)))
        params["ExpressionAttributeNames"] = {f"#r{i}": a for i, a in enumerate(attrs)}
    return params


def _take_whole(obj: EntityLike, raw: dict[str, Any]) -> None:
    """Make ``obj`` the item read: every field, and no longer new, partial or deferred."""
    decoded = decode_item(type(obj), raw)
    state = obj._state
    obj.attribute_values = decoded.attribute_values
    state.read_as = decoded._state.read_as
    state.unique_as = decoded._state.unique_as
    # it now holds what the table holds, as an instance from get() does: save() must not
    # re-create the item if it is deleted meanwhile (an UpdateItem on attribute_exists)
    state.adding = False
    state.partial = False
    state.deferred = None
    state.unread = frozenset()


def _take_fields(obj: EntityLike, names: list[str], raw: dict[str, Any]) -> None:
    """Take ``names`` from the projected item read; the other fields keep their values."""
    decoded = decode_item(type(obj), {**stored_key(obj), **raw})
    loaded = decoded.attribute_values
    state = obj._state
    for n in names:
        if n in loaded:
            obj.attribute_values[n] = loaded[n]
        else:  # not stored (an optional field left unset)
            obj.attribute_values.pop(n, None)
        state.read_as.pop(n, None)
        if n in decoded._state.unique_as:
            state.unique_as[n] = decoded._state.unique_as[n]
        if n in decoded._state.read_as:
            state.read_as[n] = decoded._state.read_as[n]
    state.unread = state.unread - set(names)
    if state.deferred is not None:
        unread = frozenset(state.deferred[0]) - set(names)
        state.deferred = (unread, state.deferred[1]) if unread else None
        if not unread:
            state.partial = False
