"""Pure planning of writes: PutItem, UpdateItem, DeleteItem and ConditionCheck requests.

Each ``prepare_*`` function validates its input (before any I/O), computes key attributes
and conditions, and returns a :class:`WriteOp` holding the exact request. The same op is
sent alone (``op.request()``) or inside a TransactWriteItems (``op.transact_item()``); the
caller sends it and then calls ``op.applied(...)`` or ``op.error(...)``. Nothing here does I/O.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from . import _codec
from .exceptions import (
    AlreadyExists,
    ConditionFailed,
    DynormError,
    InvalidKeyValue,
    KeyChangeError,
    StaleWrite,
    ValidationError,
)
from .expressions import ExpressionBuilder, F, Q, field_of, plain_value, serialize_value

if TYPE_CHECKING:  # pragma: no cover
    from .models import Entity

__all__ = ["WriteOp", "prepare_put", "prepare_delete", "prepare_update", "prepare_check", "primary_key_of",
           "check_key_sizes"]


@dataclass
class WriteOp:
    """One planned write.

    Attributes:
        kind: ``"Put"``, ``"Update"``, ``"Delete"`` or ``"ConditionCheck"``.
        model: the entity class; instance: the instance written (if any).
        params: request parameters shared by the single and the transactional form.
        key: the primary key in DynamoDB JSON (identifies the item: no two ops of one
            transaction or batch may share it).
        description: ``"update Product product_id='01J…'"`` for messages.
        create: the op must not overwrite (``create``).
        expected_version, new_version: optimistic-locking versions (``None`` when unversioned).
        local_changes: plain field values to apply to the instance after a transaction.
    """

    kind: str
    model: type[Entity]
    params: dict[str, Any]
    key: dict[str, Any]
    description: str
    instance: Entity | None = None
    create: bool = False
    expected_version: int | None = None
    new_version: int | None = None
    local_changes: dict[str, Any] = field(default_factory=dict)

    @property
    def identity(self) -> tuple[str, str, str]:
        """(table, partition key, sort key) of the item written."""
        values = [next(iter(v.values())) for v in self.key.values()]
        return (self.params["TableName"], str(values[0]), str(values[1]) if len(values) > 1 else "")

    def request(self) -> tuple[str, dict[str, Any]]:
        """Return (operation, params) for sending this op alone."""
        params = dict(self.params)
        params["ReturnConsumedCapacity"] = "TOTAL"
        if self.kind == "Update":
            params["ReturnValues"] = "ALL_NEW"
        if "ConditionExpression" in params:
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        if self.kind == "ConditionCheck":
            # a lone condition check is a GetItem-free conditional no-op: an UpdateItem that
            # changes nothing would still write, so it is only offered inside transactions
            raise DynormError("a ConditionCheck can only be sent inside dynorm.transaction().")
        return f"{self.kind}Item", params

    def transact_item(self) -> dict[str, Any]:
        """Return this op as one element of TransactWriteItems' ``TransactItems``."""
        params = dict(self.params)
        if "ConditionExpression" in params:
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        return {self.kind: params}

    def error(self, exc: ConditionFailed | None, raw_item: Mapping[str, Any] | None = None) -> DynormError:
        """Map a failed condition into the error users see (the table is unchanged)."""
        raw = raw_item if raw_item is not None else (exc.item if exc is not None else None)
        name = self.model.__name__
        if self.create or (self.kind == "Put" and self.expected_version is None and self.new_version == 1):
            return AlreadyExists(f"{name} with {_describe(self)} already exists; nothing was overwritten. "
                                 "Read it with get() or change it with save() on the instance read.")
        if self.kind == "Update" and raw is None:
            return self.model.DoesNotExist(
                f"{name} with {_describe(self)} does not exist; update() changes existing items only "
                "(use create() or get_or_create()).")
        vf = self.model._meta.version_field
        if vf and self.expected_version is not None:
            stored = None
            if raw is not None:
                av = raw.get(self.model._meta.fields[vf].attr_name)
                stored = int(av["N"]) if av else None
            if raw is None or stored != self.expected_version:
                what = "was deleted" if raw is None else f"is now at version {stored}"
                return StaleWrite(
                    f"{name} with {_describe(self)} changed since it was read (expected version "
                    f"{self.expected_version}, it {what}); nothing was written. Re-read it "
                    "(refresh_from_db()) and apply the change again, or use objects.update_with_retry().")
        item = self.model.from_raw_data(dict(raw)) if raw else None
        return ConditionFailed(f"{self.description}: the condition did not hold; nothing was written.", item=item)

    def applied(self, attributes: Mapping[str, Any] | None = None) -> Entity | None:
        """Apply a successful write to the instance (new version, ALL_NEW attributes); return it."""
        obj = self.instance
        if attributes is not None:
            if obj is None:
                obj = self.model.from_raw_data(dict(attributes))
            else:
                obj.deserialize(dict(attributes))
                obj._dynorm_partial = False
            return obj
        if obj is not None:
            obj.__dict__.pop("_dynorm_fallback", None)
            for name, value in self.local_changes.items():
                setattr(obj, name, value)
            vf = self.model._meta.version_field
            if vf and self.new_version is not None:
                setattr(obj, vf, self.new_version)
        return obj


