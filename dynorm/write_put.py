"""Planning ``save()``/``create()`` of an instance: a PutItem of a new item, or an UpdateItem that keeps
what the model does not declare (:func:`prepare_put`).
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from . import _codec
from .exceptions import KeyChangeError, ValidationError
from .expressions import ExpressionBuilder, refuse_paths
from .write_conditions import finish_params, pin_key_sources, stored_knowledge, type_condition
from .write_keys import check_index_attributes, check_key_sizes, check_lsi_values, stored_key
from .write_op import NO_VALUES, WriteOp, new_token
from .write_update import prepare_update, unread_after_write

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike
    from .options import Options

__all__ = ["prepare_put"]

#: the empty set of fields, shared (``frozenset()`` makes a new object each time)
_NOTHING: frozenset[str] = frozenset()


# -- Put / save ----------------------------------------------------------------------------
def _item_values(meta: Options, values: Mapping[str, Any], names: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
    """Serialize ``names`` of ``values``: (attribute -> DynamoDB JSON, attributes to remove)."""
    item: dict[str, Any] = {}
    absent: list[str] = []
    writers = meta.attribute_writers
    for name in names:
        attr, kind, serialize = writers[name]
        raw = values.get(name)
        if raw is not None and serialize is not None:
            raw = serialize(raw)
        if raw is None:
            absent.append(attr)
        else:
            item[attr] = {kind: raw}
    return item, absent


#: What to do instead of naming a document path in ``save(update_fields=...)`` or ``bulk_update()``,
#: which write fields as the instance holds them (:func:`dynorm.expressions.refuse_paths`).
WHOLE_FIELDS_ONLY = ("write the whole field ({field!r}: its value as this instance holds it), or the one path "
                     "with obj.update({name}=value): a path's value in memory is ambiguous (a key missing from "
                     "the instance's map may have been removed or never read; a list index moves as the list "
                     "changes).")


def prepare_put(obj: EntityLike, *, create: bool = False, update_fields: Iterable[str] | None = None,
                fresh: bool = False) -> WriteOp:
    """Plan the write of a whole instance (``save()``/``create()``), or of ``update_fields`` only.

    * ``create`` (and a versioned instance never written): PutItem conditional on
      ``attribute_not_exists(PK)``: no item exists, so nothing can be lost.
    * otherwise an UpdateItem that SETs every declared field (REMOVE for ``None``) and
      key attribute: attributes the model does not declare (another service's, a newer
      app version's) are kept. Versioned: conditional on the version read.
    * ``update_fields``: the same UpdateItem restricted to those fields (plus the index keys
      built from them, ``auto_now`` fields and the version), conditional on the item existing.
    * every UpdateItem is conditional on the stored item being of this entity type (``#type =
      :type``: an instance read must still be stored; a new instance's upsert also when no item is
      there), so an item of another entity type under the same key is never changed.

    Args:
        obj: the instance (not changed here).
        create: refuse to overwrite (``create()``).
        update_fields: field names to write.
        fresh: write a new item at version 1 whatever the instance's version (``bulk_create``).

    Raises:
        ValidationError, InvalidKeyValue: bad field values, unknown ``update_fields``.
        KeyChangeError: a primary-key field changed since the item was read.
    """
    if update_fields is not None and not isinstance(update_fields, str):
        update_fields = list(update_fields)  # read more than once
    _refuse_deferred(obj, update_fields)
    if obj._state.partial:
        return _partial_save(obj, update_fields)
    save = _plan_save(obj, create, update_fields, fresh)
    if update_fields is None and (create or (save.vf and save.current is None and not save.unversioned_read)):
        return _put_item(save)  # a new item: nothing stored can be lost
    return _update_item(save)  # SET what the model declares, keep what it does not


def _refuse_deferred(obj: EntityLike, update_fields: Iterable[str] | None) -> None:
    """Refuse to write a deferred field (``only()``, or an ``F()`` result not returned) as ``None``."""
    meta = obj._meta
    state = obj._state
    if state.deferred is None or (state.partial and update_fields is None):
        return
    wanted = meta.fields if update_fields is None else [n for n in update_fields if n in meta.fields]
    missing = [n for n in wanted if n in state.deferred[0] and n not in obj.attribute_values]
    if missing:
        raise ValidationError(
            f"{meta.entity} {_keytext(obj)}: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} deferred "
            "(not read by only(), or changed by an F() expression whose result did not come back, as in a "
            "transaction), so saving would write a value this instance never saw; load "
            f"{'it' if len(missing) == 1 else 'them'} first (obj.refresh_from_db(), or read the field: save() "
            "does that itself). Nothing was sent.", entity=meta.entity, field=missing[0])


def _partial_save(obj: EntityLike, update_fields: Iterable[str] | None) -> WriteOp:
    """Plan ``save(update_fields=...)`` of an instance read with ``only()`` as ``update()`` plans it.

    Fields not read are unknown, not None: an index key needing one is refused, never removed.
    A whole save of such an instance is refused (it would drop the fields not read).
    """
    meta = obj._meta
    entity = meta.entity
    if update_fields is None:
        raise ValidationError(
            f"{entity} {obj.key} was read with only()/values(), so saving it would drop the fields not "
            "read; read it fully (get()) before save(), or use save(update_fields=[...]) or update().",
            entity=entity)
    names = list(dict.fromkeys(update_fields))
    refuse_paths(meta, names, "save(update_fields=...)", WHOLE_FIELDS_ONLY)
    unknown = [n for n in names if n not in meta.fields]
    if unknown or not names:
        raise ValidationError(f"{entity}.save(update_fields=...) needs field names of {entity}; got "
                              f"{', '.join(map(repr, unknown)) or 'none'}.", entity=entity,
                              field=unknown[0] if unknown else None)
    values = obj.attribute_values
    op = prepare_update(type(obj), instance=obj, changes={n: values.get(n) for n in names})
    op.verb = "save"
    return op


@dataclass
class _Save:
    """What every form of a save knows before it renders a request (:func:`_plan_save`).

    Attributes:
        obj, model, meta: the instance and its class; values: its fields with ``auto_now`` set
        (``auto``); keys: every key attribute rendered; key: the primary key (DynamoDB JSON);
        vf, vattr: the version field and its attribute; current: the version read; new_version:
        the version written (``None``: incremented in the table, a blind write); unversioned_read:
        read without a version attribute (at version 0); blind: ``update_fields`` of an instance
        never read; token: the revision token; verb, description: for messages.
    """

    obj: EntityLike
    model: type[EntityLike]
    meta: Options
    create: bool
    update_fields: Iterable[str] | None
    values: dict[str, Any]
    auto: Mapping[str, Any]
    keys: dict[str, Any]
    key: dict[str, Any]
    vf: str | None
    vattr: str | None
    current: int | None
    unversioned_read: bool
    blind: bool
    new_version: int | None
    token: str
    key_values: dict[str, Any]
    verb: str
    description: str
    b: ExpressionBuilder = field(default_factory=ExpressionBuilder)
    conditions: list[str] = field(default_factory=list)


def _plan_save(obj: EntityLike, create: bool, update_fields: Iterable[str] | None, fresh: bool) -> _Save:
    """Validate the instance, render its keys and settle the versions of the write."""
    meta = obj._meta
    tmeta = meta.table._meta
    state = obj._state
    if update_fields is None or isinstance(update_fields, str):
        obj.full_clean()
    else:  # validate what the write sends: the fields named, the primary key's sources, the version
        written = {*update_fields, *meta.key_fields, *([meta.version_field] if meta.version_field else [])}
        obj.full_clean(exclude=[n for n in meta.fields if n not in written])
    values = obj.attribute_values
    auto: Mapping[str, Any] = NO_VALUES  # a model without auto_now fields: no dict per write
    if meta.auto_now_fields:
        auto = {name: _dt.datetime.now(_dt.timezone.utc) for name in meta.auto_now_fields}
        values = {**values, **auto}
    keys = meta.key_attributes(values)
    check_key_sizes(meta, keys, values)
    model = type(obj)
    key = {tmeta.pk_attribute: {"S": keys[tmeta.pk_attribute]}}
    if tmeta.sk_attribute:
        key[tmeta.sk_attribute] = {"S": keys[tmeta.sk_attribute]}
    if not state.adding and not create and not state.fallback:  # fallback: read under an older key version
        _refuse_key_change(obj, key)
    vf = meta.version_field
    current = None if fresh or not vf else values.get(vf)
    # an item read without a version attribute (written before the model had fields.Version(),
    # or by another writer) is at version 0: saved on condition attribute_not_exists(version)
    unversioned_read = bool(vf) and current is None and not state.adding and not fresh and not create
    # save(update_fields) of an instance never read: the stored version is incremented, never reset
    blind = bool(vf) and current is None and state.adding and update_fields is not None
    verb = "create" if create else "save"
    return _Save(
        obj=obj, model=model, meta=meta, create=create, update_fields=update_fields, values=values, auto=auto,
        keys=keys, key=key, vf=vf, vattr=meta.fields[vf].attr_name if vf else None, current=current,
        unversioned_read=unversioned_read, blind=blind,
        new_version=None if blind else (current or 0) + 1 if vf else None, token=new_token(),
        key_values={model._dynamo_to_python_attr(a): t for a, t in keys.items()}, verb=verb,
        description=f"{verb} {meta.entity} {', '.join(f'{k}={values.get(k)!r}' for k in meta.key_fields)}")


def _refuse_key_change(obj: EntityLike, key: dict[str, Any]) -> None:
    """Refuse a save whose primary key, rendered from the instance's fields, is not the key the item
    is stored under: a primary-key field changed since the item was read (keys are immutable), or the
    stored key was rendered otherwise (an older dynorm's rendering of the same values, or another writer's).
    """
    meta = obj._meta
    old = stored_key(obj)
    if old != key:
        raise KeyChangeError(
            f"{meta.entity}: the item is stored under key {tuple(v['S'] for v in old.values())} but its "
            f"primary-key field(s) {', '.join(meta.key_fields)} now render {tuple(v['S'] for v in key.values())}; "
            "nothing was written. If a key field was changed: keys are immutable, create a new item and "
            "delete the old one. If no field was changed, the stored key was rendered otherwise (by an older "
            "dynorm or another writer; docs/modelling.md): bump Meta.key_version and run `dynorm migrate`, "
            "which rekeys every item from its stored fields.")


def _put_item(save: _Save) -> WriteOp:
    """The PutItem of a new item, conditional on ``attribute_not_exists(PK)``."""
    meta, b = save.meta, save.b
    tmeta = meta.table._meta
    item = {tmeta.type_attribute: {"S": meta.entity_type}}
    key = save.key
    for attr, text in save.keys.items():
        if text is not None:  # the primary key's attributes are the op's key's own (read-only) values
            item[attr] = key.get(attr) or {"S": text}
    fields_av, _ = _item_values(meta, save.values, meta.unversioned_fields)
    item.update(fields_av)
    if save.vattr:
        item[save.vattr] = {"N": str(save.new_version)}
    item[tmeta.revision_attribute] = {"S": save.token}
    _check_size(meta, save.obj, item)
    save.conditions.append(f"attribute_not_exists({b.name(tmeta.pk_attribute)})")
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Item": item}
    finish_params(params, b, save.conditions, meta.entity)
    return WriteOp("Put", save.model, params, save.key, save.description, instance=save.obj, verb=save.verb,
                   expected_version=save.current, new_version=save.new_version,
                   local_changes=save.auto, key_values=save.key_values, token=save.token, unread_after=_NOTHING)


@dataclass
class _Written:
    """What an UpdateItem of a save writes: fields, index key attributes, pins (:func:`_fields_written`)."""

    names: list[str]
    index_attrs: dict[str, str | None]
    local: dict[str, Any]
    upsert: bool = False
    pin_conditions: list[str] = field(default_factory=list)
    pins: dict[str, Any] = field(default_factory=dict)
    pinned_as: dict[str, Any] = field(default_factory=dict)
    unread_after: frozenset[str] | None = frozenset()


def _fields_written(save: _Save) -> _Written:
    """The fields (and index keys) the UpdateItem writes: those named, or every declared field."""
    if save.update_fields is not None:
        return _named_fields_written(save, save.update_fields)
    meta = save.meta
    state = save.obj._state
    # an instance read from the table: never re-create an item deleted or moved (a move-mode
    # migration) since it was read, at a key nothing reads any more; a new instance's save()
    # is an upsert. Either way never over an item of another entity type
    upsert = state.adding and save.current is None
    save.conditions.append(type_condition(save.b, meta, or_absent=upsert or bool(state.fallback)))
    own = {a for bound in meta.indexes.values() if bound.writes_key_attributes
           for a, _ in meta.index_key(bound, {}, "")}
    return _Written(names=list(meta.unversioned_fields),
                    index_attrs={a: t for a, t in save.keys.items() if a in own}, local=dict(save.auto),
                    upsert=upsert)  # every field is written: nothing to pin


def _named_fields_written(save: _Save, update_fields: Iterable[str]) -> _Written:
    """``update_fields`` (plus ``auto_now`` fields), the index keys built from them and the pins they need."""
    meta, model, values = save.meta, save.model, save.values
    entity = meta.entity
    names = list(dict.fromkeys(update_fields))
    refuse_paths(meta, names, "save(update_fields=...)", WHOLE_FIELDS_ONLY)
    unknown = [n for n in names if n not in meta.fields]
    if unknown or not names:
        raise ValidationError(
            f"{entity}.save(update_fields=...) needs field names of {entity}; "
            f"{'unknown: ' + ', '.join(map(repr, unknown)) if unknown else 'none given'} "
            f"(fields: {', '.join(meta.fields)}).", entity=entity, field=unknown[0] if unknown else None)
    names += [n for n in save.auto if n not in names]
    names = [n for n in names if n != save.vf]
    touched = set(names)
    # the index keys rewritten are built from fields written or pinned at their stored values
    known, not_known = stored_knowledge(model, save.obj)
    pin_conditions, pins, pinned_as = pin_key_sources(model, save.b, touched, known, not_known,
                                                      save.obj._state.read_as)
    index_attrs: dict[str, str | None] = {}
    for bound in meta.indexes.values():
        if bound.writes_key_attributes and touched & set(bound.fields):
            index_attrs.update(meta.index_key(bound, values, save.keys[meta.table._meta.pk_attribute] or ""))
    save.conditions.append(type_condition(save.b, meta))  # the item exists, and is this entity's
    return _Written(names=names, index_attrs=index_attrs, local={n: values.get(n) for n in save.auto},
                    pin_conditions=pin_conditions, pins=pins, pinned_as=pinned_as,
                    unread_after=unread_after_write(save.obj, touched))


def _update_item(save: _Save) -> WriteOp:
    """The UpdateItem of a save: SET the fields written (REMOVE for ``None``), the version, the token."""
    meta, b = save.meta, save.b
    tmeta = meta.table._meta
    written = _fields_written(save)
    item, absent = _item_values(meta, save.values, written.names)
    if save.update_fields is not None:
        check_lsi_values(meta, item, save.values)
    sets: list[str] = []
    removes: list[str] = [b.name(a) for a in absent]
    if save.update_fields is None:
        sets.append(f"{b.name(tmeta.type_attribute)} = {b.value({'S': meta.entity_type})}")
    for attr, text in written.index_attrs.items():
        if text is None:
            removes.append(b.name(attr))
        else:
            item[attr] = {"S": text}
    for attr, av in item.items():
        sets.append(f"{b.name(attr)} = {b.value(av)}")
    _version_clauses(save, sets)
    save.conditions += written.pin_conditions
    sets.append(f"{b.name(tmeta.revision_attribute)} = {b.value({'S': save.token})}")
    if save.update_fields is None:
        # the item as stored: the key, type and revision attributes count too (as in create)
        _check_size(meta, save.obj, {**item, **save.key, tmeta.type_attribute: {"S": meta.entity_type},
                                     tmeta.revision_attribute: {"S": save.token}})
    else:
        check_index_attributes(meta, item)
    expression = "SET " + ", ".join(sets)
    if removes:
        expression += " REMOVE " + ", ".join(removes)
    params = {"TableName": meta.table.table_name(), "Key": save.key, "UpdateExpression": expression}
    finish_params(params, b, save.conditions, meta.entity)
    key_values = save.key_values
    if save.update_fields is not None:
        key_values = {save.model._dynamo_to_python_attr(a): t for a, t in written.index_attrs.items()}
    return WriteOp("Update", save.model, params, save.key, save.description, instance=save.obj, verb=save.verb,
                   expected_version=0 if save.unversioned_read else save.current, new_version=save.new_version,
                   local_changes=written.local, key_values=key_values, token=save.token, pins=written.pins,
                   pinned_as=written.pinned_as, unread_after=written.unread_after, may_create=written.upsert)


def _version_clauses(save: _Save, sets: list[str]) -> None:
    """SET the version written (incremented in the table for a blind write) and condition on the version read."""
    if not save.vattr:
        return
    b = save.b
    vpath = b.name(save.vattr)
    if save.blind:
        sets.append(f"{vpath} = if_not_exists({vpath}, {b.value({'N': '0'})}) + {b.value({'N': '1'})}")
    else:
        sets.append(f"{vpath} = {b.value({'N': str(save.new_version)})}")
    if save.unversioned_read:
        save.conditions.append(f"attribute_not_exists({vpath})")
    elif save.current is not None:
        match = f"{vpath} = {b.value({'N': str(save.current)})}"
        if save.obj._state.fallback:
            match = f"attribute_not_exists({b.name(save.meta.table._meta.pk_attribute)}) OR {match}"
        save.conditions.append(match)


def _check_size(meta: Options, obj: EntityLike, item: Mapping[str, Any]) -> None:
    check_lsi_values(meta, item, obj.attribute_values)
    check_index_attributes(meta, item)
    size = _codec.item_size(item)
    if size > _codec.MAX_ITEM_BYTES:
        biggest = max(item, key=lambda a: _codec.av_size(item[a]))
        raise ValidationError(
            f"{meta.entity} {_keytext(obj)} is {size / 1024:.0f} KB, over DynamoDB's 400 KB item limit "
            f"(largest attribute: {biggest}, {_codec.av_size(item[biggest]) / 1024:.0f} KB); store large values "
            "elsewhere (S3) and keep a reference.", entity=meta.entity, field=biggest)


def _keytext(obj: EntityLike) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in obj.key.items())
