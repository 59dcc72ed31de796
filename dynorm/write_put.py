"""Planning ``save()``/``create()`` of an instance: a PutItem of a new item, or an UpdateItem that keeps
what the model does not declare (:func:`prepare_put`).
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from . import _codec
from .exceptions import KeyChangeError, ValidationError
from .expressions import ExpressionBuilder
from .write_conditions import finish_params, pin_key_sources, stored_knowledge, type_condition
from .write_keys import check_index_attributes, check_key_sizes, check_lsi_values, stored_key
from .write_op import WriteOp, new_token
from .write_update import prepare_update, unread_after_write

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike
    from .options import Options

__all__ = ["prepare_put"]


# -- Put / save ----------------------------------------------------------------------------
def _item_values(meta: Options, values: Mapping[str, Any], names: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
    """Serialize ``names`` of ``values``: (attribute -> DynamoDB JSON, attributes to remove)."""
    item: dict[str, Any] = {}
    absent: list[str] = []
    fields = meta.fields
    for name in names:
        f = fields[name]
        value = values.get(name)
        raw = f.serialize(value) if value is not None else None
        if raw is None:
            absent.append(f.attr_name)
        else:
            item[f.attr_name] = {f.attr_type: raw}
    return item, absent


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
    meta = obj._meta
    tmeta = meta.table._meta
    state = obj._state
    entity = meta.entity
    if state.deferred is not None and not (state.partial and update_fields is None):
        # a deferred field (only(), or an F() result not returned) is unknown, never written as None
        wanted = meta.fields if update_fields is None else [n for n in update_fields if n in meta.fields]
        missing = [n for n in wanted if n in state.deferred[0] and n not in obj.attribute_values]
        if missing:
            raise ValidationError(
                f"{entity} {_keytext(obj)}: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} deferred (not "
                "read by only(), or changed by an F() expression whose result did not come back, as in a "
                "transaction), so saving would write a value this instance never saw; load "
                f"{'it' if len(missing) == 1 else 'them'} first (obj.refresh_from_db(), or read the field: save() "
                "does that itself). Nothing was sent.", entity=entity, field=missing[0])
    if state.partial and update_fields is not None:
        # read with only(): fields not read are unknown, not None, so plan it as update() does
        # (an index key needing a field that was not read is refused, never removed)
        names = list(dict.fromkeys(update_fields))
        unknown = [n for n in names if n not in meta.fields]
        if unknown or not names:
            raise ValidationError(f"{entity}.save(update_fields=...) needs field names of {entity}; got "
                                  f"{', '.join(map(repr, unknown)) or 'none'}.", entity=entity,
                                  field=unknown[0] if unknown else None)
        values = obj.attribute_values
        op = prepare_update(type(obj), instance=obj, changes={n: values.get(n) for n in names})
        op.verb = "save"
        return op
    if state.partial:
        raise ValidationError(
            f"{entity} {obj.key} was read with only()/values(), so saving it would drop the fields not "
            "read; read it fully (get()) before save(), or use save(update_fields=[...]) or update().",
            entity=entity)
    obj.full_clean()
    values = obj.attribute_values
    auto = {name: _dt.datetime.now(_dt.timezone.utc) for name, f in meta.fields.items()
            if getattr(f, "auto_now", False)}
    if auto:
        values = {**values, **auto}
    keys = meta.key_attributes(values)
    check_key_sizes(meta, keys, values)
    model = type(obj)
    key = {tmeta.pk_attribute: {"S": keys[tmeta.pk_attribute]}}
    if tmeta.sk_attribute:
        key[tmeta.sk_attribute] = {"S": keys[tmeta.sk_attribute]}
    fallback = state.fallback  # read under an older key version (read_versions)
    if not state.adding and not create and not fallback:
        old = stored_key(obj)
        if old != key:
            raise KeyChangeError(
                f"{entity}: primary-key field(s) {', '.join(meta.key_fields)} changed (key "
                f"{tuple(v['S'] for v in old.values())} -> {tuple(v['S'] for v in key.values())}); keys are "
                "immutable. Create a new item and delete the old one instead.")
    vf = meta.version_field
    vattr = meta.fields[vf].attr_name if vf else None
    current = None if fresh or not vf else values.get(vf)
    # an item read without a version attribute (written before the model had fields.Version(),
    # or by another writer) is at version 0: saved on condition attribute_not_exists(version)
    unversioned_read = bool(vf) and current is None and not state.adding and not fresh and not create
    # save(update_fields) of an instance never read: the stored version is incremented, never reset
    blind = bool(vf) and current is None and state.adding and update_fields is not None
    new_version = None if blind else (current or 0) + 1 if vf else None
    token = new_token()
    key_values = {model._dynamo_to_python_attr(a): t for a, t in keys.items()}
    verb = "create" if create else "save"
    description = f"{verb} {entity} {', '.join(f'{k}={values.get(k)!r}' for k in meta.key_fields)}"
    b = ExpressionBuilder()
    conditions: list[str] = []

    if update_fields is None and (create or (vf and current is None and not unversioned_read)):
        # PutItem of a new item: nothing stored can be lost
        item = {tmeta.type_attribute: {"S": meta.entity_type}}
        for attr, text in keys.items():
            if text is not None:
                item[attr] = {"S": text}
        fields_av, _ = _item_values(meta, values, (n for n in meta.fields if n != vf))
        item.update(fields_av)
        if vattr:
            item[vattr] = {"N": str(new_version)}
        item[tmeta.revision_attribute] = {"S": token}
        _check_size(meta, obj, item)
        conditions.append(f"attribute_not_exists({b.name(tmeta.pk_attribute)})")
        params: dict[str, Any] = {"TableName": meta.table.table_name(), "Item": item}
        finish_params(params, b, conditions, meta.entity)
        return WriteOp("Put", model, params, key, description, instance=obj, verb=verb,
                       expected_version=current, new_version=new_version,
                       local_changes=auto, key_values=key_values, token=token, unread_after=frozenset())

    # UpdateItem: SET what the model declares, keep what it does not
    if update_fields is not None:
        names = list(dict.fromkeys(update_fields))
        unknown = [n for n in names if n not in meta.fields]
        if unknown or not names:
            raise ValidationError(
                f"{entity}.save(update_fields=...) needs field names of {entity}; "
                f"{'unknown: ' + ', '.join(map(repr, unknown)) if unknown else 'none given'} "
                f"(fields: {', '.join(meta.fields)}).", entity=entity, field=unknown[0] if unknown else None)
        names += [n for n in auto if n not in names]
        names = [n for n in names if n != vf]
        touched = set(names)
        # the index keys rewritten are built from fields written or pinned at their stored values
        known, not_known = stored_knowledge(model, obj)
        pin_conditions, pins, pinned_as = pin_key_sources(model, b, touched, known, not_known, state.read_as)
        unread_after = unread_after_write(obj, touched)
        index_attrs: dict[str, str | None] = {}
        for bound in meta.indexes.values():
            if bound.writes_key_attributes and touched & set(bound.fields):
                index_attrs.update(meta.index_key(bound, values, keys[tmeta.pk_attribute] or ""))
        conditions.append(type_condition(b, meta))  # the item exists, and is this entity's
        local = {n: values.get(n) for n in auto}
        upsert = False
    else:
        names = [n for n in meta.fields if n != vf]
        # an instance read from the table: never re-create an item deleted or moved (a move-mode
        # migration) since it was read, at a key nothing reads any more; a new instance's save()
        # is an upsert. Either way never over an item of another entity type
        upsert = state.adding and current is None
        conditions.append(type_condition(b, meta, or_absent=upsert or bool(fallback)))
        own = {a for bound in meta.indexes.values() if bound.writes_key_attributes
               for a, _ in meta.index_key(bound, {}, "")}
        index_attrs = {a: t for a, t in keys.items() if a in own}
        local = dict(auto)
        pin_conditions, pins, pinned_as, unread_after = [], {}, {}, frozenset()  # every field is written
    item, absent = _item_values(meta, values, names)
    if update_fields is not None:
        check_lsi_values(meta, item, values)
    sets: list[str] = []
    removes: list[str] = [b.name(a) for a in absent]
    if update_fields is None:
        sets.append(f"{b.name(tmeta.type_attribute)} = {b.value({'S': meta.entity_type})}")
    for attr, text in index_attrs.items():
        if text is None:
            removes.append(b.name(attr))
        else:
            item[attr] = {"S": text}
    for attr, av in item.items():
        sets.append(f"{b.name(attr)} = {b.value(av)}")
    if vattr:
        vpath = b.name(vattr)
        if blind:
            sets.append(f"{vpath} = if_not_exists({vpath}, {b.value({'N': '0'})}) + {b.value({'N': '1'})}")
        else:
            sets.append(f"{vpath} = {b.value({'N': str(new_version)})}")
        if unversioned_read:
            conditions.append(f"attribute_not_exists({vpath})")
        elif current is not None:
            match = f"{vpath} = {b.value({'N': str(current)})}"
            conditions.append(f"attribute_not_exists({b.name(tmeta.pk_attribute)}) OR {match}" if fallback else match)
    conditions += pin_conditions
    sets.append(f"{b.name(tmeta.revision_attribute)} = {b.value({'S': token})}")
    if update_fields is None:
        # the item as stored: the key, type and revision attributes count too (as in create)
        _check_size(meta, obj, {**item, **key, tmeta.type_attribute: {"S": meta.entity_type},
                                tmeta.revision_attribute: {"S": token}})
    else:
        check_index_attributes(meta, item)
    expression = "SET " + ", ".join(sets)
    if removes:
        expression += " REMOVE " + ", ".join(removes)
    params = {"TableName": meta.table.table_name(), "Key": key, "UpdateExpression": expression}
    finish_params(params, b, conditions, meta.entity)
    if update_fields is not None:
        key_values = {model._dynamo_to_python_attr(a): t for a, t in index_attrs.items()}
    return WriteOp("Update", model, params, key, description, instance=obj, verb=verb,
                   expected_version=0 if unversioned_read else current, new_version=new_version,
                   local_changes=local, key_values=key_values, token=token, pins=pins, pinned_as=pinned_as,
                   unread_after=unread_after, may_create=upsert)


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