def _describe(op: WriteOp) -> str:
    # every description in this module is "<verb> <Entity> <key fields>"
    return op.description.split(" ", 2)[2]


def _finish(params: dict[str, Any], b: ExpressionBuilder, conditions: list[str]) -> None:
    conditions = [c for c in conditions if c]
    if conditions:
        params["ConditionExpression"] = " AND ".join(f"({c})" if len(conditions) > 1 else c for c in conditions)
    if b.names:
        params["ExpressionAttributeNames"] = dict(b.names)
    if b.values:
        params["ExpressionAttributeValues"] = dict(b.values)


def check_key_sizes(meta: Any, attributes: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """Refuse key attributes longer than DynamoDB allows, measured on their final text.

    Args:
        meta: the entity's ``Options``.
        attributes: key attribute name -> rendered value (text, ``{"S": text}``, or ``None`` for
            a sparse index), as they would be sent: table keys and index keys alike.
        values: field name -> value, to name the field and value behind a too-long key.

    Raises:
        InvalidKeyValue: a partition key over 2048 bytes or a sort key over 1024 bytes (UTF-8),
            naming the entity, the attribute, the longest field in its template and its value.
    """
    tmeta = meta.table._meta
    for attr, rendered in attributes.items():
        text = rendered.get("S") if isinstance(rendered, dict) else rendered
        if not isinstance(text, str) or len(text) <= _ALWAYS_FITS:
            continue
        # an attribute that is a sort key anywhere (table, GSI, LSI) gets the sort-key limit
        sort_attrs = {tmeta.sk_attribute, *(sk for _, sk in tmeta.gsis.values()), *tmeta.lsis.values()}
        problem = _codec.key_size_problem(text, attr not in sort_attrs)
        if problem is None:
            continue
        sources = [f for b in meta.all_indexes for t, a in ((b.pk, b.pk_attr), (b.sk, b.sk_attr))
                   if t is not None and a == attr for f in t.fields]
        sources += [n for n, f in meta.fields.items() if f.attr_name == attr]  # an LSI on a field's attribute
        if attr in sort_attrs and attr != tmeta.sk_attribute:
            roles = [name for name, (_, sk) in tmeta.gsis.items() if sk == attr]
            roles += [name for name, sk in tmeta.lsis.items() if sk == attr]
            problem += f" ({attr} is the sort key of index {', '.join(roles)})"
        field = max(sources, key=lambda f: len(str(values.get(f, ""))), default=None)
        value = values.get(field) if field else text
        raise InvalidKeyValue(
            f"{meta.entity}.{field or attr}={_short(value)}: key attribute {attr} would be {problem}; "
            "shorten the value (or keep it out of key templates). Nothing was sent.",
            entity=meta.entity, field=field, value=value)


# 256 characters are at most 1024 UTF-8 bytes: such a key fits every limit, nothing to measure
_ALWAYS_FITS = _codec.MAX_SORT_KEY_BYTES // 4


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}...({len(text)} characters)"


