"""Keys of a planned write: the primary key of a target, and the key values DynamoDB would refuse.

Every check here runs before any request, naming entity, field and value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from . import _codec
from .exceptions import InvalidKeyValue, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike
    from .options import Options

__all__ = ["check_key_sizes", "is_instance", "primary_key_of", "stored_key", "check_lsi_values",
           "check_index_attributes", "entity_key_text"]


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


def is_instance(value: Any) -> bool:
    """True for an entity instance (by capability: it has ``_state`` and ``attribute_values``)."""
    return not isinstance(value, Mapping) and hasattr(value, "_state") and hasattr(value, "attribute_values")


def primary_key_of(model: type[EntityLike], key: Mapping[str, Any] | EntityLike) -> dict[str, Any]:
    """Return the primary key (DynamoDB JSON) for a key dict of primary-key fields or an instance.

    Raises:
        ValidationError: the dict misses a primary-key field or names an unknown field.
        InvalidKeyValue: a value cannot be put in a key.
    """
    meta = model._meta
    if is_instance(key):
        if not isinstance(key, model):
            raise ValidationError(f"expected a {model.__name__} or a key dict, got a {type(key).__name__}.",
                                  entity=meta.entity)
        return stored_key(key)  # type: ignore[arg-type]
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


def stored_key(obj: EntityLike) -> dict[str, Any]:
    """The primary key (DynamoDB JSON) an instance is stored under: as read or last written,
    else rendered from its fields (a new instance)."""
    meta = obj._meta
    tmeta = meta.table._meta
    model = type(obj)
    values = obj.attribute_values
    stored_pk = values.get(model._dynamo_to_python_attr(tmeta.pk_attribute))
    if stored_pk is not None:
        key = {tmeta.pk_attribute: {"S": stored_pk}}
        if tmeta.sk_attribute:
            key[tmeta.sk_attribute] = {"S": values.get(model._dynamo_to_python_attr(tmeta.sk_attribute))}
        return key
    return meta.primary_key(values)


def check_lsi_values(meta: Options, item: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """Refuse an LSI sort-key value DynamoDB would refuse: empty, or over 1024 bytes.

    An LSI's sort key is a field's own attribute (not rendered from a template), so the checks
    the key renderer makes for table and GSI keys are made here, on every write path.

    Args:
        meta: the entity's ``Options``; item: attribute -> DynamoDB JSON about to be written;
            values: field name -> value, to name field and value.

    Raises:
        InvalidKeyValue: naming entity, field and value, before any request.
    """
    lsis = meta.table._meta.lsis
    if not lsis:
        return
    attrs = {a: name for name, a in lsis.items() if a in item}
    for attr, index in attrs.items():
        av = item[attr]
        if av.get("S") == "" or av.get("B") in (b"", ""):
            field = next((n for n, f in meta.fields.items() if f.attr_name == attr), attr)
            raise InvalidKeyValue(
                f"{meta.entity}.{field}='': attribute {attr} is the sort key of index {index}, and DynamoDB refuses an "
                "empty string in an index key attribute; give a non-empty value, or None to leave the item out of "
                "the index. Nothing was sent.", entity=meta.entity, field=field, value="")
    check_key_sizes(meta, {a: item[a] for a in attrs}, values)


def check_index_attributes(meta: Any, item: Mapping[str, Any]) -> None:
    """Refuse values DynamoDB refuses in a multi-attribute GSI's key attributes, before any request.

    Such an index's keys are the fields' own attributes: an empty string or binary there, or
    one over the key-size limit, makes DynamoDB refuse the whole write.

    Args:
        meta: the entity's options; item: attribute name -> DynamoDB attribute value to be written.

    Raises:
        InvalidKeyValue: naming the entity, the field, the index and the value.
    """
    for gname, multi in meta.table._meta.multi_gsis.items():
        # a multi-attribute GSI's keys are the fields' own attributes: DynamoDB refuses the whole
        # write for an empty string or binary there, or one over the key-size limit
        for role, pairs in (("partition", multi.pk), ("sort", multi.sk)):
            for attr, _typ in pairs:
                av = item.get(attr)
                if not isinstance(av, dict) or not ({"S", "B"} & set(av)):
                    continue
                raw = av.get("S", av.get("B"))
                fname = next((n for n, f in meta.fields.items() if f.attr_name == attr), attr)
                if raw in ("", b""):
                    raise InvalidKeyValue(
                        f"{meta.entity}.{fname}='': {attr} is a {role} key attribute of GSI {gname}, and DynamoDB "
                        "refuses an empty value there; store None instead (the item is then left out of the "
                        "index). Nothing was sent.", entity=meta.entity, field=fname, value=raw)
                if isinstance(raw, (str, bytes)):
                    problem = _codec.key_size_problem(raw, role == "partition")
                    if problem is not None:
                        raise InvalidKeyValue(
                            f"{meta.entity}.{fname}={_short(raw)}: {attr} is a {role} key attribute of GSI {gname} "
                            f"and would be {problem}. Nothing was sent.", entity=meta.entity, field=fname, value=raw)
            _check_aggregate_key_size(meta, gname, role, [a for a, _ in pairs], item)


def _check_aggregate_key_size(meta: Any, gname: str, role: str, attrs: list[str], item: Mapping[str, Any]) -> None:
    """Refuse key attributes of one role of a multi-attribute GSI whose sizes add up past DynamoDB's limit.

    DynamoDB limits the sum of the HASH attributes to 2048 bytes and of the RANGE attributes to
    1024 bytes (strings in UTF-8, binaries as bytes, numbers 1 byte per two significant digits
    plus 1), whatever each one's own size.
    """
    present = [(a, item[a]) for a in attrs if isinstance(item.get(a), dict) and {"S", "N", "B"} & set(item[a])]
    if len(present) < 2:
        return
    sizes = [(a, _codec.av_size(av)) for a, av in present]
    total = sum(size for _, size in sizes)
    limit = _codec.MAX_PARTITION_KEY_BYTES if role == "partition" else _codec.MAX_SORT_KEY_BYTES
    if total <= limit:
        return
    names = {f.attr_name: n for n, f in meta.fields.items()}
    fname, biggest = max(sizes, key=lambda pair: pair[1])
    field = names.get(fname, fname)
    value = next(iter(dict(present)[fname].values()))
    described = ", ".join(f"{names.get(a, a)} ({size} bytes)" for a, size in sizes)
    raise InvalidKeyValue(
        f"{meta.entity}: the {role} key attributes of GSI {gname} would be {total} bytes together: {described}, over "
        f"DynamoDB's {limit}-byte limit for the sum of an index's {role} key attributes; shorten {field} (or another). "
        "Nothing was sent.", entity=meta.entity, field=field, value=value)


def entity_key_text(model: type[EntityLike], target: EntityLike | Mapping[str, Any]) -> str:
    """The primary-key fields of an instance or key dict, for messages (``"sku='A-1'"``)."""
    key = target.key if not isinstance(target, Mapping) else target
    return ", ".join(f"{k}={v!r}" for k, v in key.items() if k in model._meta.key_fields)
