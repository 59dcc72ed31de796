"""Planning the sentinel actions of unique constraints (:mod:`dynorm.constraints`) beside an entity's write.

Pure: a planned entity write (:class:`~dynorm.write_op.WriteOp`) and what is stored in, the write
with its sentinel actions (``op.sentinels``) and the condition that keeps them true out. A write
that carries sentinels is always sent as one TransactWriteItems (:mod:`dynorm.sender`,
:mod:`dynorm.transaction`, :mod:`dynorm.batch`), so the entity and its sentinels change together or
not at all.

Per constraint whose values the write changes (``old`` stored -> ``new`` written):

* ``new`` (not ``None``): a Put of the sentinel, conditional on ``attribute_not_exists(PK)``: a
  value another item holds cancels the whole write (:class:`~dynorm.exceptions.IntegrityError`);
* ``old`` (not ``None``): a Delete of the old sentinel, conditional on it belonging to this item
  (owner entity type and key fields) or being absent;
* unchanged: no sentinel action.

The entity write itself gets a condition that its stored unique values are still those the plan
started from (the value read, or for a new instance's upsert "absent, or already these values"),
so a concurrent change can never leave a sentinel behind or a value claimed twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .constraints import (
    CONSTRAINT_ATTRIBUTE,
    OWNER_KEY_ATTRIBUTE,
    OWNER_TYPE_ATTRIBUTE,
    SENTINEL_TYPE,
    UniqueConstraint,
    constraint_values,
    sentinel_key,
    sentinel_pk,
    unique_fields,
)
from .exceptions import ConditionFailed, DynormError, IntegrityError, ValidationError
from .expressions import F
from .write_op import WriteOp

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["SentinelOp", "UPSERT", "attach_unique", "known_stored", "touches_unique", "merge_sentinels",
           "check_unique_changes"]


class _Upsert:
    def __repr__(self) -> str:
        return "UPSERT"


#: ``stored`` of a new instance's upsert: the item is absent, or already holds the values written.
UPSERT: Any = _Upsert()


@dataclass
class SentinelOp(WriteOp):
    """A Put or Delete of one sentinel item, an action of its owner's TransactWriteItems.

    Attributes:
        constraint: the constraint; values: its values (field -> value); owner: the owner's
            primary-key fields (DynamoDB JSON map); releases: for a merged Put (one item takes the
            value another item of the same transaction releases), that item's owner map.
    """

    constraint: UniqueConstraint | None = None
    values: dict[str, Any] = field(default_factory=dict)
    owner: dict[str, Any] = field(default_factory=dict)

    def error(self, exc: ConditionFailed | None, raw_item: Mapping[str, Any] | None = None) -> DynormError:
        """The :class:`IntegrityError` naming entity, constraint and values (nothing was written)."""
        name = self.model.__name__
        c = self.constraint
        assert c is not None
        shown = ", ".join(f"{k}={v!r}" for k, v in self.values.items())
        if self.kind == "Put":
            message = (f"{self.description}: {shown} is already taken by another {name} (unique constraint "
                       f"{c.name!r}); nothing was written. Choose another value, or change the item that holds it.")
        else:
            message = (f"{self.description}: the sentinel of {shown} (unique constraint {c.name!r}) belongs to "
                       "another item, so this write was refused; nothing was written. Re-read the item and "
                       "apply the change again.")
        return IntegrityError(message, entity=name, constraint=c.name, fields=c.fields, values=self.values)

    def applied(self, attributes: Mapping[str, Any] | None = None) -> EntityLike | None:
        """Nothing to apply: a sentinel has no instance."""
        return None

    def applied_earlier(self, exc: ConditionFailed) -> bool:
        """Sentinel actions travel in a TransactWriteItems whose ClientRequestToken makes a retry harmless."""
        return False


def touches_unique(model: type[EntityLike], names: Any) -> bool:
    """True when a write of ``names`` (``None``: every field) changes a field a unique constraint covers."""
    covered = unique_fields(model._meta.constraints)
    if not covered:
        return False
    return names is None or bool(set(covered) & set(names))


def known_stored(obj: EntityLike) -> dict[str, Any] | None:
    """The unique fields' values as stored, from the instance's ``_state.unique_as``; ``None`` when one is not known."""
    covered = unique_fields(obj._meta.constraints)
    known = obj._state.unique_as
    if any(n not in known for n in covered):
        return None
    return {n: known[n] for n in covered}


def check_unique_changes(model: type[EntityLike], changes: Mapping[str, Any]) -> None:
    """Refuse an ``F()`` expression on a unique field (its new value, hence its sentinel, is not known).

    Raises:
        ValidationError: naming entity, field and expression; nothing was sent.
    """
    covered = set(unique_fields(model._meta.constraints))
    for n, v in changes.items():
        if n in covered and isinstance(v, F):
            raise ValidationError(
                f"{model.__name__}.{n}={v!r}: {n} is unique (a sentinel item holds each value), so its new value "
                "must be known before the write; give a plain value (read the item first).",
                entity=model.__name__, field=n, value=v)


def attach_unique(op: WriteOp, *, stored: Any, after: Mapping[str, Any] | None, owner: Mapping[str, Any],
                  names: Any = None) -> WriteOp:
    """Add the sentinel actions of ``op`` (``op.sentinels``) and the condition that keeps them true.

    Args:
        op: the entity's planned Put, Update or Delete (changed in place and returned).
        stored: the unique fields' stored values (field -> value), ``None`` when no item is stored
            (a create), or :data:`UPSERT` (a new instance's save: absent, or already these values).
        after: every unique field's value once written (``None`` for a Delete).
        owner: the item's primary-key field values (field -> value).
        names: the fields the write sets (``None``: every field).

    Returns:
        ``op``. Unchanged when the entity declares no constraint or the write changes no unique field.

    Raises:
        ValidationError: a sentinel key over DynamoDB's limits.
    """
    model = op.model
    meta = model._meta
    if not meta.constraints or (op.kind == "Update" and not touches_unique(model, names)):
        return op
    owner_map = _owner_map(model, owner)
    sentinels: list[WriteOp] = []
    for c in meta.constraints:
        new = constraint_values(c, after) if after is not None else None
        if stored is UPSERT:
            if new is not None:
                sentinels.append(_put(op, c, new, owner_map, or_own=True))
            continue
        old = constraint_values(c, stored) if stored is not None else None
        if old == new:
            continue
        if old is not None:
            sentinels.append(_delete(op, c, old, owner_map))
        if new is not None:
            sentinels.append(_put(op, c, new, owner_map, or_own=False))
    _pin_stored(op, stored, after)
    op.sentinels = sentinels
    if after is not None:
        op.unique_after = {n: after.get(n) for n in unique_fields(meta.constraints)}
    return op


def _owner_map(model: type[EntityLike], owner: Mapping[str, Any]) -> dict[str, Any]:
    fields = model._meta.fields
    out = {}
    for n in model._meta.key_fields:
        f = fields[n]
        out[n] = {f.attr_type: f.serialize(owner[n])}
    return {"M": out}


def _base(op: WriteOp, c: UniqueConstraint, vals: tuple[Any, ...]) -> tuple[dict[str, Any], dict[str, Any], str]:
    meta = op.model._meta
    tmeta = meta.table._meta
    pk = sentinel_pk(meta.entity_type, c, meta.fields, vals, entity=meta.entity)
    key = sentinel_key(tmeta, pk)
    return key, {n: v for n, v in zip(c.fields, vals)}, tmeta.pk_attribute


def _owned(owner_map: Mapping[str, Any], entity_type: str) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The condition "this sentinel belongs to that owner" and its placeholders."""
    return ("#uot = :uot AND #uok = :uok", {"#uot": OWNER_TYPE_ATTRIBUTE, "#uok": OWNER_KEY_ATTRIBUTE},
            {":uot": {"S": entity_type}, ":uok": dict(owner_map)})


def _put(op: WriteOp, c: UniqueConstraint, vals: tuple[Any, ...], owner_map: dict[str, Any], *,
         or_own: bool) -> SentinelOp:
    meta = op.model._meta
    tmeta = meta.table._meta
    key, values, pk_attr = _base(op, c, vals)
    item = {**key, tmeta.type_attribute: {"S": SENTINEL_TYPE}, OWNER_TYPE_ATTRIBUTE: {"S": meta.entity_type},
            OWNER_KEY_ATTRIBUTE: dict(owner_map), CONSTRAINT_ATTRIBUTE: {"S": c.name}}
    if op.token is not None:
        item[tmeta.revision_attribute] = {"S": op.token}  # the owner's write: its lost response is recognised
    params: dict[str, Any] = {"TableName": op.params["TableName"], "Item": item,
                              "ConditionExpression": "attribute_not_exists(#upk)",
                              "ExpressionAttributeNames": {"#upk": pk_attr}}
    if or_own:  # an upsert may find its own sentinel: the item already held this value
        expr, names, vals_av = _owned(owner_map, meta.entity_type)
        params["ConditionExpression"] = f"attribute_not_exists(#upk) OR ({expr})"
        params["ExpressionAttributeNames"].update(names)
        params["ExpressionAttributeValues"] = vals_av
    return SentinelOp("Put", op.model, params, key, op.description, verb=op.verb, token=op.token,
                      constraint=c, values=values, owner=owner_map)


def _delete(op: WriteOp, c: UniqueConstraint, vals: tuple[Any, ...], owner_map: dict[str, Any]) -> SentinelOp:
    meta = op.model._meta
    key, values, pk_attr = _base(op, c, vals)
    expr, names, vals_av = _owned(owner_map, meta.entity_type)
    params = {"TableName": op.params["TableName"], "Key": key,
              "ConditionExpression": f"attribute_not_exists(#upk) OR ({expr})",
              "ExpressionAttributeNames": {"#upk": pk_attr, **names}, "ExpressionAttributeValues": vals_av}
    return SentinelOp("Delete", op.model, params, key, op.description, verb=op.verb, constraint=c,
                      values=values, owner=owner_map)


def _pin_stored(op: WriteOp, stored: Any, after: Mapping[str, Any] | None) -> None:
    """AND the entity write's condition with "its unique fields are stored as the plan assumed"."""
    if op.kind == "Put" or stored is None and op.kind != "Delete":
        return  # a creating Put: attribute_not_exists(PK) already
    meta = op.model._meta
    tmeta = meta.table._meta
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    clauses: list[str] = []
    if stored is None:  # a Delete by key of an item not found: still absent
        names["#upk"] = tmeta.pk_attribute
        clauses.append("attribute_not_exists(#upk)")
    else:
        expected = after if stored is UPSERT else stored
        assert expected is not None
        if stored is not UPSERT:
            op.unique_before = {n: expected.get(n) for n in unique_fields(meta.constraints)}
        for i, n in enumerate(unique_fields(meta.constraints)):
            f = meta.fields[n]
            names[f"#uf{i}"] = f.attr_name
            v = expected.get(n)
            if v is None:
                clauses.append(f"attribute_not_exists(#uf{i})")
            else:
                values[f":uf{i}"] = {f.attr_type: f.serialize(v)}
                clauses.append(f"#uf{i} = :uf{i}")
        if stored is UPSERT or op.kind == "Delete":  # deleting an item already gone stays a no-op
            names["#upk"] = tmeta.pk_attribute
            clauses = [f"attribute_not_exists(#upk) OR ({' AND '.join(clauses)})"]
    params = dict(op.params)
    ce = params.get("ConditionExpression")
    mine = " AND ".join(f"({c})" if " OR " in c else c for c in clauses)
    params["ConditionExpression"] = f"({ce}) AND {mine}" if ce else mine
    params["ExpressionAttributeNames"] = {**params.get("ExpressionAttributeNames", {}), **names}
    if values:
        params["ExpressionAttributeValues"] = {**params.get("ExpressionAttributeValues", {}), **values}
    op.params = params


def merge_sentinels(existing: list[WriteOp], new: Sequence[WriteOp]) -> list[WriteOp]:
    """Fit one write's sentinel actions into a transaction's actions (``existing``, changed in place).

    Where one item releases a value (Delete) that another item of the same transaction takes
    (Put), the two become one Put conditional on the sentinel still belonging to the releaser
    (DynamoDB refuses two actions on one item): two items swapping their emails in one
    transaction works.

    Returns:
        the actions of ``new`` still to add.

    Raises:
        IntegrityError: two writes of the transaction claim one value (before any request).
    """
    by_identity = {a.identity: i for i, a in enumerate(existing) if isinstance(a, SentinelOp)}
    out: list[WriteOp] = []
    for s in new:
        i = by_identity.get(s.identity)
        if i is None:
            out.append(s)
            continue
        other = existing[i]
        assert isinstance(other, SentinelOp) and isinstance(s, SentinelOp)
        if other.kind == s.kind == "Put":
            raise IntegrityError(
                f"{s.description} and {other.description} in one transaction both claim "
                f"{', '.join(f'{k}={v!r}' for k, v in s.values.items())} (unique constraint "
                f"{s.constraint.name if s.constraint else '?'!r}); nothing was sent.",
                entity=s.model.__name__, constraint=s.constraint.name if s.constraint else None,
                fields=s.constraint.fields if s.constraint else (), values=s.values)
        if other.kind == s.kind == "Delete":
            continue
        put, release = (s, other) if s.kind == "Put" else (other, s)
        existing[i] = _taken_over(put, release)
    return out


def _taken_over(put: WriteOp, release: WriteOp) -> SentinelOp:
    """The Put of a sentinel that another action of the transaction releases: conditional on its releaser."""
    assert isinstance(put, SentinelOp) and isinstance(release, SentinelOp)
    params = dict(put.params)
    expr, names, vals = _owned(release.owner, release.model._meta.entity_type)
    params["ConditionExpression"] = f"attribute_not_exists(#upk) OR ({expr})"
    params["ExpressionAttributeNames"] = {**params["ExpressionAttributeNames"], **names}
    params["ExpressionAttributeValues"] = vals
    return SentinelOp("Put", put.model, params, put.key, put.description, verb=put.verb, token=put.token,
                      constraint=put.constraint, values=put.values, owner=put.owner)