def primary_key_of(model: type[Entity], key: Mapping[str, Any] | Entity) -> dict[str, Any]:
    """Return the primary key (DynamoDB JSON) for a key dict of primary-key fields or an instance.

    Raises:
        ValidationError: the dict misses a primary-key field or names an unknown field.
        InvalidKeyValue: a value cannot be put in a key.
    """
    from .models import Entity

    meta = model._meta
    if isinstance(key, Entity):
        if not isinstance(key, model):
            raise ValidationError(f"expected a {model.__name__} or a key dict, got a {type(key).__name__}.",
                                  entity=meta.entity)
        return key._primary_key_av()
    if not isinstance(key, Mapping):
        raise ValidationError(f"{meta.entity}: a key must be a dict of {', '.join(meta.key_fields)} or an "
                              f"instance, got {key!r}.", entity=meta.entity, value=key)
    unknown = [k for k in key if k not in meta.fields]
    if unknown:
        raise ValidationError(f"{meta.entity} has no field {unknown[0]!r}; its primary key is "
                              f"{', '.join(meta.key_fields)}.", entity=meta.entity, field=unknown[0])
    missing = [k for k in meta.key_fields if key.get(k) is None]
    if missing:
        raise ValidationError(f"{meta.entity}: the key misses {', '.join(missing)} (primary key: "
                              f"{', '.join(meta.key_fields)}).", entity=meta.entity, field=missing[0])
    values = {k: meta.fields[k].validate(v, meta.entity) for k, v in key.items()}
    rendered = meta.primary_key(values)
    check_key_sizes(meta, rendered, values)
    return rendered


# -- Put ---------------------------------------------------------------------------------
def prepare_put(obj: Entity, *, create: bool = False) -> WriteOp:
    """Plan a PutItem of the whole instance (keys recomputed, version condition).

    Raises:
        ValidationError, InvalidKeyValue: bad field values.
        KeyChangeError: a primary-key field changed since the item was read.
    """
    meta = obj._meta
    tmeta = meta.table._meta
    if getattr(obj, "_dynorm_partial", False):
        raise ValidationError(
            f"{meta.entity} {obj.key} was read with only()/values(), so saving it would drop the fields not "
            "read; read it fully (get()) before save(), or use update().", entity=meta.entity)
    now = _dt.datetime.now(_dt.timezone.utc)
    for name, f in meta.fields.items():
        if getattr(f, "auto_now", False):
            setattr(obj, name, now)
    obj.full_clean()
    keys = obj.key_attributes()
    check_key_sizes(meta, keys, obj.attribute_values)
    stored_pk = getattr(obj, "_dynorm_pk", None)
    fallback = getattr(obj, "_dynorm_fallback", None)  # read under an older key version (read_versions)
    if stored_pk is not None and not create and not fallback:
        new = (keys[tmeta.pk_attribute], keys.get(tmeta.sk_attribute) if tmeta.sk_attribute else None)
        old = (stored_pk, getattr(obj, "_dynorm_sk", None) if tmeta.sk_attribute else None)
        if new != old:
            raise KeyChangeError(
                f"{meta.entity}: primary-key field(s) {', '.join(meta.key_fields)} changed (key {old} -> {new}); "
                "keys are immutable. Create a new item and delete the old one instead.")
    b = ExpressionBuilder()
    vf = meta.version_field
    current = getattr(obj, vf) if vf else None
    conditions = []
    if create or (vf and current is None):
        conditions.append(f"attribute_not_exists({b.name(tmeta.pk_attribute)})")
    elif vf and fallback:
        # first save under the current version: the new key is free, or a migration copied
        # this very version there
        conditions.append(f"attribute_not_exists({b.name(tmeta.pk_attribute)}) OR "
                          f"{b.name(meta.fields[vf].attr_name)} = {b.value({'N': str(current)})}")
    elif vf:
        conditions.append(f"{b.name(meta.fields[vf].attr_name)} = {b.value({'N': str(current)})}")
    base = type(obj)
    for attr, value in keys.items():
        setattr(obj, base._dynamo_to_python_attr(attr), value)
    item = obj.serialize()
    if tmeta.lsis:
        check_key_sizes(meta, {a: item[a] for a in tmeta.lsis.values() if a in item}, obj.attribute_values)
    size = _codec.item_size(item)
    if size > _codec.MAX_ITEM_BYTES:
        biggest = max(item, key=lambda a: _codec.av_size(item[a]))
        raise ValidationError(
            f"{meta.entity} {_keytext(obj)} is {size / 1024:.0f} KB, over DynamoDB's 400 KB item limit "
            f"(largest attribute: {biggest}, {_codec.av_size(item[biggest]) / 1024:.0f} KB); store large values "
            "elsewhere (S3) and keep a reference.", entity=meta.entity, field=biggest)
    new_version = None
    if vf:
        new_version = (current or 0) + 1
        item[meta.fields[vf].attr_name] = {"N": str(new_version)}
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Item": item}
    _finish(params, b, conditions)
    key = {tmeta.pk_attribute: item[tmeta.pk_attribute]}
    if tmeta.sk_attribute:
        key[tmeta.sk_attribute] = item[tmeta.sk_attribute]
    verb = "create" if create else "save"
    return WriteOp("Put", type(obj), params, key, f"{verb} {meta.entity} {_keytext(obj)}", instance=obj,
                   create=create, expected_version=current, new_version=new_version)


