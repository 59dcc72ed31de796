"""Unique constraints: the declaration (``UniqueConstraint``, ``fields.String(unique=True)``) and the
sentinel item that holds each unique value.

Spelled as Django's::

    class Member(Entity):
        tenant_id = fields.String()
        email = fields.String(unique=True)       # unique across every Member
        handle = fields.String(null=True)

        class Meta:
            table = Shop
            pk = "M#{member_id}"
            constraints = [UniqueConstraint(fields=["tenant_id", "handle"], name="unique_handle_per_tenant")]

DynamoDB has no unique index, so each unique value is a **sentinel item** in the entity's own table,
written in the same TransactWriteItems as the entity (see :mod:`dynorm.write_unique` for the
actions): a Put conditional on ``attribute_not_exists`` claims the value, so two items can never
hold it. The sentinel's partition key is ``dynorm#unique#<entity type>#<constraint name>#<values>``
(every part escaped as key values are, so the text is injective), its sort key (when the table has
one) ``dynorm#unique``, its entity type ``dynorm#unique``; it stores the owner's entity type and
primary-key *field* values (never rendered keys, so a key-version rekey leaves it valid) and the
revision token of the write that claimed it. As in Django, a ``None`` value has no sentinel: many
items may leave a unique field empty.

This module is pure (layer 1 of the write path: no I/O, no PynamoDB): declaration checks at class
creation, the values of a constraint, and the sentinel's key.
"""

from __future__ import annotations

import base64
import decimal
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from .exceptions import ModelError, ValidationError
from .keys import escape_text

if TYPE_CHECKING:  # pragma: no cover
    from .fields import Field

__all__ = ["UniqueConstraint", "SENTINEL_TYPE", "SENTINEL_PREFIX", "SENTINEL_SK", "OWNER_TYPE_ATTRIBUTE",
           "OWNER_KEY_ATTRIBUTE", "CONSTRAINT_ATTRIBUTE", "MAX_PARTITION_KEY_BYTES", "resolve_constraints",
           "constraint_values", "sentinel_pk", "sentinel_pk_text", "av_text", "canonical_number", "sentinel_key",
           "is_sentinel", "unique_fields"]

#: The entity type of every sentinel item (``entityType``): no model may declare it.
SENTINEL_TYPE = "dynorm#unique"
#: Every sentinel's partition key starts with this text (no entity key template can render it:
#: ``dynorm check`` reserves the ``dynorm#`` prefix for dynorm's own items).
SENTINEL_PREFIX = "dynorm#unique#"
#: The sort key of every sentinel, on a table that has a sort key.
SENTINEL_SK = "dynorm#unique"
#: The owner's entity type (S), its primary-key field values (M: field -> DynamoDB JSON) and the
#: constraint's name (S), stored on each sentinel.
OWNER_TYPE_ATTRIBUTE = "_dynorm_owner_type"
OWNER_KEY_ATTRIBUTE = "_dynorm_owner_key"
CONSTRAINT_ATTRIBUTE = "_dynorm_constraint"
#: DynamoDB's limit on a partition-key value (UTF-8 bytes).
MAX_PARTITION_KEY_BYTES = 2048

#: Field kinds whose values can be claimed: one scalar per item (a List, Map or Set has no one value).
_SCALAR_KINDS = frozenset({"String", "ULID", "Integer", "Number", "Decimal", "DateTime", "Boolean", "Binary"})


class UniqueConstraint:
    """Django's ``UniqueConstraint``: no two items of the entity share these fields' values.

    Args:
        fields: field names (one or more; ``str`` for one); an item with any of them ``None`` is
            not constrained (as in SQL and Django: many items may leave a field empty).
        name: the constraint's name, unique within the entity; it appears in the sentinel's key,
            in :class:`dynorm.IntegrityError` and in migrations.

    Each constrained write adds one action per changed value to its TransactWriteItems (see
    ``docs/constraints.md``).
    """

    def __init__(self, *, fields: Sequence[str] | str, name: str) -> None:
        self.fields = (fields,) if isinstance(fields, str) else tuple(fields)
        self.name = name

    def __repr__(self) -> str:
        return f"UniqueConstraint(fields={list(self.fields)!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UniqueConstraint) and (self.fields, self.name) == (other.fields, other.name)

    def __hash__(self) -> int:
        return hash((self.fields, self.name))

    def deconstruct(self) -> dict[str, Any]:
        """Return the constraint as plain data (``{"fields": [...], "name": ...}``), for migration files."""
        return {"fields": list(self.fields), "name": self.name}


