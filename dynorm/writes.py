"""Pure planning of writes: PutItem, UpdateItem, DeleteItem and ConditionCheck requests.

Each ``prepare_*`` function validates its input (before any I/O), renders key attributes with
the one key renderer (:meth:`dynorm.options.Options.key_attributes`) and conditions, and returns
a :class:`WriteOp` holding the exact request. The same op is sent alone (:mod:`dynorm.sender`)
or inside a TransactWriteItems (:mod:`dynorm.transaction`) or a BatchWriteItem
(:mod:`dynorm.batch`); the sender then calls ``op.applied(...)`` or ``op.error(...)``.
Nothing here does I/O and nothing here changes an instance: only :meth:`WriteOp.applied` does,
after the write succeeded (through the instance's ``_state``).

This module is the planners' one import path; each job lives in its own module:

* :mod:`dynorm.write_op`: :class:`WriteOp`, the revision token, mapping a failed condition to an error;
* :mod:`dynorm.write_keys`: primary keys of targets, key values DynamoDB would refuse;
* :mod:`dynorm.write_conditions`: the entity-type condition, pins of rewritten index keys, finishing;
* :mod:`dynorm.write_put`: ``save()``/``create()`` (:func:`prepare_put`);
* :mod:`dynorm.write_update`: ``update(**changes)`` (:func:`prepare_update`);
* :mod:`dynorm.write_delete`: DeleteItem and ConditionCheck (:func:`prepare_delete`, :func:`prepare_check`);
* :mod:`dynorm.write_rollout`: older key versions (checks, deletes, the move to the current keys).

**Revision token.** Every Put and Update sets the table's revision attribute
(``_dynorm_rev`` by default) to a fresh random token. When botocore retries a request whose
response was lost although DynamoDB applied it, the retry's condition fails and DynamoDB
returns the stored item (``ReturnValuesOnConditionCheckFailure=ALL_OLD``): finding our own
token there proves the first attempt was applied, so the write is reported as done, exactly
once, at no extra request. Idempotent updates that no other condition protects carry the
condition ``attribute_not_exists(rev) OR rev <> :token`` for that purpose. That condition cannot
protect a non-idempotent update (``F("n") + 1``, ``append()``) when another write lands between
the lost attempt and the retry (the stored token is no longer ours), so such an update without a
version condition is marked ``once`` and sent as a one-action TransactWriteItems with a
``ClientRequestToken`` (see :mod:`dynorm.sender`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from . import write_delete, write_put, write_update
from .exceptions import ValidationError
from .write_conditions import MAX_EXPRESSION_BYTES, pin_key_sources, stored_knowledge
from .write_delete import prepare_check
from .write_keys import (
    check_index_attributes,
    check_key_sizes,
    check_lsi_values,
    is_instance,
    primary_key_of,
    stored_key,
)
from .write_op import WriteOp, decode_written, new_token, other_entity_type
from .write_rollout import (
    older_keys,
    prepare_create_checks,
    prepare_delete_older,
    prepare_move_to_current,
    prepare_older_checks,
    unchanged_condition,
)
from .write_unique import UPSERT, attach_unique, check_unique_changes, known_stored, touches_unique

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike
    from .expressions import Q

__all__ = ["FROM_INSTANCE", "UniqueValuesUnknown",
           "WriteOp", "new_token", "prepare_put", "prepare_delete", "prepare_update", "prepare_check",
           "primary_key_of",
           "check_key_sizes", "check_lsi_values", "decode_written", "is_instance", "unchanged_condition",
           "prepare_move_to_current", "older_keys", "prepare_delete_older", "prepare_create_checks",
           "prepare_older_checks", "other_entity_type",
           "check_index_attributes", "stored_key", "stored_knowledge", "pin_key_sources", "MAX_EXPRESSION_BYTES"]


# -- unique constraints: each planner's op with its sentinel actions (dynorm.write_unique) -----------
#: ``stored`` not given: taken from the instance (``_state.unique_as``).
FROM_INSTANCE: Any = object()


def prepare_put(obj: EntityLike, *, create: bool = False, update_fields: Iterable[str] | None = None,
                fresh: bool = False) -> WriteOp:
    """Plan ``save()``/``create()`` (:func:`dynorm.write_put.prepare_put`) with its unique-constraint sentinels.

    A creating Put claims each unique value; a save of a stored instance swaps the sentinels of the
    values it changes (known from the read, ``_state.unique_as``); a new instance's upsert claims its
    values on condition that the item is absent or already holds them.

    Raises:
        as :func:`dynorm.write_put.prepare_put`; UniqueValuesUnknown: a unique field's stored value
            is not known (read the item first: the write steps do).
    """
    if update_fields is not None and not isinstance(update_fields, str):
        update_fields = list(update_fields)
    op = write_put.prepare_put(obj, create=create, update_fields=update_fields, fresh=fresh)
    meta = obj._meta
    if not meta.constraints:
        return op
    names = None if update_fields is None else ([update_fields] if isinstance(update_fields, str)
                                                else list(update_fields))
    values = obj.attribute_values
    owner = {n: values.get(n) for n in meta.key_fields}
    current = {n: values.get(n) for n in meta.unique_fields}
    if op.kind == "Put":
        return attach_unique(op, stored=None, after=current, owner=owner)
    if names is None and obj._state.adding:
        return attach_unique(op, stored=UPSERT, after=current, owner=owner)
    stored = _stored_of(obj)
    after = current if names is None else {**stored, **{n: current[n] for n in names if n in current}}
    return attach_unique(op, stored=stored, after=after, owner=owner, names=names)


def prepare_update(model: type[EntityLike], *, instance: EntityLike | None = None,
                   key: Mapping[str, Any] | None = None, changes: Mapping[str, Any],
                   condition: Q | None = None, stored: Any = FROM_INSTANCE) -> WriteOp:
    """Plan ``update(**changes)`` (:func:`dynorm.write_update.prepare_update`) with its unique-constraint sentinels.

    Args:
        stored: for an update by key that changes a unique field, the unique fields' stored values
            (``None``: no item), read by the caller (one GetItem).

    Raises:
        as :func:`dynorm.write_update.prepare_update`; ValidationError: an ``F()`` on a unique field.
    """
    check_unique_changes(model, changes)
    op = write_update.prepare_update(model, instance=instance, key=key, changes=changes, condition=condition)
    if not touches_unique(model, list(changes)):
        return op
    if instance is not None:
        owner = {n: instance.attribute_values.get(n) for n in model._meta.key_fields}
        stored = _stored_of(instance)
    else:
        owner = dict(key or {})
        if stored is FROM_INSTANCE:
            raise UniqueValuesUnknown(f"{model.__name__}: an update by key of a unique field needs the stored values "
                                      "(dynorm reads them first).", entity=model.__name__)
    if stored is None:
        return op  # no item: the update fails (DoesNotExist), nothing to swap
    after = {**stored, **{n: v for n, v in changes.items() if n in stored}}
    return attach_unique(op, stored=stored, after=after, owner=owner, names=list(changes))


def prepare_delete(model: type[EntityLike], target: EntityLike | Mapping[str, Any], *,
                   condition: Q | None = None, stored: Any = FROM_INSTANCE) -> WriteOp:
    """Plan a DeleteItem (:func:`dynorm.write_delete.prepare_delete`) with the Deletes of its sentinels.

    Args:
        stored: for a delete by key, the unique fields' stored values (``None``: no item), read by
            the caller (one GetItem).
    """
    op = write_delete.prepare_delete(model, target, condition=condition)
    meta = model._meta
    if not meta.constraints:
        return op
    if is_instance(target):
        obj: Any = target
        owner = {n: obj.attribute_values.get(n) for n in meta.key_fields}
        stored = _stored_of(obj)
    else:
        owner = dict(target)  # type: ignore[arg-type]
        if stored is FROM_INSTANCE:
            raise UniqueValuesUnknown(f"{model.__name__}: a delete by key needs the stored unique values "
                                      "(dynorm reads them first).", entity=model.__name__)
    return attach_unique(op, stored=stored, after=None, owner=owner)


class UniqueValuesUnknown(ValidationError):
    """A write would change a unique field whose stored value the instance does not know (read it first)."""


def _stored_of(obj: EntityLike) -> dict[str, Any]:
    stored = known_stored(obj)
    if stored is None:
        meta = obj._meta
        missing = [n for n in meta.unique_fields if n not in obj._state.unique_as]
        raise UniqueValuesUnknown(
            f"{meta.entity}: the stored value of unique field(s) {', '.join(missing)} is not known (the instance "
            "was read without it), so its sentinel cannot be swapped; obj.refresh_from_db() first. Nothing was "
            "sent.", entity=meta.entity, field=missing[0])
    return stored