def _keytext(obj: Entity) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in obj.key.items())


# -- Delete ------------------------------------------------------------------------------
def prepare_delete(model: type[Entity], target: Entity | Mapping[str, Any], *,
                   condition: Q | None = None) -> WriteOp:
    """Plan a DeleteItem; an instance of a versioned entity is deleted only if unchanged."""
    from .models import Entity

    meta = model._meta
    key = primary_key_of(model, target)
    b = ExpressionBuilder()
    conditions = []
    version = None
    instance = target if isinstance(target, Entity) else None
    vf = meta.version_field
    if instance is not None and vf:
        version = getattr(instance, vf)
        if version is not None:
            conditions.append(f"{b.name(meta.fields[vf].attr_name)} = {b.value({'N': str(version)})}")
    if condition is not None:
        conditions.append(b.condition(condition, meta))
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Key": key}
    _finish(params, b, conditions)
    return WriteOp("Delete", model, params, key, f"delete {meta.entity} {_entity_keydesc(model, target)}",
                   instance=instance,
                   expected_version=version)


def _entity_keydesc(model: type[Entity], target: Entity | Mapping[str, Any]) -> str:
    key = target.key if not isinstance(target, Mapping) else target
    return ", ".join(f"{k}={v!r}" for k, v in key.items() if k in model._meta.key_fields)


# -- ConditionCheck ----------------------------------------------------------------------
def prepare_check(model: type[Entity], target: Entity | Mapping[str, Any], condition: Q) -> WriteOp:
    """Plan a ConditionCheck on another item (transactions only)."""
    meta = model._meta
    key = primary_key_of(model, target)
    b = ExpressionBuilder()
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Key": key}
    _finish(params, b, [b.condition(condition, meta)])
    if "ConditionExpression" not in params:
        raise ValidationError(f"{meta.entity}: check() needs a condition.", entity=meta.entity)
    return WriteOp("ConditionCheck", model, params, key, f"check {meta.entity} {_entity_keydesc(model, target)}")


# -- Update ------------------------------------------------------------------------------
def _value_av(meta: Any, name: str, value: Any) -> dict[str, Any]:
    return serialize_value(meta, name, value, purpose="stored")