def resolve_constraints(entity: str, declared: Any, fields: Mapping[str, Field], key_fields: Sequence[str],
                        version_field: str | None) -> tuple[UniqueConstraint, ...]:
    """The entity's constraints: one per ``unique=True`` field (named ``unique_<field>``), then ``Meta.constraints``.

    Args:
        entity: the class name (for messages); declared: ``Meta.constraints`` (``None``: none);
        fields: the entity's fields; key_fields: its primary-key fields; version_field: its
        ``fields.Version()`` field or ``None``.

    Raises:
        ModelError: a constraint that is not a :class:`UniqueConstraint`, without fields or name,
            naming an unknown field, a List/Map/Set field or the version, two constraints of one
            name or over the same fields, or one over every primary-key field (the primary key
            already is unique: nothing to enforce).
    """
    out = [UniqueConstraint(fields=[n], name=f"unique_{n}") for n, f in fields.items() if getattr(f, "unique", False)]
    if declared is None:
        declared = ()
    if isinstance(declared, (str, bytes)) or not isinstance(declared, Iterable):
        raise ModelError(f"{entity}.Meta.constraints must be a list of dynorm.UniqueConstraint, got {declared!r}.")
    for c in declared:
        if not isinstance(c, UniqueConstraint):
            raise ModelError(f"{entity}.Meta.constraints: {c!r} is not a dynorm.UniqueConstraint "
                             "(the only constraint dynorm enforces).")
        out.append(c)
    names: dict[str, UniqueConstraint] = {}
    covered: dict[frozenset[str], str] = {}
    for c in out:
        _check_one(entity, c, fields, key_fields, version_field)
        if c.name in names:
            raise ModelError(f"{entity}: two unique constraints are named {c.name!r}; give each its own name "
                             "(a field's unique=True is named unique_<field>).")
        names[c.name] = c
        if frozenset(c.fields) in covered:
            raise ModelError(f"{entity}: constraints {covered[frozenset(c.fields)]!r} and {c.name!r} constrain the "
                             f"same fields ({', '.join(c.fields)}); keep one.")
        covered[frozenset(c.fields)] = c.name
    return tuple(out)


def _check_one(entity: str, c: UniqueConstraint, fields: Mapping[str, Field], key_fields: Sequence[str],
               version_field: str | None) -> None:
    if not isinstance(c.name, str) or not c.name:
        raise ModelError(f"{entity}: {c!r} needs a name (name=\"unique_email_per_tenant\").")
    if not c.fields or not all(isinstance(n, str) for n in c.fields) or len(set(c.fields)) != len(c.fields):
        raise ModelError(f"{entity}: constraint {c.name!r} needs distinct field names, got {list(c.fields)!r}.")
    for n in c.fields:
        f = fields.get(n)
        if f is None:
            raise ModelError(f"{entity}: constraint {c.name!r} names {n!r}, which is not a field of {entity} "
                             f"(fields: {', '.join(fields)}).")
        if n == version_field or getattr(f, "kind", "") not in _SCALAR_KINDS:
            raise ModelError(f"{entity}: constraint {c.name!r} names {n!r}, a {getattr(f, 'kind', type(f).__name__)} "
                             "field; unique values must be one string, number, datetime, boolean or binary "
                             "(and not the version).")
    if key_fields and set(key_fields) <= set(c.fields):
        raise ModelError(
            f"{entity}: constraint {c.name!r} covers every primary-key field ({', '.join(key_fields)}), so it is "
            "already enforced by the key itself (two items cannot share a primary key): remove it.")


def unique_fields(constraints: Iterable[UniqueConstraint]) -> tuple[str, ...]:
    """The field names any of ``constraints`` covers, in first-seen order."""
    return tuple(dict.fromkeys(n for c in constraints for n in c.fields))


