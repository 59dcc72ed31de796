"""Planning ``update(**changes)``: one UpdateItem of plain values and ``F()`` expressions (:func:`prepare_update`)."""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from .exceptions import KeyChangeError, ValidationError
from .expressions import ExpressionBuilder, F, Q, field_of, plain_value, serialize_value
from .write_conditions import finish_params, pin_key_sources, stored_knowledge, type_condition
from .write_keys import check_index_attributes, check_key_sizes, check_lsi_values, primary_key_of
from .write_op import WriteOp, new_token

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["prepare_update", "unread_after_write"]


# -- Update ------------------------------------------------------------------------------
def _value_av(meta: Any, name: str, value: Any) -> dict[str, Any]:
    return serialize_value(meta, name, value, purpose="stored")


def _idempotent(expr: F) -> bool:
    """False for an expression whose second application changes the item again (+, -, append)."""
    return not any(op in ("+", "-", "append") for op, _ in expr.ops)


def _operand(b: ExpressionBuilder, meta: Any, target: str, expr: F) -> tuple[str, str | None]:
    """Render an F expression; return (SET operand, or None) and an ADD/DELETE clause."""
    source = field_of(meta, expr.name)
    path = b.name(source.attr_name)
    ops = list(expr.ops)
    if ops and ops[0][0] in ("add", "discard"):
        if len(ops) != 1 or expr.name != target:
            raise ValidationError(f"{meta.entity}.{target}: set add/discard must be F({target!r}).add(...) alone.",
                                  entity=meta.entity, field=target)
        if not meta.fields[target].is_set:
            raise ValidationError(f"{meta.entity}.{target} is not a fields.Set; add()/discard() work on sets.",
                                  entity=meta.entity, field=target)
        av = _value_av(meta, target, set(ops[0][1]))
        return "", f"{'ADD' if ops[0][0] == 'add' else 'DELETE'} {path} {b.value(av)}"
    text = path
    arithmetic = 0
    for i, (op, value) in enumerate(ops):
        if op == "if_not_exists":
            if i != 0:
                raise ValidationError(f"{meta.entity}.{target}: if_not_exists() must come first in the expression.",
                                      entity=meta.entity, field=target)
            text = f"if_not_exists({path}, {b.value(_value_av(meta, expr.name, value))})"
        elif op in ("+", "-"):
            arithmetic += 1
            if arithmetic > 1:
                raise ValidationError(f"{meta.entity}.{target}: DynamoDB allows one + or - per update.",
                                      entity=meta.entity, field=target, value=expr)
            if isinstance(value, bool) or not isinstance(value, (int, float)) and type(value).__name__ != "Decimal":
                raise ValidationError(f"{meta.entity}.{target}: {op} needs a number, got {value!r}.",
                                      entity=meta.entity, field=target, value=value)
            text = f"{text} {op} {b.value(plain_value(meta, target, value, op))}"
        elif op == "append":
            if not meta.fields[target].is_list:
                raise ValidationError(f"{meta.entity}.{target} is not a fields.List; append() works on lists.",
                                      entity=meta.entity, field=target)
            text = f"list_append({text}, {b.value(plain_value(meta, target, list(value), 'append()'))})"
    return text, None


