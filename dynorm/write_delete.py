"""Planning a DeleteItem and a transaction's ConditionCheck by instance or key."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from .exceptions import ValidationError
from .expressions import ExpressionBuilder, Q
from .write_conditions import finish_params, type_condition
from .write_keys import entity_key_text, is_instance, primary_key_of
from .write_op import WriteOp

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["prepare_delete", "prepare_check"]


# -- Delete ------------------------------------------------------------------------------
def prepare_delete(model: type[EntityLike], target: EntityLike | Mapping[str, Any], *,
                   condition: Q | None = None) -> WriteOp:
    """Plan a DeleteItem; an instance of a versioned entity is deleted only if unchanged.

    Conditional on the stored item being of ``model``'s entity type (an item of another type under
    the key is left alone, the op's error is ``DoesNotExist``); deleting no item stays a no-op,
    except for a versioned instance, whose version read says the item is there.

    Args:
        model: the entity class; target: an instance or a key dict of primary-key fields;
            condition: an extra ``Q`` that must hold on the stored item.

    Raises:
        ValidationError, InvalidKeyValue: a bad key.
    """
    meta = model._meta
    key = primary_key_of(model, target)
    b = ExpressionBuilder()
    conditions = []
    version = None
    instance: Any = target if is_instance(target) else None
    vf = meta.version_field
    if instance is not None and vf:
        version = getattr(instance, vf)
        if version is not None:
            conditions.append(f"{b.name(meta.fields[vf].attr_name)} = {b.value({'N': str(version)})}")
    # an item of another entity type under this key is not this entity's to delete; deleting
    # nothing stays a no-op, unless the version read says the item must be there
    conditions.insert(0, type_condition(b, meta, or_absent=version is None))
    if condition is not None:
        conditions.append(b.condition(condition, meta))
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Key": key}
    finish_params(params, b, conditions, meta.entity)
    return WriteOp("Delete", model, params, key, f"delete {meta.entity} {entity_key_text(model, target)}",
                   instance=instance, verb="delete", expected_version=version)


# -- ConditionCheck ----------------------------------------------------------------------
def prepare_check(model: type[EntityLike], target: EntityLike | Mapping[str, Any], condition: Q) -> WriteOp:
    """Plan a ConditionCheck on another item (transactions only: one action of TransactWriteItems).

    The check holds when ``condition`` holds on the item stored under the key, which must be of
    ``model``'s entity type or absent (a condition such as ``Q(name__exists=False)`` holds on no
    item); an item of another entity type there fails it.

    Args:
        model: the entity class; target: an instance or a key dict of primary-key fields;
            condition: the ``Q`` that must hold.

    Raises:
        ValidationError, InvalidKeyValue: a bad key or an empty condition (before any request).
    """
    meta = model._meta
    key = primary_key_of(model, target)
    b = ExpressionBuilder()
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Key": key}
    user = b.condition(condition, meta)
    if not user:
        raise ValidationError(f"{meta.entity}: check() needs a condition.", entity=meta.entity)
    # the condition is about this entity's item, or its absence (Q(name__exists=False) holds on no
    # item): an item of another entity type under this key fails the check
    finish_params(params, b, [type_condition(b, meta, or_absent=True), user], meta.entity)
    return WriteOp("ConditionCheck", model, params, key, f"check {meta.entity} {entity_key_text(model, target)}",
                   verb="check")