def constraint_values(c: UniqueConstraint, values: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The constraint's values in an item (field order), or ``None`` when one is ``None`` (no sentinel)."""
    out = tuple(values.get(n) for n in c.fields)
    return None if any(v is None for v in out) else out


def av_text(av: Mapping[str, Any]) -> str:
    """The text of one stored value (DynamoDB JSON, ``{"S": "a"}``) in a sentinel key: one text per value
    DynamoDB stores, whichever way it was written (the migration backfill reads it from raw items, the
    application renders it from the field), binary as base64, a number canonical (:func:`canonical_number`)."""
    ((kind, raw),) = av.items()
    if isinstance(raw, (bytes, bytearray)):
        return base64.b64encode(bytes(raw)).decode("ascii")
    if kind == "N":
        return canonical_number(raw)
    return str(raw)


def canonical_number(text: str) -> str:
    """The one text of a number as DynamoDB stores it: ``1.50``, ``1.5`` and ``15E-1`` give ``1.5``, ``1E+2``
    gives ``100``, ``-0`` gives ``0`` (no exponent, no trailing zero).

    Used in sentinel keys only: DynamoDB compares numbers by value, so ``Decimal("1.50")`` and
    ``Decimal("1.5")`` are one stored value and must claim one sentinel; item attributes keep
    :func:`dynorm._codec.number_text`.
    """
    d = decimal.Decimal(text)
    if d.is_zero():
        return "0"
    with decimal.localcontext() as ctx:
        ctx.prec = 60  # DynamoDB keeps 38 significant digits: normalize() never rounds here
        return format(d.normalize(ctx), "f")


def _value_text(f: Field, value: Any) -> str:
    return av_text({f.attr_type: f.serialize(value)})


def sentinel_pk_text(entity_type: str, name: str, texts: Sequence[str]) -> str:
    """``dynorm#unique#<entity type>#<name>#<text>...``, every part escaped (the one renderer of sentinel keys)."""
    return SENTINEL_PREFIX + "#".join(escape_text(p) if p else p for p in (entity_type, name, *texts))


def sentinel_pk(entity_type: str, c: UniqueConstraint, fields: Mapping[str, Field], vals: Sequence[Any], *,
                entity: str = "?") -> str:
    """Render the sentinel's partition key: ``dynorm#unique#<entity type>#<name>#<v1>#<v2>...``.

    Every part is escaped as key values are (``#`` and the escape character), so two different
    (entity type, constraint, values) never give one text.

    Raises:
        ValidationError: the text is over DynamoDB's 2048-byte partition-key limit (names entity,
            constraint and the longest value); nothing was sent.
    """
    text = sentinel_pk_text(entity_type, c.name, [_value_text(fields[n], v) for n, v in zip(c.fields, vals)])
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_PARTITION_KEY_BYTES:
        longest = max(zip(c.fields, vals), key=lambda nv: len(str(nv[1])))
        raise ValidationError(
            f"{entity}.{longest[0]}={str(longest[1])[:40]!r}...: unique constraint {c.name!r} keeps each value in "
            f"the key of a sentinel item, and this one would be {size} bytes, over DynamoDB's "
            f"{MAX_PARTITION_KEY_BYTES}-byte partition-key limit. Shorten the value (or constrain a hash of it); "
            "nothing was sent.", entity=entity, field=longest[0], value=longest[1])
    return text


def sentinel_key(table_meta: Any, pk: str) -> dict[str, Any]:
    """The sentinel's primary key in DynamoDB JSON (its sort key ``dynorm#unique`` when the table has one)."""
    key = {table_meta.pk_attribute: {"S": pk}}
    if table_meta.sk_attribute:
        key[table_meta.sk_attribute] = {"S": SENTINEL_SK}
    return key


def is_sentinel(raw: Mapping[str, Any], type_attribute: str) -> bool:
    """True when a raw item (DynamoDB JSON) is a unique-constraint sentinel."""
    return raw.get(type_attribute) == {"S": SENTINEL_TYPE}
