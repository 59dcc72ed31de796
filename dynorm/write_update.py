"""Planning ``update(**changes)``: one UpdateItem of plain values and ``F()`` expressions (:func:`prepare_update`)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from .exceptions import KeyChangeError, ValidationError
from .expressions import DocPath, ExpressionBuilder, F, Q, plain_value, resolve_path, serialize_value
from .write_conditions import finish_params, pin_key_sources, stored_knowledge, type_condition
from .write_keys import check_index_attributes, check_key_sizes, check_lsi_values, primary_key_of
from .write_op import TypedSource, WriteOp, new_token

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["prepare_update", "unread_after_write", "update_paths", "update_refused"]


# -- Update ------------------------------------------------------------------------------
def _value_av(meta: Any, name: str, value: Any) -> dict[str, Any]:
    return serialize_value(meta, name, value, purpose="stored")


def _idempotent(expr: F) -> bool:
    """False for an expression whose second application changes the item again (+, -, append)."""
    return not any(op in ("+", "-", "append") for op, _ in expr.ops)


def _operand(b: ExpressionBuilder, meta: Any, target: str, expr: F, out: _Clauses) -> tuple[str, str | None]:
    """Render an F expression; return (SET operand, or None) and an ADD/DELETE clause.

    ``F()`` names a field or a document path (``F("m__k")``, ``F("m.k")``); an operand at a
    path (``if_not_exists`` value, ``append`` values) is encoded with the plain codec. A value
    copied into a whole typed field must be of the field's stored type (:func:`_copy_type`).
    """
    source = resolve_path(meta, expr.name, ValidationError)
    to = resolve_path(meta, target, ValidationError)
    path = b.path(meta.fields[source.field].attr_name, source.parts)
    ops = list(expr.ops)
    _copy_type(b, meta, to, source, expr, path, out)
    if ops and ops[0][0] in ("add", "discard"):
        if to.parts or source.parts:
            raise ValidationError(f"{meta.entity}.{to.shown}: add()/discard() work on a whole fields.Set field, "
                                  "not at a document path; nothing was sent.", entity=meta.entity, field=target)
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
                raise ValidationError(f"{meta.entity}.{to.shown}: if_not_exists() must come first in the expression.",
                                      entity=meta.entity, field=target)
            if not to.parts:  # the default lands in the whole field: of its type
                av = _value_av(meta, to.field, value)
            elif source.parts:
                av = plain_value(meta, source.shown, value, "if_not_exists()", depth=1 + len(to.parts))
            else:
                av = _value_av(meta, expr.name, value)
            text = f"if_not_exists({path}, {b.value(av)})"
        elif op in ("+", "-"):
            arithmetic += 1
            if arithmetic > 1:
                raise ValidationError(f"{meta.entity}.{to.shown}: DynamoDB allows one + or - per update.",
                                      entity=meta.entity, field=target, value=expr)
            if isinstance(value, bool) or not isinstance(value, (int, float)) and type(value).__name__ != "Decimal":
                raise ValidationError(f"{meta.entity}.{to.shown}: {op} needs a number, got {value!r}.",
                                      entity=meta.entity, field=target, value=value)
            text = f"{text} {op} {b.value(plain_value(meta, to.shown, value, op))}"
        elif op == "append":
            if not to.parts and not meta.fields[target].is_list:
                raise ValidationError(f"{meta.entity}.{target} is not a fields.List; append() works on lists.",
                                      entity=meta.entity, field=target)
            appended = plain_value(meta, to.shown, list(value), "append()", depth=1 + len(to.parts))
            text = f"list_append({text}, {b.value(appended)})"
    return text, None


def _copy_type(b: ExpressionBuilder, meta: Any, to: DocPath, source: DocPath, expr: F, path: str,
               out: _Clauses) -> None:
    """Make sure ``F()`` stores in a whole typed field only a value of the field's stored type.

    A value of another type (``name=F("stock__num")``: N into a String) would be written and make
    the item unreadable. A source that is a declared field has a known type: another type is
    refused here. A source at a document path (inside a Map or List, whose values have no declared
    type) gets the condition ``attribute_type(<source>, :T)`` (``attribute_not_exists(<source>) OR``
    it, with ``if_not_exists``), so DynamoDB refuses a copy of another type (or of nothing) and
    writes nothing; :meth:`WriteOp.error` names the field and the source then. A target inside a
    Map or List takes any type.

    Raises:
        ValidationError: the source field's stored type differs from the target's, or ``+``/``-``
            into a field that does not store numbers (before any request).
    """
    if to.parts:
        return
    entity = meta.entity
    tf = meta.fields[to.field]
    want = tf.attr_type
    ops = [op for op, _ in expr.ops]
    if ops and ops[0] in ("add", "discard"):
        return  # F(field).add(...) on the field itself: checked by _operand
    kind = f"a {type(tf).__name__} field (stored as {want})"
    arithmetic = next((op for op in ops if op in ("+", "-")), None)
    if arithmetic and want != "N":
        raise ValidationError(
            f"{entity}.{to.field} is {kind}: F({expr.name!r}) {arithmetic} n gives a number, which "
            f"{entity}.{to.field} cannot read (the item would become unreadable); nothing was sent.",
            entity=entity, field=to.field, value=expr)
    if not source.parts:
        sf = meta.fields[source.field]
        if sf.attr_type != want:
            raise ValidationError(
                f"{entity}.{to.field} = F({expr.name!r}): {source.field} is a {type(sf).__name__} field (stored as "
                f"{sf.attr_type}) and {to.field} is {kind}; the copy would store a value {entity}.{to.field} cannot "
                f"read (the item would become unreadable), so it is refused; nothing was sent. Copy between fields "
                f"stored alike, or convert in Python (read the item, then update({to.field}=...)).",
                entity=entity, field=to.field, value=expr)
        return
    missing_ok = bool(ops) and ops[0] == "if_not_exists"
    cond = f"attribute_type({path}, {b.value({'S': want})})"
    out.conditions.append(f"(attribute_not_exists({path}) OR {cond})" if missing_ok else cond)
    out.typed_sources.append(TypedSource(to.field, source, meta.fields[source.field].attr_name, want, missing_ok))


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
    _check_changes(meta, changes)
    target_key = primary_key_of(model, instance if instance is not None else (key or {}))
    b = ExpressionBuilder()
    clauses = _change_clauses(b, meta, changes)
    # Index keys built from changed fields are rewritten in the same request, from values the
    # write knows: the other fields they are built from are pinned at their stored values
    _refuse_index_expressions(meta, changes)
    keyed = _index_key_clauses(model, b, clauses, target_key, instance, key)
    conditions = [type_condition(b, meta)]  # the item exists, and is this entity's
    expected, new_version = _version_clauses(b, meta, instance, clauses, conditions)
    conditions += keyed.pin_conditions
    conditions += clauses.conditions  # a value copied from a path has the target field's type
    token = new_token()
    rev = b.name(meta.table._meta.revision_attribute)
    tok = b.value({"S": token})
    clauses.sets.append(f"{rev} = {tok}")
    once = expected is None and any(isinstance(v, F) and not _idempotent(v) for v in changes.values())
    if expected is None and not once:
        # a retried idempotent request finds its own token stored and fails, and the sender
        # reports the first attempt's result (applying it again would change nothing anyway)
        conditions.append(f"attribute_not_exists({rev}) OR {rev} <> {tok}")
    if condition is not None:
        conditions.append(b.condition(condition, meta))
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Key": target_key,
                              "UpdateExpression": clauses.expression()}
    finish_params(params, b, conditions, meta.entity)
    shown = instance.key if instance is not None else {k: v for k, v in (key or {}).items() if k in meta.key_fields}
    return WriteOp("Update", model, params, target_key,
                   f"update {meta.entity} {', '.join(f'{k}={v!r}' for k, v in shown.items())}",
                   instance=instance, verb="update", expected_version=expected, new_version=new_version,
                   local_changes=clauses.plain, key_values=keyed.key_values, token=token, returns_item=True,
                   once=once, pins=keyed.pins, pinned_as=keyed.pinned_as,
                   expression_fields=_computed_in_table(meta, changes, new_version),
                   unread_after=unread_after_write(instance, clauses.written), entity_key=dict(shown),
                   changes=dict(changes), typed_sources=tuple(clauses.typed_sources))


def _computed_in_table(meta: Any, changes: Mapping[str, Any], new_version: int | None) -> frozenset[str]:
    """The fields whose new value the table computes: each ``F()`` change, and the version when it is
    incremented there (``if_not_exists(version, 0) + 1``: the write knows no version to expect)."""
    names = {n for n, v in changes.items() if isinstance(v, F)}
    # a field written at a document path: the whole field's new value is known only from the table
    names = {n if n in meta.fields else resolve_path(meta, n, ValidationError).field for n in names}
    names |= {dp.field for dp in update_paths(meta, changes).values()}
    if meta.version_field and new_version is None:
        names.add(meta.version_field)
    return frozenset(names)


def _check_changes(meta: Any, changes: Mapping[str, Any]) -> None:
    """Refuse no changes, an unknown field, a primary-key field or the version field (before any request)."""
    entity = meta.entity
    if not changes:
        raise ValidationError(f"{entity}.update() needs at least one field to change.", entity=entity)
    update_paths(meta, changes)
    for name in changes:
        if name not in meta.fields:
            continue  # a document path (checked by update_paths)
        if name in meta.key_fields:
            raise KeyChangeError(f"{entity}.{name} is part of the primary key; keys are immutable. Create a new "
                                 "item and delete the old one instead.")
        if name == meta.version_field:
            raise ValidationError(f"{entity}.{name} is the version field; dynorm increments it itself.",
                                  entity=entity, field=name)


def update_paths(meta: Any, changes: Mapping[str, Any]) -> dict[str, DocPath]:
    """The document paths among ``changes`` (``m__k``, ``m.k``), checked before any request.

    Refuses an unknown field, a path into a field an index key is built from (keys are built
    from whole fields; unique constraints take no Map/List field), and two changes that overlap (``m`` and ``m__k``:
    DynamoDB refuses an update that names a path twice).
    """
    entity = meta.entity
    resolved = {name: resolve_path(meta, name, ValidationError) for name in changes}
    paths = {name: dp for name, dp in resolved.items() if dp.parts}
    for name, dp in paths.items():
        for bound in meta.all_indexes:
            if dp.field in bound.fields:
                raise ValidationError(
                    f"{entity}.{dp.shown}: {dp.field} is part of index {bound.name} ({bound.index_name}), whose key "
                    f"is built from the whole field; set {dp.field} as a whole (update({dp.field}={{...}})); nothing "
                    "was sent.", entity=entity, field=name)
    names = list(resolved)
    for i, a in enumerate(names):
        for other in names[i + 1:]:
            if resolved[a].conflicts(resolved[other]):
                raise ValidationError(
                    f"{entity}.update(): {resolved[a].shown} and {resolved[other].shown} conflict (one goes through a "
                    "place as a list index, the other as a map key): DynamoDB refuses such an update; a number in "
                    "the __ form inside a map is a key (write a list index as [0] in the dotted form); nothing was "
                    "sent.", entity=entity, field=other)
            if resolved[a].overlaps(resolved[other]) and (resolved[a].parts or resolved[other].parts):
                raise ValidationError(
                    f"{entity}.update(): {resolved[a].shown} and {resolved[other].shown} overlap (one is inside the "
                    "other, or both name the same place): DynamoDB refuses an update that writes a document path "
                    "twice; change one of them; nothing was sent.", entity=entity, field=other)
    return paths


#: DynamoDB's words (ValidationException) for an update it cannot apply to the item as stored
_PATH_INVALID = "document path provided in the update expression is invalid"
_NO_ATTRIBUTE = "refers to an attribute that does not exist"


def update_refused(ops: Sequence[Any], code: str, message: str, *, retried: bool = False) -> ValidationError | None:
    """The dynorm error for DynamoDB refusing an update (ValidationException) because of the item as
    stored: a document path through a missing map or list, or an ``F()`` source that is missing.

    Args:
        ops: the planned writes of the request (one; or a transaction's actions: DynamoDB does not
            say which action it refused, so every update that could be the cause is named).
        code, message: DynamoDB's error code and message.
        retried: botocore sent the (non-transactional) request more than once: its first attempt may
            have been applied before another write changed the item (the error then says so and its
            ``maybe_applied`` is True; otherwise ``maybe_applied`` is False and nothing was written).

    Returns:
        a :class:`ValidationError` naming entity, field and path, or ``None`` for another refusal.
    """
    if code != "ValidationException":
        return None
    paths = _PATH_INVALID in message
    if not paths and _NO_ATTRIBUTE not in message:
        return None
    found: list[tuple[Any, str, list[DocPath], bool]] = []  # (op, what, the paths or sources, only REMOVEs)
    for op in ops:
        if getattr(op, "kind", None) != "Update" or not op.changes:
            continue
        meta = op.model._meta
        if paths:
            named = {n: resolve_path(meta, n, ValidationError) for n in op.changes}
            chosen = [dp for dp in named.values() if dp.parts]
            removes = all(op.changes[dp.name] is None for dp in chosen)
        else:  # an F() source read without if_not_exists
            chosen = [resolve_path(meta, v.name, ValidationError) for v in op.changes.values()
                      if isinstance(v, F) and not any(o == "if_not_exists" for o, _ in v.ops)]
            removes = False
        if chosen:
            found.append((op, ", ".join(dp.shown for dp in chosen), chosen, removes))
    if not found:
        return None
    causes, remedies = [], []
    for op, shown, chosen, removes in found:
        if not paths:
            causes.append(f"{op.description}: an F() source ({shown}) is missing on the stored item, so there is "
                          "no value to read.")
            remedies.append("Give a default with F(...).if_not_exists(value), or set the source first.")
        elif removes:
            causes.append(f"{op.description}: DynamoDB refused to remove {shown}: a map or list it goes through is "
                          "missing on the stored item (or is not a map/list), so there is nothing to remove there.")
            remedies.append("Leave the removal out, or make it conditional on the parent "
                            f"(condition=Q({chosen[0].field}__exists=True)).")
        else:
            parent = sorted({dp.field for dp in chosen})
            causes.append(f"{op.description}: DynamoDB refused the document path ({shown}): a map or list it goes "
                          "through is missing on the stored item (or is not a map/list).")
            remedies.append(f"Set the parent first (e.g. update({parent[0]}={{...}}), or a whole sub-map at its "
                            "parent path), then update inside it.")
    text = " ".join(causes)
    if len(ops) > 1:
        text = (f"transaction refused by DynamoDB ({message.strip()}); it does not say which action, so each that "
                f"can cause it is named: {text}")
    if retried:
        text += (" botocore retried this request after a lost response: its first attempt may have been applied "
                 "before another write changed the item (making the retry fail); re-read the item.")
    else:
        text += " Nothing was written."
    text += " " + " ".join(dict.fromkeys(remedies))
    first = found[0][0]
    error = ValidationError(text, entity=first.model._meta.entity, field=found[0][2][0].name)
    error.maybe_applied = retried  # type: ignore[attr-defined]
    return error


@dataclass
class _Clauses:
    """The UpdateExpression being built: SET, REMOVE and ADD/DELETE clauses, and the plain values written.

    Attributes:
        plain: field -> validated value of each plain change (``None`` for a REMOVE) and ``auto_now``
            field; written: every field the update sets or removes (expressions included);
            conditions: the ``attribute_type`` checks of values copied from document paths
            (:func:`_copy_type`), with typed_sources describing each.
    """

    sets: list[str] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    adds: list[str] = field(default_factory=list)
    plain: dict[str, Any] = field(default_factory=dict)
    written: set[str] = field(default_factory=set)
    conditions: list[str] = field(default_factory=list)
    typed_sources: list[TypedSource] = field(default_factory=list)

    def expression(self) -> str:
        """The UpdateExpression: ``SET ... REMOVE ... ADD ...``."""
        parts = []
        if self.sets:
            parts.append("SET " + ", ".join(self.sets))
        if self.removes:
            parts.append("REMOVE " + ", ".join(self.removes))
        return " ".join(parts + self.adds)


def _change_clauses(b: ExpressionBuilder, meta: Any, changes: Mapping[str, Any]) -> _Clauses:
    """Render each change (a value, ``None``, an ``F()`` expression) and the ``auto_now`` fields."""
    entity = meta.entity
    out = _Clauses()
    for name, value in changes.items():
        dp = resolve_path(meta, name, ValidationError)
        f = meta.fields[dp.field]
        path = b.path(f.attr_name, dp.parts)
        if dp.parts and not isinstance(value, F):
            # inside a Map/List: no field type below it, so the plain codec (Map values' codec) encodes it
            if value is None:
                out.removes.append(path)
            else:
                # stored 1 + len(parts) levels down: its own maps and lists count from there
                av = plain_value(meta, dp.shown, value, depth=1 + len(dp.parts))
                out.sets.append(f"{path} = {b.value(av)}")
            continue
        if isinstance(value, F):
            text, clause = _operand(b, meta, name, value, out)
            if clause:
                out.adds.append(clause)
            else:
                out.sets.append(f"{path} = {text}")
        elif value is None:
            if not f.null:
                raise ValidationError(f"{entity}.{name} is required and cannot be removed (set to None).",
                                      entity=entity, field=name)
            out.removes.append(path)
            out.plain[name] = None
        else:
            av = _value_av(meta, name, value)
            check_index_attributes(meta, {f.attr_name: av})
            out.plain[name] = f.validate(value, entity)
            check_lsi_values(meta, {f.attr_name: av}, out.plain)
            out.sets.append(f"{path} = {b.value(av)}")
    now = _dt.datetime.now(_dt.timezone.utc)
    for name, f in meta.fields.items():
        if getattr(f, "auto_now", False) and name not in changes:
            out.sets.append(f"{b.name(f.attr_name)} = {b.value({'S': f.serialize(now)})}")
            out.plain[name] = now
    out.written = {n for n in changes if n in meta.fields} | set(out.plain)
    return out


def _refuse_index_expressions(meta: Any, changes: Mapping[str, Any]) -> None:
    """Refuse an ``F()`` expression on a field an index key is built from (the key is recomputed client-side)."""
    for bound in meta.indexes.values():
        if bound.writes_key_attributes:
            exprs = sorted(n for n in bound.fields if isinstance(changes.get(n), F))
            if exprs:
                raise ValidationError(
                    f"{meta.entity}.{exprs[0]} is part of index {bound.name} ({bound.index_name}); give a plain "
                    "value, not an expression, so the index key can be recomputed in the same request.",
                    entity=meta.entity, field=exprs[0])


@dataclass
class _Keyed:
    """The index keys an update rewrites: the pins they need and the key values set on the instance."""

    pin_conditions: list[str]
    pins: dict[str, Any]
    pinned_as: dict[str, Any]
    key_values: dict[str, Any]


def _index_key_clauses(model: type[EntityLike], b: ExpressionBuilder, clauses: _Clauses,
                       target_key: dict[str, Any], instance: EntityLike | None,
                       key: Mapping[str, Any] | None) -> _Keyed:
    """SET (or REMOVE) the index keys built from written fields, pinning their other sources."""
    meta = model._meta
    written = clauses.written
    known, unknown = stored_knowledge(model, instance, key)
    if instance is not None:
        known.update(instance.key)
    known.update(clauses.plain)
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
        index_attrs.update(meta.index_key(bound, known, target_key[meta.table._meta.pk_attribute]["S"]))
    for attr, key_text in index_attrs.items():
        key_values[model._dynamo_to_python_attr(attr)] = key_text
        if key_text is None:
            clauses.removes.append(b.name(attr))
        else:
            check_key_sizes(meta, {attr: str(key_text)}, known)
            clauses.sets.append(f"{b.name(attr)} = {b.value({'S': key_text})}")
    return _Keyed(pin_conditions, pins, pinned_as, key_values)


def _version_clauses(b: ExpressionBuilder, meta: Any, instance: EntityLike | None, clauses: _Clauses,
                     conditions: list[str]) -> tuple[int | None, int | None]:
    """Condition on the version read and SET the next one (incremented in the table without an instance).

    Returns:
        (the version expected, the version written), ``(None, None)`` when not known.
    """
    vf = meta.version_field
    if not vf:
        return None, None
    vpath = b.name(meta.fields[vf].attr_name)
    current = getattr(instance, vf) if instance is not None else None
    if current is None:
        clauses.sets.append(f"{vpath} = if_not_exists({vpath}, {b.value({'N': '0'})}) + {b.value({'N': '1'})}")
        return None, None
    conditions.append(f"{vpath} = {b.value({'N': str(current)})}")
    clauses.sets.append(f"{vpath} = {b.value({'N': str(current + 1)})}")
    return current, current + 1


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
