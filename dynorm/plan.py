"""The planner: pure translation of queryset state into the exact DynamoDB request.

:func:`plan` picks GetItem, Query (on the table or an index) or Scan and renders the
KeyConditionExpression, FilterExpression and ProjectionExpression. ``QuerySet.explain()``
returns this :class:`Plan`, and evaluation sends ``plan.params`` unchanged (plus
``Limit``/``ExclusiveStartKey`` per page), so what you inspect is what runs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .exceptions import InvalidQuery, ScanRequired
from .expressions import ExpressionBuilder, Leaf, Q, field_of, serialize_value
from .keys import key_range
from .options import PRIMARY, BoundIndex

if TYPE_CHECKING:  # pragma: no cover
    from .models import Entity

__all__ = ["QueryState", "Plan", "plan"]

_RANGE = ("lt", "lte", "gt", "gte", "between", "begins_with")


@dataclass(frozen=True)
class QueryState:
    """Everything a queryset describes; cloned (never mutated) by builder methods.

    Attributes:
        model: the entity class.
        where: AND-ed conditions.
        using: a forced access path (``Meta.indexes`` key or ``"primary"``).
        scan: a Scan was asked for explicitly.
        descending: ``ScanIndexForward=False``.
        projection: fields for ``only()``/``values()`` (``None`` = all).
        consistent: ``ConsistentRead``.
        collection: heterogeneous item collection mode (every entity type of the partition).
        of: in collection mode, narrow to this entity class's sort-key prefix.
        of_values: field values for that prefix.
    """

    model: type[Entity]
    where: tuple[Q, ...] = ()
    using: str | None = None
    scan: bool = False
    descending: bool = False
    projection: tuple[str, ...] | None = None
    consistent: bool = False
    collection: bool = False
    of: type[Entity] | None = None
    of_values: tuple[tuple[str, Any], ...] = ()
    prefetch: tuple[str, ...] = ()

    def with_(self, **changes: Any) -> QueryState:
        """Return a copy with ``changes`` applied."""
        return replace(self, **changes)


@dataclass
class Plan:
    """The request a queryset will send.

    Attributes:
        operation: ``"GetItem"``, ``"Query"`` or ``"Scan"``.
        table: the physical table name; index: the DynamoDB index name or ``None``.
        access_path: the access-path name (``"primary"``, ``"by_brand"``; ``None`` for Scan).
        key_condition: KeyConditionExpression with placeholders (``None`` for GetItem/Scan).
        filter: FilterExpression (``None`` when no filter).
        projection: ProjectionExpression (``None`` = all attributes).
        names, values: ExpressionAttributeNames / ExpressionAttributeValues.
        key: for GetItem, the primary key in DynamoDB JSON.
        params: the exact request parameters.
        entity_types: the entity types the results may hold (``None`` = any, collections).
    """

    operation: str
    table: str
    index: str | None
    access_path: str | None
    key_condition: str | None
    filter: str | None
    projection: str | None
    names: dict[str, str]
    values: dict[str, Any]
    params: dict[str, Any]
    key: dict[str, Any] | None = None
    entity_types: frozenset[str] | None = None
    bound: BoundIndex | None = field(default=None, repr=False)

    def readable(self, text: str | None) -> str | None:
        """Substitute names and values into an expression for display."""
        if text is None:
            return None
        for ph in sorted(self.values, key=len, reverse=True):
            (kind, v), = self.values[ph].items()
            text = text.replace(ph, json.dumps(v, ensure_ascii=False) if kind == "S" else str(v))
        for ph in sorted(self.names, key=len, reverse=True):
            text = text.replace(ph, self.names[ph])
        return text

    def __str__(self) -> str:
        parts = [f"{self.operation} {self.table}" + (f" index {self.index}" if self.index else "")]
        if self.key is not None:
            parts.append("Key: " + ", ".join(f"{k} = {json.dumps(next(iter(v.values())))}"
                                             for k, v in self.key.items()))
        if self.key_condition:
            parts.append(f"KeyConditionExpression: {self.readable(self.key_condition)}")
        if self.filter:
            parts.append(f"FilterExpression: {self.readable(self.filter)}")
        if self.projection:
            parts.append(f"ProjectionExpression: {self.readable(self.projection)}")
        if "Limit" in self.params:
            parts.append(f"Limit: {self.params['Limit']}")
        if self.params.get("ScanIndexForward") is False:
            parts.append("ScanIndexForward: false")
        if self.params.get("ConsistentRead"):
            parts.append("ConsistentRead: true")
        return "\n  ".join(parts)

    def fingerprint(self) -> str:
        """A short hash of the request (without paging), identifying the query for cursors."""
        import hashlib

        blob = json.dumps(self.params, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def _split(state: QueryState) -> tuple[list[Leaf], list[Q]]:
    leaves: list[Leaf] = []
    complex_: list[Q] = []
    for q in state.where:
        lv, rest = q.flatten_and()
        leaves += lv
        complex_ += rest
    return leaves, complex_


def _candidates(state: QueryState, eq: dict[str, Any]) -> list[BoundIndex]:
    meta = state.model._meta
    if state.using is not None:
        if state.using == PRIMARY:
            return [meta.primary]
        if state.using not in meta.indexes:
            paths = ", ".join([PRIMARY, *meta.indexes])
            raise InvalidQuery(f"{meta.entity} has no access path {state.using!r}; access paths: {paths}.")
        return [meta.indexes[state.using]]
    return [b for b in meta.all_indexes if all(f in eq for f in b.pk.fields)]


def _score(bound: BoundIndex, eq: dict[str, Any], ranged: set[str], meta: Any) -> int:
    if bound.sort_field is not None:
        return 1 if (bound.sort_field in eq or bound.sort_field in ranged) else 0
    if bound.sk is None:
        return 0
    pre = bound.sk.prefix(eq, meta.key_version, entity=meta.entity)
    score = len(pre.used) * 2
    if pre.next_field and pre.next_field in ranged:
        score += 1
    return score


def _scan_required(meta: Any, fields: list[str]) -> ScanRequired:
    needs = "; ".join(f"{b.name} needs {', '.join(b.pk.fields) or '(nothing)'}" for b in meta.all_indexes)
    given = ", ".join(fields) or "nothing"
    return ScanRequired(
        f"{meta.entity}: no key or index serves a filter on {given} (access paths: {needs}). "
        "Give the partition-key fields of an access path, declare an Index for this pattern, "
        "or call .scan() to ask for a Scan explicitly.")


def plan(state: QueryState) -> Plan:
    """Plan the request for ``state`` without I/O.

    Returns:
        the :class:`Plan`.

    Raises:
        ScanRequired: no access path's partition key is fully given and ``scan()`` was not asked for.
        InvalidQuery: unknown field, lookup or access path, or ConsistentRead on a GSI.
        InvalidKeyValue, ValidationError: a value cannot be used.
    """
    model = state.model
    meta = model._meta
    table = meta.table.table_name()
    tmeta = meta.table._meta
    b = ExpressionBuilder()
    leaves, complex_ = _split(state)
    for fname, _lookup, _value in leaves:
        field_of(meta, fname)
    for q in complex_:
        for fname, _lookup, _value in q.leaves():
            field_of(meta, fname)
    eq: dict[str, Any] = {}
    for fname, lookup, value in leaves:
        if lookup == "exact" and fname not in eq:
            if value is None:
                raise InvalidQuery(f"{meta.entity}.{fname}=None cannot be matched; use {fname}__exists=False.")
            eq[fname] = meta.fields[fname].validate(value, meta.entity)
    ranged = {f for f, lookup, _ in leaves if lookup in _RANGE}
    projection = _projection(state, b, meta, tmeta)
    entity_types = None if state.collection else frozenset({meta.entity_type})

    if state.scan:
        filter_expr = _filter(b, meta, leaves, complex_)
        if not state.collection:
            # a Scan reads every entity type: keep only this one server-side, so count() and
            # Limit mean this entity's items
            type_cond = f"{b.name(tmeta.type_attribute)} = {b.value({'S': meta.entity_type})}"
            filter_expr = f"{type_cond} AND {filter_expr}" if filter_expr else type_cond
        params: dict[str, Any] = {"TableName": table}
        if state.using and state.using != PRIMARY:
            bound = _candidates(state, eq)[0]
            params["IndexName"] = bound.index_name
        if filter_expr:
            params["FilterExpression"] = filter_expr
        _finish(params, b, projection, state, index=params.get("IndexName"))
        return Plan("Scan", table, params.get("IndexName"), None, None, filter_expr or None,
                    projection, b.names, b.values, params, entity_types=entity_types)

    candidates = _candidates(state, eq)
    if not candidates or not all(f in eq for f in candidates[0].pk.fields):
        if state.using is not None and candidates:
            missing = [f for f in candidates[0].pk.fields if f not in eq]
            raise InvalidQuery(f"{meta.entity}.objects.using({state.using!r}) needs "
                               f"{', '.join(missing)} for the partition key.")
        raise _scan_required(meta, sorted({f for f, _, _ in leaves}))
    # most selective first: the partition key built from the most given fields, then the
    # sort-key prefix using the most given fields; max() keeps the first declared on ties
    best = max(candidates, key=lambda c: (len(c.pk.fields), _score(c, eq, ranged, meta)))
    if state.consistent and best.kind == "gsi":
        raise InvalidQuery(f"{meta.entity}: ConsistentRead is not possible on GSI {best.index_name}; "
                           "drop .consistent() or query the table or an LSI.")

    used: set[int] = set()  # indexes into leaves consumed by the key condition
    pk_value = best.pk.fill(eq, meta.key_version, entity=meta.entity)

    # GetItem: the whole primary key is given and nothing else is asked for.
    sk_full = None
    if best.name == PRIMARY and best.sk is not None:
        pre = best.sk.prefix(eq, meta.key_version, entity=meta.entity)
        sk_full = pre.value if pre.complete else None
    # an equality through a lossy spec ({day:%Y-%m-%d}) only narrows the read: it stays a filter
    extra = [i for i, (f, lk, _) in enumerate(leaves) if not (lk == "exact" and f in best.fields and _exact(best, f))]
    if (best.name == PRIMARY and (best.sk is None or sk_full is not None) and not extra and not complex_
            and not state.collection and state.using is None):
        key: dict[str, Any] = {tmeta.pk_attribute: {"S": pk_value}}
        if best.sk is not None and tmeta.sk_attribute:
            key[tmeta.sk_attribute] = {"S": sk_full}
        params = {"TableName": table, "Key": key}
        _finish(params, b, projection, state, index=None)
        return Plan("GetItem", table, None, PRIMARY, None, None, projection, b.names, b.values, params,
                    key=key, entity_types=entity_types, bound=best)

    conds = [f"{b.name(best.pk_attr)} = {b.value({'S': pk_value})}"]
    for i, (f, lk, _) in enumerate(leaves):
        if lk == "exact" and f in best.pk.fields and best.pk.exact_for(f):
            used.add(i)
    sk_cond = _sort_condition(best, b, meta, eq, leaves, used, state)
    if sk_cond:
        conds.append(sk_cond)
    filter_expr = _filter(b, meta, [lf for i, lf in enumerate(leaves) if i not in used], complex_)
    params = {"TableName": table}
    if best.index_name:
        params["IndexName"] = best.index_name
    params["KeyConditionExpression"] = " AND ".join(conds)
    if filter_expr:
        params["FilterExpression"] = filter_expr
    if state.descending:
        params["ScanIndexForward"] = False
    _finish(params, b, projection, state, index=best.index_name)
    return Plan("Query", table, best.index_name, best.name, params["KeyConditionExpression"],
                filter_expr or None, projection, b.names, b.values, params, entity_types=entity_types,
                bound=best)


def _sort_condition(best: BoundIndex, b: ExpressionBuilder, meta: Any, eq: dict[str, Any],
                    leaves: list[Leaf], used: set[int], state: QueryState) -> str | None:
    if best.sk_attr is None:
        return None
    sk_name = b.name(best.sk_attr)
    if best.sort_field is not None:  # LSI on a field's own attribute: lookups map 1:1
        for i, (f, lk, v) in enumerate(leaves):
            if f == best.sort_field and lk in ("exact", *_RANGE):
                used.add(i)
                return _range_expr(sk_name, lk, v, b, lambda x, f=f: serialize_value(meta, f, x))
        return None
    if state.collection and state.of is None:
        return None  # the whole item collection
    if state.collection and state.of is not None:
        of_meta = state.of._meta
        of_bound = next((x for x in of_meta.all_indexes if x.index_name == best.index_name), None)
        if of_bound is None or of_bound.sk is None:
            raise InvalidQuery(f"{of_meta.entity} has no sort key on {best.index_name or 'the table'}; "
                               "it cannot be picked out of this collection.")
        pre = of_bound.sk.prefix(dict(state.of_values), of_meta.key_version, entity=of_meta.entity)
        if pre.complete:
            return f"{sk_name} = {b.value({'S': pre.value})}"
        return f"begins_with({sk_name}, {b.value({'S': pre.value})})" if pre.value else None
    assert best.sk is not None
    pre = best.sk.prefix(eq, meta.key_version, entity=meta.entity)
    for i, (f, lk, _) in enumerate(leaves):
        if lk == "exact" and f in pre.used and best.sk.exact_for(f):
            used.add(i)
    if pre.complete:
        return f"{sk_name} = {b.value({'S': pre.value})}"
    nxt = pre.next_field
    if nxt is not None:
        for i, (f, lk, v) in enumerate(leaves):
            if f != nxt or lk not in _RANGE:
                continue
            fobj = meta.fields[f]
            spec = best.sk.spec_of(f)
            if lk == "begins_with" and isinstance(v, str) and fobj.attr_type == "S" and not spec:
                used.add(i)
                text = best.sk.encode(f, v, entity=meta.entity) if v else ""
                return f"begins_with({sk_name}, {b.value({'S': pre.value + text})})"
            if lk != "begins_with":
                # The key range narrows the read (keys.key_range: exact bounds under the
                # table's key encoding); the same lookup stays in the filter, so results
                # are exact also through a lossy format spec.
                val = (tuple(fobj.validate(x, meta.entity) for x in v) if lk == "between"
                       else fobj.validate(v, meta.entity))
                rng = key_range(best.sk, pre, f, lk, val, entity=meta.entity)
                if rng is not None:
                    return _key_range_expr(sk_name, rng, b)
    if pre.used or (pre.value and _partition_shared(meta, best)):
        return f"begins_with({sk_name}, {b.value({'S': pre.value})})"
    return None


def _partition_shared(meta: Any, bound: BoundIndex) -> bool:
    """True when another entity type's items can share this access path's partitions.

    Then the sort key's literal prefix (``ORDER#``) keeps the others out of the read.
    """
    from .checks import could_collide

    for other in meta.table._entities.values():
        om = other._meta
        if om.entity_type == meta.entity_type:
            continue
        for ob in om.all_indexes:
            if ob.index_name == bound.index_name and ob.kind != "lsi" and could_collide(
                    bound.pk, meta.key_version, ob.pk, om.key_version):
                return True
    return False


def _range_expr(name: str, lk: str, v: Any, b: ExpressionBuilder, ser: Any) -> str:
    ops = {"exact": "=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
    if lk in ops:
        return f"{name} {ops[lk]} {b.value(ser(v))}"
    if lk == "between":
        lo, hi = v
        return f"{name} BETWEEN {b.value(ser(lo))} AND {b.value(ser(hi))}"
    return f"begins_with({name}, {b.value({'S': v})})"


def _exact(bound: BoundIndex, f: str) -> bool:
    """True when an equality on ``f`` is fully answered by ``bound``'s key text."""
    return all(t.exact_for(f) for t in (bound.pk, bound.sk) if t is not None and f in t.fields)


