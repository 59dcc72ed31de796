"""Conditions of planned writes: the entity-type condition, the pins of rewritten index keys,
and the finishing of a request's expressions (size limit, placeholders).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from .exceptions import ValidationError
from .expressions import ExpressionBuilder

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike
    from .options import Options

__all__ = ["MAX_EXPRESSION_BYTES", "type_condition", "finish_params", "stored_knowledge", "pin_key_sources"]


#: DynamoDB's limit on the length of one expression string (bytes).
MAX_EXPRESSION_BYTES = 4096


def type_condition(b: ExpressionBuilder, meta: Options, *, or_absent: bool = False) -> str:
    """The condition that the stored item is of ``meta``'s entity type (``#type = :type``).

    Every write by key carries it on its own request, so a write aimed at an item of another entity
    type stored under the same key (``class Dog(Animal)`` keeping Animal's key templates) changes
    nothing and fails, as ``get()`` of that key finds nothing. ``#type = :type`` also means the item
    exists. ``or_absent``: the write may also create the item (an upsert, a delete of nothing), so
    ``attribute_not_exists(PK) OR #type = :type``.
    """
    tmeta = meta.table._meta
    match = f"{b.name(tmeta.type_attribute)} = {b.value({'S': meta.entity_type})}"
    return f"attribute_not_exists({b.name(tmeta.pk_attribute)}) OR {match}" if or_absent else match


def _grouped(expr: str) -> bool:
    """True when ``expr`` is one parenthesised group as a whole (``(a OR b)``, not ``(a) OR (b)``).

    DynamoDB refuses redundant parentheses (``((a OR b))``). Names and values are placeholders, so
    every parenthesis in a condition is syntax.
    """
    if not (expr.startswith("(") and expr.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(expr):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and i < len(expr) - 1:
            return False
    return True


def finish_params(params: dict[str, Any], b: ExpressionBuilder, conditions: list[str], entity: str = "?") -> None:
    """Finish a request: AND the conditions (each one group), add the placeholders, refuse an expression over 4 KB.

    Raises:
        ValidationError: the UpdateExpression or ConditionExpression is over DynamoDB's 4,096 bytes.
    """
    conditions = [c for c in conditions if c]
    if conditions:
        # each condition is one group, so an OR inside one never binds to the AND around it
        params["ConditionExpression"] = " AND ".join(
            f"({c})" if len(conditions) > 1 and not _grouped(c) else c for c in conditions)
    for what in ("UpdateExpression", "ConditionExpression"):
        size = len(params.get(what, "").encode("utf-8"))
        if size > MAX_EXPRESSION_BYTES:
            # refused here rather than by DynamoDB after a request (an entity of ~270 fields
            # or more cannot be saved whole as one UpdateItem)
            raise ValidationError(
                f"{entity}: the {what} of this write would be {size} bytes, over DynamoDB's "
                f"{MAX_EXPRESSION_BYTES}-byte limit; write fewer fields at once (save(update_fields=[...]) "
                "or update()).", entity=entity)
    if b.names:
        params["ExpressionAttributeNames"] = dict(b.names)
    if b.values:
        params["ExpressionAttributeValues"] = dict(b.values)


# -- derived keys: a rewritten index key is built from values the write knows ---------------
# An index key attribute (a GSI's, a template LSI's) is derived client-side from fields. A write
# that sets or removes it must know every field it is built from: each is either written by it,
# or was read and is pinned by a condition on its stored value, so a concurrent change fails the
# write (StaleWrite, nothing written) instead of leaving a key that disagrees with the fields
# stored beside it. A field the write cannot know (never read, deferred) refuses the write
# before any request.

def stored_knowledge(model: type[EntityLike], instance: EntityLike | None,
                     key: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """What a write knows of the stored item: ``(field -> value, unknown field -> why unknown)``.

    An instance read (or written whole) knows every field except those deferred (``only()``,
    an ``F()`` result not returned) and those a blind ``save(update_fields=...)`` did not write;
    an instance never read knows only its primary key; a write by key knows the fields of its
    key dict (values other than the primary key's are the caller's claim, pinned like a read).
    The version field is left out (the version condition handles it).
    """
    meta = model._meta
    keyf = set(meta.key_fields)
    vf = meta.version_field
    unknown: dict[str, str] = {}
    if instance is None:
        given = dict(key or {})
        for n in meta.fields:
            if n not in given and n != vf:
                unknown[n] = "a write by key reads nothing"
        return {n: v for n, v in given.items() if n in meta.fields}, unknown
    state = instance._state
    values = instance.attribute_values
    if state.adding:
        for n in meta.fields:
            if n not in keyf and n != vf:
                unknown[n] = "this instance was never read from the table"
    elif state.partial and state.deferred is None:
        for n in meta.fields:
            if n not in keyf and n != vf:
                unknown[n] = "only() did not read it"
    else:
        if state.deferred is not None:
            why = "only() deferred it" if state.partial else "an F() expression changed it and its result was not read"
            for n in state.deferred[0]:
                if n not in values:  # a deferred field assigned since is pinned at the assigned value
                    unknown[n] = why
        for n in state.unread:
            unknown.setdefault(n, "this instance wrote other fields without reading the item")
    known = {n: values.get(n) for n in meta.fields if n not in unknown and n != vf}
    return known, unknown


def pin_key_sources(model: type[EntityLike], b: ExpressionBuilder, written: Iterable[str], known: Mapping[str, Any],
                    unknown: Mapping[str, str], read_as: Mapping[str, tuple[Any, Any]] | None = None,
                    ) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """Plan the conditions that pin the fields a rewritten index key is built from but this write does not write.

    For every index whose key attributes are rewritten from templates (a written field is one
    of its template fields), every other non-key source field must be known: it is pinned at its
    value (``#f = :v``, ``attribute_not_exists(#f)`` for ``None``; a value equal to the field's
    default also matches an absent attribute, which reads as that default). The sources are
    :attr:`Options.key_sources`: the index's template fields and, for an attribute it shares
    with other indexes (one ``Data`` sorting GSI1 and GSI2), theirs too, because whether the
    attribute stays when this index loses a value depends on whether another writer of it has
    every value.

    A field that still holds the value read is pinned at the attribute as it was stored
    (``read_as``, from ``obj._state.read_as``): ``attribute_not_exists`` when it was absent, whatever
    the default read in its place, and the stored text itself when another writer stored the value
    in another form (``2024-05-01T12:00:00Z``); re-serialising the value would make a pin that can
    never hold, so the "safe to retry" ``StaleWrite`` would fail forever.

    Args:
        model: the entity class; b: the request's expression builder; written: the fields the
            write sets or removes; known, unknown: from :func:`stored_knowledge`; read_as: the
            instance's ``_state.read_as`` (``None`` for a write by key).

    Returns:
        (conditions, ``{field: value pinned}``, ``{field: attribute pinned}`` for the fields pinned as stored).

    Raises:
        ValidationError: a source field is unknown (naming entity, field, index, key attributes
            and the remedy); nothing is sent.
    """
    meta = model._meta
    written = set(written)
    keyf = set(meta.key_fields)
    tmeta = meta.table._meta
    conditions: list[str] = []
    pins: dict[str, Any] = {}
    pinned_as: dict[str, Any] = {}
    for bound in meta.indexes.values():
        if not bound.writes_key_attributes:
            continue
        touched = [n for n in bound.fields if n not in keyf and n in written]
        if not touched:
            continue
        sources = [n for n in meta.key_sources[bound.name] if n not in keyf]
        missing = [n for n in sources if n not in written and n in unknown]
        if missing:
            attrs = ", ".join(a for a in bound.key_attrs if a != tmeta.sk_attribute and a != tmeta.pk_attribute)
            raise ValidationError(
                f"{meta.entity}: writing {', '.join(touched)} rewrites index {bound.name} ({bound.index_name}: "
                f"{attrs}), whose key also needs {', '.join(missing)}{_shared_with(meta, bound, missing[0])}, and "
                f"this write does not know the stored value ({unknown[missing[0]]}); nothing was sent. To change "
                "it, read the item first (get(), or refresh_from_db() on this instance) and write from the "
                f"instance read, or write {', '.join(missing)} too (update(...) / update_fields=[...]).",
                entity=meta.entity, field=missing[0], value=None)
        for n in sources:
            if n in written or n in pins:
                continue
            pins[n] = known.get(n)
            as_read = (read_as or {}).get(n)
            if as_read is not None and _same(as_read[0], pins[n]):
                pinned_as[n] = as_read[1]
                path = b.name(meta.fields[n].attr_name)
                conditions.append(f"attribute_not_exists({path})" if as_read[1] is None
                                  else f"{path} = {b.value(as_read[1])}")
            else:
                conditions.append(_pin_condition(b, meta, n, pins[n]))
    return conditions, pins, pinned_as


def _same(read: Any, value: Any) -> bool:
    """The value read is still the value held (``1 == True`` and ``1 == 1.0`` are not the same value here)."""
    return type(read) is type(value) and read == value


def _shared_with(meta: Any, bound: Any, name: str) -> str:
    """`` (index X also writes Data, and whether it stays depends on it)`` when ``name`` is not one of
    ``bound``'s own fields but a field of another index sharing a key attribute with it."""
    if name in bound.fields:
        return ""
    for attr, writers in meta.shared_key_attributes.items():
        if bound in writers:
            other = next((w for w in writers if w is not bound and name in w.fields), None)
            if other is not None:
                return (f" (index {other.name} also writes {attr}, which stays while {other.name} has every "
                        "value of its key)")
    return ""


def _pin_condition(b: ExpressionBuilder, meta: Any, name: str, value: Any) -> str:
    f = meta.fields[name]
    path = b.name(f.attr_name)
    raw = f.serialize(value) if value is not None else None
    if raw is None:
        return f"attribute_not_exists({path})"
    match = f"{path} = {b.value({f.attr_type: raw})}"
    default = getattr(f, "default", None)
    if default is not None and not callable(default) and default == value:
        return f"{match} OR attribute_not_exists({path})"  # stored without it: read as the default
    return match