def _operand(b: ExpressionBuilder, meta: Any, target: str, expr: F) -> tuple[str, str | None]:
    """Render an F expression; return (SET operand, or None) and an ADD/DELETE clause."""
    source = field_of(meta, expr.name)
    path = b.name(source.attr_name)
    ops = list(expr.ops)
    if ops and ops[0][0] in ("add", "discard"):
        if len(ops) != 1 or expr.name != target:
            raise ValidationError(f"{meta.entity}.{target}: set add/discard must be F({target!r}).add(...) alone.",
                                  entity=meta.entity, field=target)
        if type(meta.fields[target]).__name__ != "Set":
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
            if type(meta.fields[target]).__name__ != "List":
                raise ValidationError(f"{meta.entity}.{target} is not a fields.List; append() works on lists.",
                                      entity=meta.entity, field=target)
            text = f"list_append({text}, {b.value(plain_value(meta, target, list(value), 'append()'))})"
    return text, None


def prepare_update(model: type[Entity], *, instance: Entity | None = None,
                   key: Mapping[str, Any] | None = None, changes: Mapping[str, Any],
                   condition: Q | None = None) -> WriteOp:
    """Plan one UpdateItem (ReturnValues ALL_NEW) for ``changes``.

    Args:
        model: the entity class.
        instance: the instance read (its version is checked), or ``None``.
        key: primary-key fields when there is no instance.
        changes: field -> plain value, ``None`` (REMOVE), or an :class:`F` expression.
        condition: an extra condition on the stored item.

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
            plain[name] = f.validate(value, entity)
            sets.append(f"{path} = {b.value(av)}")
    now = _dt.datetime.now(_dt.timezone.utc)
    for name, f in meta.fields.items():
        if getattr(f, "auto_now", False) and name not in changes:
            sets.append(f"{b.name(f.attr_name)} = {b.value({'S': f.serialize(now)})}")
            plain[name] = now

    # Index keys built from changed fields are rewritten in the same request.
    known: dict[str, Any] = {}
    if instance is not None and not getattr(instance, "_dynorm_partial", False):
        known.update(instance.to_dict())
    elif instance is not None:
        known.update(instance.key)
    known.update({k: v for k, v in (key or {}).items()})
    known.update(plain)
    for bound in meta.indexes.values():
        if not bound.writes_key_attributes:
            continue
        deps = set(bound.fields) - set(meta.key_fields if bound.kind == "lsi" else ())
        touched = deps & set(changes)
        if not touched:
            continue
        exprs = sorted(n for n in touched if isinstance(changes[n], F))
        if exprs:
            raise ValidationError(
                f"{entity}.{exprs[0]} is part of index {bound.name} ({bound.index_name}); give a plain value, not an "
                "expression, so the index key can be recomputed in the same request.", entity=entity, field=exprs[0])
        unknown = sorted(n for n in deps if n not in known)
        if unknown:
            raise ValidationError(
                f"{entity}: changing {', '.join(sorted(touched))} rewrites index {bound.name} ({bound.index_name}), "
                f"whose key also needs {', '.join(unknown)}; pass them to update() or update an instance you read.",
                entity=entity, field=unknown[0])
        pk = target_key[tmeta.pk_attribute]["S"] if bound.kind == "lsi" else bound.pk.try_fill(
            known, meta.key_version, entity=entity)
        sk = bound.sk.try_fill(known, meta.key_version, entity=entity) if bound.sk is not None else None
        sparse = pk is None or (bound.sk is not None and sk is None)
        attrs: list[tuple[str, str | None]] = [] if bound.kind == "lsi" else [(bound.pk_attr, pk)]
        if bound.sk_attr and bound.sk_attr != tmeta.sk_attribute:
            attrs.append((bound.sk_attr, sk))
        for attr, key_text in attrs:
            if sparse:
                removes.append(b.name(attr))
            else:
                check_key_sizes(meta, {attr: str(key_text)}, known)
                sets.append(f"{b.name(attr)} = {b.value({'S': str(key_text)})}")

    conditions = [f"attribute_exists({b.name(tmeta.pk_attribute)})"]
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
    _finish(params, b, conditions)
    shown = instance.key if instance is not None else {k: v for k, v in (key or {}).items() if k in meta.key_fields}
    return WriteOp("Update", model, params, target_key,
                   f"update {entity} {', '.join(f'{k}={v!r}' for k, v in shown.items())}",
                   instance=instance, expected_version=expected, new_version=new_version, local_changes=plain)