def _key_range_expr(name: str, rng: Any, b: ExpressionBuilder) -> str:
    if rng.lo is not None and rng.hi is not None:
        return f"{name} BETWEEN {b.value({'S': rng.lo})} AND {b.value({'S': rng.hi})}"
    if rng.lo is not None:
        return f"{name} >= {b.value({'S': rng.lo})}"
    return f"{name} <= {b.value({'S': rng.hi})}"


def _filter(b: ExpressionBuilder, meta: Any, leaves: list[Leaf], complex_: list[Q]) -> str:
    parts = [b.leaf(lf, meta) for lf in leaves]
    parts += [b.condition(q, meta) for q in complex_]
    parts = [p for p in parts if p]
    return " AND ".join(parts)


def _projection(state: QueryState, b: ExpressionBuilder, meta: Any, tmeta: Any) -> str | None:
    if state.projection is None:
        return None
    attrs = [field_of(meta, f).attr_name for f in state.projection]
    attrs.append(tmeta.type_attribute)
    if meta.version_field:
        attrs.append(meta.fields[meta.version_field].attr_name)
    seen: list[str] = []
    for a in attrs:
        if a not in seen:
            seen.append(a)
    return ", ".join(b.name(a) for a in seen)


def _finish(params: dict[str, Any], b: ExpressionBuilder, projection: str | None, state: QueryState,
            index: str | None) -> None:
    if projection:
        params["ProjectionExpression"] = projection
    # Names reserved while planning but not used (DynamoDB rejects unused placeholders).
    text = " ".join(str(params.get(k, "")) for k in ("KeyConditionExpression", "FilterExpression",
                                                     "ProjectionExpression"))
    used = set(re.findall(r"#n\d+", text))
    for ph in [ph for ph in b.names if ph not in used]:
        del b.names[ph]
    if b.names:
        params["ExpressionAttributeNames"] = dict(b.names)
    if b.values:
        params["ExpressionAttributeValues"] = dict(b.values)
    if state.consistent:
        params["ConsistentRead"] = True
    params["ReturnConsumedCapacity"] = "TOTAL"