def prepare_update(model: type[EntityLike], *, instance: EntityLike | None = None,
                   key: Mapping[str, Any] | None = None, changes: Mapping[str, Any],
                   condition: Q | None = None) -> WriteOp:
    """Plan one UpdateItem (ReturnValues ALL_NEW) for ``changes``.

    Args:
        model: the entity class.
        instance: the instance read (its version is checked), or ``None``.
        key: primary-key fields when there is no instance.
        changes: field -> plain value, ``None`` (REMOVE), or an :class:`F` expression.
        condition: an extra condition on the stored item.

    The update is conditional on the item existing with ``model``'s entity type (an item of
    another entity type under the key fails it: ``DoesNotExist``), on the version read (versioned
    instance), on the pinned fields of rewritten index keys, and on ``condition``.

    Raises:
        ValidationError: unknown field, wrong type, a required field set to None, an
            expression on a field an index key is built from, or index fields unknown.
        KeyChangeError: a primary-key field is changed.
    """
    meta = model._meta
    tmeta = meta.table._meta
    entity = meta.entity
    if not changes:
        raise ValidationError(f"{entity}.update() needs at least one field to change.", entity=entity)
    for name, value in changes.items():
        if name not in meta.fields:
            raise ValidationError(f"{entity} has no field {name!r}; fields: {', '.join(meta.fields)}.",
                                  entity=entity, field=name, value=value)
        if name in meta.key_fields:
            raise KeyChangeError(f"{entity}.{name} is part of the primary key; keys are immutable. Create a new "
                                 "item and delete the old one instead.")
        if name == meta.version_field:
            raise ValidationError(f"{entity}.{name} is the version field; dynorm increments it itself.",
                                  entity=entity, field=name)
    target_key = primary_key_of(model, instance if instance is not None else (key or {}))
    b = ExpressionBuilder()
    sets: list[str] = []
    removes: list[str] = []
    adds: list[str] = []
    plain: dict[str, Any] = {}
    for name, value in changes.items():
        f = meta.fields[name]
        path = b.name(f.attr_name)
        if isinstance(value, F):
            text, clause = _operand(b, meta, name, value)
            if clause:
                adds.append(clause)
            else:
                sets.append(f"{path} = {text}")
        elif value is None:
            if not f.null:
                raise ValidationError(f"{entity}.{name} is required and cannot be removed (set to None).",
                                      entity=entity, field=name)
            removes.append(path)
            plain[name] = None
        else:
            av = _value_av(meta, name, value)
            check_index_attributes(meta, {f.attr_name: av})
            plain[name] = f.validate(value, entity)
            check_lsi_values(meta, {f.attr_name: av}, plain)
            sets.append(f"{path} = {b.value(av)}")
    now = _dt.datetime.now(_dt.timezone.utc)
    for name, f in meta.fields.items():
        if getattr(f, "auto_now", False) and name not in changes:
            sets.append(f"{b.name(f.attr_name)} = {b.value({'S': f.serialize(now)})}")
            plain[name] = now
    written = set(changes) | set(plain)

    # Index keys built from changed fields are rewritten in the same request, from values the
    # write knows: the other fields they are built from are pinned at their stored values
    for bound in meta.indexes.values():
        if bound.writes_key_attributes:
            exprs = sorted(n for n in bound.fields if isinstance(changes.get(n), F))
            if exprs:
                raise ValidationError(
                    f"{entity}.{exprs[0]} is part of index {bound.name} ({bound.index_name}); give a plain value, not "
                    "an expression, so the index key can be recomputed in the same request.", entity=entity,
                    field=exprs[0])
    known, unknown = stored_knowledge(model, instance, key)
    if instance is not None:
        known.update(instance.key)
    known.update(plain)
    pin_conditions, pins, pinned_as = pin_key_sources(model, b, written, known, unknown,
                                                      instance._state.read_as if instance is not None else None)
    multi_attrs = {a for multi in meta.table._meta.multi_gsis.values() for a in multi.attributes}
    if multi_attrs:
        # the sum of a multi-attribute GSI's key attributes, with the values the item will hold
        # (those known: the instance read, the key, the changes)
        check_index_attributes(meta, {f.attr_name: _value_av(meta, n, known[n]) for n, f in meta.fields.items()
                                      if f.attr_name in multi_attrs and known.get(n) is not None
                                      and not isinstance(known[n], F)})
    key_values: dict[str, Any] = {}
    index_attrs: dict[str, str | None] = {}  # an attribute shared by two rewritten indexes is sent once
    for bound in meta.indexes.values():
        if not bound.writes_key_attributes:
            continue
        if not (set(bound.fields) - set(meta.key_fields)) & written:
            continue
        index_attrs.update(meta.index_key(bound, known, target_key[tmeta.pk_attribute]["S"]))
    for attr, key_text in index_attrs.items():
        key_values[model._dynamo_to_python_attr(attr)] = key_text
        if key_text is None:
            removes.append(b.name(attr))
        else:
            check_key_sizes(meta, {attr: str(key_text)}, known)
            sets.append(f"{b.name(attr)} = {b.value({'S': key_text})}")

    conditions = [type_condition(b, meta)]  # the item exists, and is this entity's
    vf = meta.version_field
    expected = new_version = None
    if vf:
        vpath = b.name(meta.fields[vf].attr_name)
        current = getattr(instance, vf) if instance is not None else None
        if current is not None:
            expected, new_version = current, current + 1
            conditions.append(f"{vpath} = {b.value({'N': str(current)})}")
            sets.append(f"{vpath} = {b.value({'N': str(new_version)})}")
        else:
            sets.append(f"{vpath} = if_not_exists({vpath}, {b.value({'N': '0'})}) + {b.value({'N': '1'})}")
    conditions += pin_conditions
    token = new_token()
    rev = b.name(tmeta.revision_attribute)
    tok = b.value({"S": token})
    sets.append(f"{rev} = {tok}")
    once = expected is None and any(isinstance(v, F) and not _idempotent(v) for v in changes.values())
    if expected is None and not once:
        # a retried idempotent request finds its own token stored and fails, and the sender
        # reports the first attempt's result (applying it again would change nothing anyway)
        conditions.append(f"attribute_not_exists({rev}) OR {rev} <> {tok}")
    if condition is not None:
        conditions.append(b.condition(condition, meta))
    clauses = []
    if sets:
        clauses.append("SET " + ", ".join(sets))
    if removes:
        clauses.append("REMOVE " + ", ".join(removes))
    clauses += adds
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Key": target_key,
                              "UpdateExpression": " ".join(clauses)}
    finish_params(params, b, conditions, meta.entity)
    shown = instance.key if instance is not None else {k: v for k, v in (key or {}).items() if k in meta.key_fields}
    return WriteOp("Update", model, params, target_key,
                   f"update {entity} {', '.join(f'{k}={v!r}' for k, v in shown.items())}",
                   instance=instance, verb="update", expected_version=expected, new_version=new_version,
                   local_changes=plain, key_values=key_values, token=token, returns_item=True, once=once,
                   pins=pins, pinned_as=pinned_as,
                   expression_fields=frozenset(n for n, v in changes.items() if isinstance(v, F)),
                   unread_after=unread_after_write(instance, written), entity_key=dict(shown), changes=dict(changes))


def unread_after_write(instance: EntityLike | None, written: Iterable[str]) -> frozenset[str] | None:
    """The fields an instance still has not read once ``written`` are written (see ``ModelState.unread``)."""
    if instance is None:
        return None
    meta = instance._meta
    state = instance._state
    if state.adding:
        before = {n for n in meta.fields if n not in meta.key_fields and n != meta.version_field}
    else:
        before = set(state.unread)
    return frozenset(before - set(written))
