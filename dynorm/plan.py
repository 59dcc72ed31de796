"""The planner: pure translation of queryset state into the exact DynamoDB request.

:func:`plan` picks GetItem, Query (on the table or an index) or Scan and renders the
KeyConditionExpression, FilterExpression and ProjectionExpression, plus the ``Limit`` of
the first request and, for ``count()``, ``Select=COUNT``. ``QuerySet.explain()`` returns
this :class:`Plan`, and evaluation sends ``plan.params`` unchanged as its first request
(later pages change only ``Limit``/``ExclusiveStartKey``), so what you inspect is what runs.
Queries that cannot be answered exactly (contradictory equalities, an order the access path
does not give) are refused here, before any request. A secondary index is chosen on its own
only when it holds every item the conditions match (:func:`sparse_fields`): DynamoDB leaves an
item missing one of the index's key attributes out of it, and a lost match is a wrong answer.
"""

from __future__ import annotations

import decimal as _decimal
import json
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .exceptions import InvalidQuery, ScanRequired
from .expressions import ExpressionBuilder, Leaf, Q, field_of, serialize_value, split_lookup
from .keys import key_range
from .options import PRIMARY, BoundIndex
from .writes import check_key_sizes

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["QueryState", "Plan", "plan", "orderable", "orders_by", "sparse_fields"]

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
        prefetch: ``fields.Reference`` fields resolved with BatchGetItem after each page.
        order_field: the field ``order_by()`` named (``None`` for ``"sk"``); the planner
            refuses an access path whose sort key does not order by it.
        order_then: the further fields ``order_by()`` named after ``order_field`` (``order_by("year",
            "title")``); the access path must order by all of them in that order.
        ordered: ``order_by()`` was called (``"sk"`` too), so a Scan, which has no order, is refused.
        empty: ``none()``: matches nothing; evaluation sends no request (:func:`dynorm.iterables.evaluate`).
            Planning ignores it: ``explain()`` shows what the queryset would send without ``none()``.
    """

    model: type[EntityLike]
    where: tuple[Q, ...] = ()
    using: str | None = None
    scan: bool = False
    descending: bool = False
    projection: tuple[str, ...] | None = None
    consistent: bool = False
    collection: bool = False
    of: type[EntityLike] | None = None
    of_values: tuple[tuple[str, Any], ...] = ()
    prefetch: tuple[str, ...] = ()
    order_field: str | None = None
    order_then: tuple[str, ...] = ()
    ordered: bool = False
    empty: bool = False

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
        checks: for GetItem, ``(attribute, value)`` equalities the item read must meet (the
            conditions beyond the primary key; GetItem takes no FilterExpression). An item
            failing one is not a result.
        whole_key: for a Query on one whole primary key (conditions GetItem cannot check),
            ``(key attribute, value placeholder)`` of its key condition: the read_versions
            fallback sends it again with an older version's key in those placeholders.
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
    checks: tuple[tuple[str, dict[str, Any]], ...] = ()
    whole_key: tuple[tuple[str, str], ...] = ()

    def admits(self, item: dict[str, Any]) -> bool:
        """True when the raw ``item`` a GetItem returned meets :attr:`checks` (DynamoDB's equality)."""
        return all(attr in item and av_equal(item[attr], av) for attr, av in self.checks)

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
        if self.checks:
            parts.append("Checked on the item read: " + " AND ".join(
                f"{a} = {json.dumps(next(iter(v.values())), ensure_ascii=False, default=str)}" for a, v in self.checks))
        if self.key_condition:
            parts.append(f"KeyConditionExpression: {self.readable(self.key_condition)}")
        if self.filter:
            parts.append(f"FilterExpression: {self.readable(self.filter)}")
        if self.projection:
            parts.append(f"ProjectionExpression: {self.readable(self.projection)}")
        if "Select" in self.params:
            parts.append(f"Select: {self.params['Select']}")
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

        query = {k: v for k, v in self.params.items() if k not in ("Limit", "ExclusiveStartKey")}
        blob = json.dumps(query, sort_keys=True, default=str).encode()
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


def _multi_prefix(bound: BoundIndex, eq: dict[str, Any]) -> tuple[list[str], str | None]:
    """The sort fields of a multi-attribute index pinned by ``eq`` (left to right) and the next one."""
    pinned: list[str] = []
    for f in bound.sk_fields:
        if f not in eq:
            return pinned, f
        pinned.append(f)
    return pinned, None


def _multi_leftovers(bound: BoundIndex, leaves: list[Leaf], complex_: list[Q], eq: dict[str, Any]) -> list[str]:
    """Conditions on a multi-attribute index's key fields that its key condition cannot take.

    DynamoDB refuses a FilterExpression on a key attribute of the index queried, and on a
    multi-attribute index the key attributes are the fields' own attributes.
    """
    keyf = set(bound.pk_fields) | set(bound.sk_fields)
    pinned, nxt = _multi_prefix(bound, eq)
    out: list[str] = []
    ranged = [(f, lk) for f, lk, _ in leaves if f == nxt and lk in _RANGE]
    for f, lk, v in leaves:
        if f not in keyf:
            continue
        if lk == "exact" and (f in bound.pk_fields or f in pinned):
            continue
        if f == nxt and lk in _RANGE and len(ranged) == 1 and (lk != "begins_with" or isinstance(v, str)):
            continue
        if _asks_present(lk, v):
            continue  # every item of the index holds its key attributes: nothing to send
        out.append(f"{f}__{lk}" if lk != "exact" else f)
    for q in complex_:
        out += [f"{f}__{lk} (inside OR/NOT)" for f, lk, _ in q.leaves() if f in keyf]
    return out


def _score(bound: BoundIndex, eq: dict[str, Any], ranged: set[str], meta: Any) -> int:
    if bound.is_multi:
        pinned, nxt = _multi_prefix(bound, eq)
        return len(pinned) * 2 + (1 if nxt is not None and nxt in ranged else 0)
    if bound.sort_field is not None:
        return 1 if (bound.sort_field in eq or bound.sort_field in ranged) else 0
    if bound.sk is None:
        return 0
    pre = bound.sk.prefix(eq, meta.key_version, entity=meta.entity)
    score = len(pre.used) * 2
    if pre.next_field and pre.next_field in ranged:
        score += 1
    return score


def _describe_path(bound: BoundIndex, meta: Any) -> str:
    where = bound.index_name or "table"
    if bound.is_multi:
        sort = f", sort {' + '.join(bound.sk_fields)}" if bound.sk_fields else ""
        return f"{bound.name} ({where}: partition {' + '.join(bound.pk_fields)}{sort})"
    sort = (f", sort {bound.sk.template}" if bound.sk is not None
            else f", sort {bound.sort_field}" if bound.sort_field else "")
    return f"{bound.name} ({where}: partition {bound.pk.template}{sort})"


def _scan_required(meta: Any, leaves: list[Leaf], complex_: list[Q]) -> ScanRequired:
    plain = sorted({f for f, lk, _ in leaves if lk == "exact"})
    other = sorted({f for f, lk, _ in leaves if lk != "exact"} - set(plain))
    nested = sorted({f for q in complex_ for f, _, _ in q.leaves()} - set(plain) - set(other))
    given = plain + other + nested
    asked = f"a filter on {', '.join(given)}" if given else "a query without conditions (.all(), .count())"
    ways = []
    for bound in meta.all_indexes:
        missing = [f for f in bound.pk.fields if f not in plain]
        ways.append(f"{' + '.join(missing) or '(nothing more)'} for {bound.name}")
    msg = (f"{meta.entity}: no access path serves {asked}. One Query needs equalities on the "
           f"partition-key fields of an access path: give {'; or '.join(ways)}.")
    if nested:
        msg += (f" Conditions inside OR/NOT ({', '.join(nested)}) cannot choose a partition: give one value "
                "as filter(field=value), or query each value on its own.")
    paths = "; ".join(_describe_path(bnd, meta) for bnd in meta.all_indexes)
    msg += (f" Access patterns of {meta.entity}: {paths}. Declare an Index for this pattern, or call "
            ".scan() to ask for a Scan explicitly.")
    return ScanRequired(msg)


def _text_orders(meta: Any, template: Any, fieldname: str) -> bool:
    """True when the key text of ``fieldname`` in ``template`` sorts like its values."""
    from .keys import EXACT, ORDERED, spec_kind

    # the percent encoding escapes '%' and the delimiter as '%25'/'%23', which sort apart from
    # the characters they stand for: text is not ordered (values without such characters are,
    # but nothing stops a later item from holding one)
    if template.encoding != ORDERED:
        return False
    for _literal, name, spec in template.tokens:
        if name == fieldname:
            f = meta.fields[fieldname]
            kind = spec_kind(spec)
            # a spec left EXACT is a zero-padded integer spec (0Nd), which refuses what it cannot order
            return kind == EXACT and bool(spec or getattr(f, "ordered_key_text", False))
        if name is not None and spec_kind(spec) != EXACT:
            return False  # a lossy/unordered spec before the field: its text decides the order first
    return False


def orderable(bound: BoundIndex, eq: dict[str, Any], meta: Any) -> list[str]:
    """What a Query on ``bound`` with the equalities ``eq`` returns its items ordered by.

    ``"sk"`` (the sort key itself), the sort-key fields pinned by ``eq`` and the first
    sort-key field after them when its key text sorts like its values.
    """
    if bound.sk_attr is None:
        return []
    out = ["sk"]
    if bound.is_multi:  # plain attributes: numbers sort as numbers, strings by UTF-8 bytes
        pinned, nxt = _multi_prefix(bound, eq)
        return out + pinned + ([nxt] if nxt is not None else [])
    if bound.sort_field is not None:
        out.append(bound.sort_field)
    elif bound.sk is not None:
        pre = bound.sk.prefix(eq, meta.key_version, entity=meta.entity)
        out += list(pre.used)
        if pre.next_field is not None and _text_orders(meta, bound.sk, pre.next_field):
            out.append(pre.next_field)
    return out


def orders_by(bound: BoundIndex, eq: dict[str, Any], meta: Any, names: tuple[str, ...]) -> bool:
    """True when a Query on ``bound`` with the equalities ``eq`` returns its items ordered by ``names``.

    One name: it is in :func:`orderable`. Several: leaving out the fields pinned by an equality
    (constant over the results), they are the next sort attributes of a multi-attribute GSI
    in declaration order (its items are ordered by the tuple of sort attributes), or at most
    one field :func:`orderable` names (a key text orders only by its first unpinned field).
    """
    can = orderable(bound, eq, meta)
    if len(names) == 1:
        return names[0] in can
    rest = [n for n in names if n not in eq]
    if bound.is_multi:
        pinned, _ = _multi_prefix(bound, eq)
        remaining = [f for f in bound.sk_fields if f not in pinned]
        return bool(can) and rest == remaining[:len(rest)]
    return len(rest) <= 1 and all(n in can for n in rest)


def _equalities(meta: Any, leaves: list[Leaf]) -> dict[str, Any]:
    """The ``field=value`` equalities, validated; two different values for one field are refused."""
    eq: dict[str, Any] = {}
    for fname, lookup, value in leaves:
        if lookup != "exact":
            continue
        if value is None:
            raise InvalidQuery(f"{meta.entity}.{fname}=None cannot be matched; use {fname}__exists=False.")
        v = meta.fields[fname].validate(value, meta.entity)
        if fname in eq and eq[fname] != v:
            raise InvalidQuery(
                f"{meta.entity}.{fname} must equal both {eq[fname]!r} and {v!r}: no item can match. The "
                "query is refused before any request (nothing is read or written); keep one value, or "
                f"use {fname}__in=[...] for either.")
        eq[fname] = v
    return eq


def _exact_key_get(state: QueryState) -> Plan | None:
    """The GetItem plan of ``filter(**primary key)`` on a plain queryset, without the general planner.

    The hot path of key-value reads (``get(pk=...)``): the same request the general path
    makes (a test pins that) at a fraction of the CPU. ``None`` when anything else is asked.
    """
    if (len(state.where) != 1 or state.using or state.scan or state.projection is not None or state.collection
            or state.descending or state.order_field is not None):
        return None
    q = state.where[0]
    if q.negated or q.connector != Q.AND:
        return None
    meta = state.model._meta
    if meta.primary.pk.lossy_fields or (meta.primary.sk is not None and meta.primary.sk.lossy_fields):
        return None  # a lossy spec needs the exact value in a filter: the general planner adds it
    values: dict[str, Any] = {}
    for child in q.children:
        if not isinstance(child, tuple) or child[1] is None:
            return None
        name = child[0]
        if name.endswith("__exact"):
            name = name[:-7]
        if name in values or name not in meta.fields:
            return None
        values[name] = child[1]
    if set(values) != set(meta.key_fields):
        return None
    for name, value in values.items():
        values[name] = meta.fields[name].validate(value, meta.entity)
    key = meta.primary_key(values)
    check_key_sizes(meta, key, values)  # no stored item can have a longer key: say so before the request
    table = meta.table.table_name()
    params: dict[str, Any] = {"TableName": table, "Key": key}
    if state.consistent:
        params["ConsistentRead"] = True
    params["ReturnConsumedCapacity"] = "TOTAL"
    return Plan("GetItem", table, None, PRIMARY, None, None, None, {}, {}, params, key=key,
                entity_types=frozenset({meta.entity_type}), bound=meta.primary)


def plan(state: QueryState, *, limit: int | None = None, count: bool = False) -> Plan:
    """Plan the first request for ``state`` without I/O.

    Args:
        state: the queryset's description.
        limit: the ``Limit`` of the first request (a slice's stop, ``page()``'s size + 1);
            ``None`` sends no Limit. Ignored for GetItem.
        count: plan ``count()``'s request: ``Select=COUNT`` and no ProjectionExpression.

    Returns:
        the :class:`Plan`; its ``params`` are the first request exactly as sent.

    Raises:
        ScanRequired: no access path's partition key is fully given and ``scan()`` was not asked for.
        InvalidQuery: unknown field, lookup or access path, ConsistentRead on a GSI, an
            ``order_by()`` field the access path does not order by, contradictory equalities;
            only an index that may leave matching items out (a key field the conditions do
            not ask for and the entity may lack) could serve the query and ``using()`` did
            not name it.
        InvalidKeyValue, ValidationError: a value cannot be used.
    """
    if count:
        state = state.with_(projection=None)
    fast = _exact_key_get(state)
    if fast is not None:
        return fast
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
    eq = _equalities(meta, leaves)
    ranged = {f for f, lookup, _ in leaves if lookup in _RANGE}
    entity_types = None if state.collection else frozenset({meta.entity_type})

    if state.scan:
        if state.descending or state.ordered or state.order_field is not None:
            raise InvalidQuery(f"{meta.entity}: a Scan returns items in no particular order; order_by() (also "
                               "order_by('sk')) and reverse() need a Query (give the partition-key fields of an "
                               "access path), or drop the order_by() and sort the results yourself.")
        filter_expr = _filter(b, meta, leaves, complex_)
        if not state.collection:
            # a Scan reads every entity type: keep only this one server-side, so count() and
            # Limit mean this entity's items
            type_cond = f"{b.name(tmeta.type_attribute)} = {b.value({'S': meta.entity_type})}"
            filter_expr = f"{type_cond} AND {filter_expr}" if filter_expr else type_cond
        params: dict[str, Any] = {"TableName": table}
        scan_bound = None
        if state.using and state.using != PRIMARY:
            scan_bound = _candidates(state, eq)[0]
            params["IndexName"] = scan_bound.index_name
        if filter_expr:
            params["FilterExpression"] = filter_expr
        projection = _projection(state, b, meta, tmeta, scan_bound)
        _finish(params, b, projection, state, limit=limit, count=count)
        return Plan("Scan", table, params.get("IndexName"), None, None, filter_expr or None,
                    projection, b.names, b.values, params, entity_types=entity_types, bound=scan_bound)

    candidates = _candidates(state, eq)
    if not candidates or not all(f in eq for f in candidates[0].pk.fields):
        if state.using is not None and candidates:
            missing = [f for f in candidates[0].pk.fields if f not in eq]
            raise InvalidQuery(f"{meta.entity}.objects.using({state.using!r}) needs "
                               f"{', '.join(missing)} for the partition key.")
        raise _scan_required(meta, leaves, complex_)
    if state.using is not None:
        best = _pick(state, candidates, leaves, complex_, eq, ranged)
    else:
        best = _pick_complete(state, candidates, leaves, complex_, eq, ranged)
    if best.is_multi:
        return _plan_multi(state, best, b, leaves, complex_, eq, limit=limit, count=count)
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
    # other equalities ride along a GetItem as checks of the item read (GetItem takes no
    # FilterExpression): the same answer as a Query with a filter, with ConsistentRead possible
    if (best.name == PRIMARY and (best.sk is None or sk_full is not None) and not complex_
            and all(leaves[i][1] == "exact" for i in extra) and not state.collection and state.using is None):
        key: dict[str, Any] = {tmeta.pk_attribute: {"S": pk_value}}
        if best.sk is not None and tmeta.sk_attribute:
            key[tmeta.sk_attribute] = {"S": sk_full}
        checks: dict[str, dict[str, Any]] = {}
        for i in extra:
            f = leaves[i][0]
            checks[meta.fields[f].attr_name] = serialize_value(meta, f, eq[f])
        params = {"TableName": table, "Key": key}
        projection = _projection(state, b, meta, tmeta, best)
        if projection is not None and checks:
            projection = ", ".join([projection, *(b.name(a) for a in checks)])
        _finish(params, b, projection, state, limit=None, count=False)
        return Plan("GetItem", table, None, PRIMARY, None, None, projection, b.names, b.values, params,
                    key=key, entity_types=entity_types, bound=best, checks=tuple(checks.items()))

    pk_placeholder = b.value({'S': pk_value})
    conds = [f"{b.name(best.pk_attr)} = {pk_placeholder}"]
    for i, (f, lk, _) in enumerate(leaves):
        if lk == "exact" and f in best.pk.fields and best.pk.exact_for(f):
            used.add(i)
    sk_cond = _sort_condition(best, b, meta, eq, leaves, used, state)
    if sk_cond:
        conds.append(sk_cond)
    filter_expr = _filter(b, meta, [lf for i, lf in enumerate(leaves) if i not in used], complex_)
    # the type the results are read as (collection().of(X): X; a plain collection: any)
    typed = state.of._meta if state.collection and state.of is not None else None if state.collection else meta
    if typed is not None and (count or (not state.collection and _needs_type_filter(meta, best))):
        # another entity type's items share these partitions and the sort key starts with a
        # placeholder, so no key condition keeps them out: filter on the type attribute, so
        # Limit means this entity's items. count() always filters: iteration drops every item
        # of another type (one whose key text extends this prefix, "M#{m}#N#{k}" under
        # "M#{m}", or a type no model declares), so Select=COUNT must not count them
        type_cond = f"{b.name(tmeta.type_attribute)} = {b.value({'S': typed.entity_type})}"
        filter_expr = f"{type_cond} AND {filter_expr}" if filter_expr else type_cond
    qp = _query_plan(state, b, meta, tmeta, best, table, conds, filter_expr, entity_types, limit, count)
    if best.name == PRIMARY and not state.collection and tmeta.pk_attribute == best.pk_attr:
        whole: tuple[tuple[str, str], ...] = ()
        if best.sk is None:
            whole = ((tmeta.pk_attribute, pk_placeholder),)
        elif sk_full is not None and tmeta.sk_attribute:
            sk_ph = next((ph for ph, av in b.values.items() if av == {"S": sk_full} and ph != pk_placeholder), None)
            if sk_ph is not None and sk_cond == f"{b.name(tmeta.sk_attribute)} = {sk_ph}":
                whole = ((tmeta.pk_attribute, pk_placeholder), (tmeta.sk_attribute, sk_ph))
        if whole:
            qp = replace(qp, whole_key=whole)
    return qp


# -- the sparse-index rule ----------------------------------------------------------------
# DynamoDB leaves an item out of a secondary index when one of the index's key attributes is
# missing (a template's placeholder, a multi-attribute key's field, an LSI's sort attribute).
# An index is chosen automatically only when every item matching the conditions is in it:
# each field its keys need is required by a condition, or can never be missing on an item.

# lookups no missing attribute satisfies: DynamoDB's comparisons, BETWEEN, IN, begins_with and
# contains are false on a missing attribute. ``ne`` is true there; ``exists``/``not_exists``
# depend on their value.
_NEEDS_PRESENT = ("exact", "lt", "lte", "gt", "gte", "between", "begins_with", "contains", "in")


def _asks_present(lookup: str, value: Any) -> bool:
    """True for ``exists=True`` / ``not_exists=False``: the attribute must be there."""
    return (lookup == "exists" and bool(value)) or (lookup == "not_exists" and not bool(value))


def _present_in(q: Q, negate: bool = False) -> set[str]:
    """The fields every item meeting ``q`` (``NOT q`` when ``negate``) holds.

    ``AND``: any branch's fields; ``OR``: the fields of every branch; a negation swaps the two
    (De Morgan) and turns ``exists=False`` into a requirement (``exclude(f__exists=False)``).
    """
    neg = q.negated != negate
    per: list[set[str]] = []
    for child in q.children:
        if isinstance(child, Q):
            per.append(_present_in(child, neg))
            continue
        fname, lookup = split_lookup(child[0])
        value = child[1]
        if neg:  # NOT(a = 1) holds for an item without a; NOT attribute_not_exists(a) does not
            held = _asks_present(lookup, not value) if lookup in ("exists", "not_exists") else False
        else:
            held = (lookup in _NEEDS_PRESENT and value is not None) or _asks_present(lookup, value)
        per.append({fname} if held else set())
    if not per:
        return set()
    if (q.connector == Q.OR) != neg:  # OR, or NOT(AND): a match may meet any one branch
        return set.intersection(*per)
    return set.union(*per)


def sparse_fields(state: QueryState, bound: BoundIndex) -> tuple[str, ...]:
    """The fields ``bound``'s key needs that an item matching ``state`` may lack (``()``: none).

    Such an item is not in the index (DynamoDB writes no index entry for an item missing a
    key attribute), so a Query on ``bound`` would silently leave it out. A field cannot be
    missing when the conditions require it (a comparison, range, ``begins_with``, ``in``,
    ``contains`` or ``exists=True`` on it, in every branch of an OR) or when the entity never
    stores an item without it (a primary-key field, or a field that is not ``null=True``:
    saving ``None`` there is refused). ``{version}`` and literals are always present.

    Args:
        state: the queryset's description (its model and conditions).
        bound: an access path of ``state.model``.

    Returns:
        the field names, in key order.
    """
    return _lacking(state.model._meta, bound, _held(state))


def _held(state: QueryState) -> set[str]:
    """The fields every item matching ``state`` holds: the primary key's and those the conditions ask for."""
    held: set[str] = set(state.model._meta.key_fields)
    for q in state.where:
        held |= _present_in(q)
    return held


def _lacking(meta: Any, bound: BoundIndex, held: set[str]) -> tuple[str, ...]:
    """:func:`sparse_fields` given the fields every match holds."""
    if bound.kind == "table":
        return ()
    need = (*bound.pk_fields, *bound.sk_fields) if bound.is_multi else bound.fields
    return tuple(f for f in need if f not in held and getattr(meta.fields[f], "null", False))


def _pick_complete(state: QueryState, candidates: list[BoundIndex], leaves: list[Leaf], complex_: list[Q],
                   eq: dict[str, Any], ranged: set[str]) -> BoundIndex:
    """:func:`_pick` among the candidates that hold every matching item (the sparse-index rule).

    Raises:
        InvalidQuery: only an index that may leave matching items out could serve the query
            (named, with its fields and what to do), or nothing can (:func:`_pick`'s error).
    """
    meta = state.model._meta
    held = _held(state)
    complete = [c for c in candidates if not _lacking(meta, c, held)]
    refused: InvalidQuery | None = None
    if complete:
        try:
            return _pick(state, complete, leaves, complex_, eq, ranged)
        except InvalidQuery as exc:
            refused = exc
    try:
        would = _pick(state, candidates, leaves, complex_, eq, ranged)
    except InvalidQuery:
        if refused is not None:
            raise refused from None
        raise
    lacking = _lacking(meta, would, held)
    shown = ", ".join(lacking)
    conds = " or ".join(f"{f}__exists=True" for f in lacking)
    missing = [f for f in meta.primary.pk.fields if f not in eq]
    table = (f"give {', '.join(missing)} to query the table's partition, which holds every item" if missing
             else "sort the results yourself instead of order_by()")
    raise InvalidQuery(
        f"{meta.entity}: only index {would.index_name} (access path {would.name!r}) can serve this query, and it "
        f"may leave matching items out: an item whose {shown} is missing (null=True, and no condition requires "
        f"it) is not in {would.index_name}, because DynamoDB indexes only items holding every key attribute. "
        f"Refused before any request. Read only the items in the index knowingly with "
        f".using({would.name!r}), or add a condition such as {conds} (or a value or range on {shown}), or "
        f"{table}.")


def _pick(state: QueryState, candidates: list[BoundIndex], leaves: list[Leaf], complex_: list[Q],
          eq: dict[str, Any], ranged: set[str]) -> BoundIndex:
    """Choose the access path among ``candidates`` (their partition keys are given) that serves the query.

    Raises:
        InvalidQuery: none of them can (a condition it cannot carry, an order it does not give).
    """
    meta = state.model._meta
    # DynamoDB refuses a FilterExpression on a key attribute of the index queried: a condition
    # on an index's own sort attribute that the key condition cannot carry (ne, in, OR, NOT)
    # rules that index out
    carried = [c for c in candidates if _key_attribute_in_filter(c, leaves, complex_) is None]
    if not carried:
        bad = _key_attribute_in_filter(candidates[0], leaves, complex_)
        raise InvalidQuery(
            f"{meta.entity}: {bad} cannot be sent: {candidates[0].sort_field} is the sort key of index "
            f"{candidates[0].index_name}, DynamoDB takes one key condition on it and refuses it in a "
            "FilterExpression. Use lt/lte/gt/gte/between/exact on it only, or query another access path "
            "(using('primary')) where it is a plain attribute; refused before any request.")
    candidates = carried
    if state.order_field is not None:
        names = (state.order_field, *state.order_then)
        ordering = [c for c in candidates if orders_by(c, eq, meta, names)]
        if not ordering:
            can = "; ".join(f"{c.name}: {', '.join(orderable(c, eq, meta)) or 'nothing'}" for c in candidates)
            asked = ", ".join(repr(n) for n in names)
            raise InvalidQuery(
                f"{meta.entity}: order_by({asked}) cannot be served: DynamoDB returns a Query's "
                f"items in sort-key order only, and no access path for these conditions sorts by "
                f"{', then '.join(names)}. This query can order by: {can}. Sort the results yourself "
                "(sorted(qs, key=...)) or declare an Index whose sort key starts with that field.")
        candidates = ordering
    # a multi-attribute index cannot take a filter on its own key attributes: it serves only
    # when its key condition takes every condition on them
    usable = [c for c in candidates if not (c.is_multi and _multi_leftovers(c, leaves, complex_, eq))]
    if not usable:
        c = candidates[0]
        raise InvalidQuery(
            f"{meta.entity}: {', '.join(_multi_leftovers(c, leaves, complex_, eq))} cannot be asked of "
            f"{_describe_path(c, meta)}: its key attributes are the fields' own attributes, and DynamoDB takes "
            "them only in the key condition (equality on every partition field, then equalities on a "
            "left-to-right prefix of the sort fields and one range or begins_with on the next), never in a "
            "filter. Give the sort fields before it, or filter the results yourself. Nothing was sent.")
    candidates = usable
    # most selective first: the partition key built from the most given fields, then the
    # sort-key prefix using the most given fields; max() keeps the first declared on ties.
    # The whole primary key beats every index: it names one item, read strongly consistent
    # when asked, and never behind an index's replication lag
    if state.using is None and not state.collection and any(c is meta.primary for c in candidates) \
            and _full_primary(meta, eq):
        best = meta.primary
    else:
        best = max(candidates, key=lambda c: (len(c.pk.fields), _score(c, eq, ranged, meta)))
    return best


def _query_plan(state: QueryState, b: ExpressionBuilder, meta: Any, tmeta: Any, best: BoundIndex, table: str,
                conds: list[str], filter_expr: str | None, entity_types: frozenset[str] | None,
                limit: int | None, count: bool) -> Plan:
    """Assemble a Query plan from its key conditions and filter (template and multi-attribute paths)."""
    params: dict[str, Any] = {"TableName": table}
    if best.index_name:
        params["IndexName"] = best.index_name
    params["KeyConditionExpression"] = " AND ".join(conds)
    if filter_expr:
        params["FilterExpression"] = filter_expr
    if state.descending:
        params["ScanIndexForward"] = False
    projection = _projection(state, b, meta, tmeta, best)
    _finish(params, b, projection, state, limit=limit, count=count)
    return Plan("Query", table, best.index_name, best.name, params["KeyConditionExpression"],
                filter_expr or None, projection, b.names, b.values, params, entity_types=entity_types,
                bound=best)


def _plan_multi(state: QueryState, best: BoundIndex, b: ExpressionBuilder, leaves: list[Leaf],
                complex_: list[Q], eq: dict[str, Any], *, limit: int | None, count: bool) -> Plan:
    """The Query on a multi-attribute GSI: one condition per key attribute, natively typed."""
    meta = state.model._meta
    tmeta = meta.table._meta
    table = meta.table.table_name()
    if state.consistent:
        raise InvalidQuery(f"{meta.entity}: ConsistentRead is not possible on GSI {best.index_name}; "
                           "drop .consistent() or query the table or an LSI.")
    if state.collection and state.of is not None:
        raise InvalidQuery(f"{meta.entity}: collection().of() needs a sort-key prefix; {best.index_name} is a "
                           "multi-attribute GSI: filter on the entity's own fields instead.")
    used: set[int] = set()
    conds: list[str] = []
    pinned, nxt = _multi_prefix(best, eq)
    for f in (*best.pk_fields, *pinned):
        if eq[f] in ("", b""):
            raise InvalidQuery(f"{meta.entity}.{f}={eq[f]!r} cannot match through {best.index_name}: an item whose "
                               f"{f} is empty is not in the index (DynamoDB refuses empty key values). The query is "
                               "refused before any request.")
        conds.append(f"{b.name(meta.fields[f].attr_name)} = {b.value(serialize_value(meta, f, eq[f]))}")
    for i, (f, lk, v) in enumerate(leaves):
        if lk == "exact" and (f in best.pk_fields or f in pinned):
            used.add(i)
        if (f in best.pk_fields or f in best.sk_fields) and _asks_present(lk, v):
            used.add(i)  # every item of the index holds it (and DynamoDB refuses a filter on it)
    if nxt is not None:
        for i, (f, lk, v) in enumerate(leaves):
            if f == nxt and lk in _RANGE:
                if lk == "begins_with" and meta.fields[f].attr_type != "S":
                    raise InvalidQuery(f"{meta.entity}.{f}__begins_with: {f} is a {meta.fields[f].attr_type} "
                                       f"sort attribute of {best.index_name}; begins_with works on strings only.")
                if lk == "between":
                    if not (isinstance(v, (tuple, list)) and len(v) == 2):
                        raise InvalidQuery(f"{meta.entity}.{f}__between needs a (low, high) pair, got {v!r}.")
                    lo, hi = (meta.fields[f].validate(x, meta.entity) for x in v)
                    if _av_key(serialize_value(meta, f, lo)) > _av_key(serialize_value(meta, f, hi)):
                        raise InvalidQuery(f"{meta.entity}.{f}__between={v!r}: the low bound is above the high "
                                           "bound, so no item can match; the query is refused before any request.")
                used.add(i)
                if lk == "between" and v[0] in ("", b""):
                    lk, v = "lte", v[1]  # every stored value is above the empty one
                if v in ("", b""):
                    # DynamoDB refuses an empty value in a key condition; every stored key value is
                    # longer than the empty one
                    if lk in ("lt", "lte"):
                        raise InvalidQuery(f"{meta.entity}.{f}__{lk}={v!r}: no item of {best.index_name} has an "
                                           f"empty or smaller {f}; the query is refused before any request.")
                    break  # begins_with / gt / gte the empty value: every item of the index
                conds.append(_range_expr(b.name(meta.fields[f].attr_name), lk, v, b,
                                         lambda x, f=f: serialize_value(meta, f, x)))
                break
    filter_expr = _filter(b, meta, [lf for i, lf in enumerate(leaves) if i not in used], complex_)
    # count() always filters on the type (as on template paths): iteration drops every item of
    # another type holding these attributes, a type no model declares included
    if not state.collection and (count or _multi_shared(meta, best)):
        type_cond = f"{b.name(tmeta.type_attribute)} = {b.value({'S': meta.entity_type})}"
        filter_expr = f"{type_cond} AND {filter_expr}" if filter_expr else type_cond
    entity_types = None if state.collection else frozenset({meta.entity_type})
    return _query_plan(state, b, meta, tmeta, best, table, conds, filter_expr, entity_types, limit, count)


def _multi_shared(meta: Any, bound: BoundIndex) -> bool:
    """True when another entity type's items can be in this multi-attribute GSI.

    An item is in it when it holds every key attribute: any entity with fields stored under
    all of them can be, whether or not it declares the index.
    """
    need = set(bound.key_attrs)
    for other in meta.table._entities.values():
        om = other._meta
        if om.entity_type != meta.entity_type and need <= {f.attr_name for f in om.fields.values()}:
            return True
    return False


def _sort_condition(best: BoundIndex, b: ExpressionBuilder, meta: Any, eq: dict[str, Any],
                    leaves: list[Leaf], used: set[int], state: QueryState) -> str | None:
    if best.sk_attr is None:
        return None
    sk_name = b.name(best.sk_attr)
    if best.sort_field is not None:  # LSI on a field's own attribute: lookups map 1:1
        # every item of the LSI holds its sort attribute (and DynamoDB refuses a filter on it)
        used.update(i for i, (f, lk, v) in enumerate(leaves) if f == best.sort_field and _asks_present(lk, v))
        mine = [i for i, (f, lk, _) in enumerate(leaves) if f == best.sort_field and lk in ("exact", *_RANGE)]
        if not mine:
            return None
        used.update(mine)
        conds = [leaves[i][1:] for i in mine]
        # between('', high) is lte high: '' is below every stored text
        conds = [("lte", v[1]) if lk == "between" and isinstance(v, (tuple, list)) and len(v) == 2
                 and isinstance(v[0], str) and v[0] == "" else (lk, v) for lk, v in conds]
        for lk, v in conds:
            if isinstance(v, str) and v == "" and lk in ("exact", "lt", "lte"):
                raise InvalidQuery(
                    f"{meta.entity}.{best.sort_field}__{lk}='': {best.sort_field} is the sort key of index "
                    f"{best.index_name}, and DynamoDB stores no empty string in an index key, so no item "
                    "of this index can match; the query is refused before any request.")
        # '' is below every stored text: a lower bound of '' (or begins_with '') holds every item
        # of this sparse index, and DynamoDB refuses '' as a key-condition value
        conds = [(lk, v) for lk, v in conds
                 if not (isinstance(v, str) and v == "" and lk in ("gt", "gte", "begins_with"))]
        if not conds:
            return None
        if len(conds) == 1 and conds[0][0] != "between":
            lk, v = conds[0]
            f = best.sort_field
            return _range_expr(sk_name, lk, v, b, lambda x, f=f: serialize_value(meta, f, x))
        # DynamoDB takes one condition on the sort key and no filter on a key attribute:
        # the conditions become one inclusive range (BETWEEN)
        return _attribute_range(meta, best.sort_field, conds, sk_name, b)
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
        for f, lk, v in leaves:
            if f != nxt or lk not in _RANGE:
                continue
            fobj = meta.fields[f]
            spec = best.sk.spec_of(f)
            if lk == "begins_with" and isinstance(v, str) and fobj.attr_type == "S" and not spec:
                # the lookup stays in the FilterExpression too (as a range does): an item another
                # writer keyed differently (the percent encoding's "K#a%23x" for "a#x") has key
                # text under the prefix but a value that does not start with it
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


def _key_attribute_in_filter(bound: BoundIndex, leaves: list[Leaf], complex_: list[Q]) -> str | None:
    """The condition on ``bound``'s own sort attribute that would end in the FilterExpression, or ``None``."""
    f = bound.sort_field
    if f is None:
        return None
    for fname, lookup, value in leaves:
        if fname == f and lookup not in ("exact", *_RANGE) and not _asks_present(lookup, value):
            return f"{fname}__{lookup}={value!r}"
    for q in complex_:
        if any(fname == f for fname, _, _ in q.leaves()):
            return f"a condition on {f} inside OR/NOT (Q(...) | Q(...), exclude())"
    return None


def av_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """True when two attribute values are equal as DynamoDB's ``=`` compares them.

    Numbers compare numerically (``{"N": "1.0"}`` equals ``{"N": "1"}``), sets as sets,
    lists and maps element by element.
    """
    (ka, va), = a.items()
    (kb, vb), = b.items()
    if ka != kb:
        return False
    if ka == "N":
        return _decimal.Decimal(va) == _decimal.Decimal(vb)
    if ka == "NS":
        return {_decimal.Decimal(x) for x in va} == {_decimal.Decimal(x) for x in vb}
    if ka in ("SS", "BS"):
        return set(va) == set(vb)
    if ka == "L":
        return len(va) == len(vb) and all(av_equal(x, y) for x, y in zip(va, vb))
    if ka == "M":
        return va.keys() == vb.keys() and all(av_equal(va[k], vb[k]) for k in va)
    return bool(va == vb)


def _full_primary(meta: Any, eq: dict[str, Any]) -> bool:
    """True when the equalities give the whole primary key (one item)."""
    prim = meta.primary
    if not all(f in eq for f in prim.pk.fields):
        return False
    return prim.sk is None or prim.sk.prefix(eq, meta.key_version, entity=meta.entity).complete


def _av_key(av: dict[str, Any]) -> Any:
    """A Python value that orders like DynamoDB orders the attribute value (N: numerically, S: by UTF-8)."""
    (kind, v), = av.items()
    if kind == "N":
        return _decimal.Decimal(v)
    return v.encode("utf-8") if kind == "S" else v


# the numbers DynamoDB stores: 38 significant digits, magnitudes 1E-130 .. 9.99..E+125
_NUMBERS = _decimal.Context(prec=38, Emin=-130, Emax=125)
_SMALLEST = _decimal.Decimal("1E-130")


def _adjacent_av(meta: Any, fname: str, value: Any, av: dict[str, Any], step: int) -> dict[str, Any] | None:
    """The stored value right after (``step=1``) or before (``-1``) ``av``, or ``None`` when there is none."""
    fobj = meta.fields[fname]
    neighbour = getattr(fobj, "neighbour", None)
    if neighbour is not None:
        near = neighbour(fobj.validate(value, meta.entity), step)
        if near is not None:
            return serialize_value(meta, fname, near)
    (kind, v), = av.items()
    if kind == "N":
        d = _decimal.Decimal(v)
        near_d = _NUMBERS.next_plus(d) if step > 0 else _NUMBERS.next_minus(d)
        if 0 < abs(near_d) < _SMALLEST:  # nothing is stored between 0 and 1E-130
            near_d = _SMALLEST.copy_sign(near_d)
        return {"N": str(near_d)}
    if kind == "S" and step > 0:
        return {"S": v + "\x00"}  # the smallest text after v in byte order
    return None


def _attribute_range(meta: Any, fname: str, conds: list[tuple[str, Any]], sk_name: str,
                     b: ExpressionBuilder) -> str:
    """Combine several conditions on an LSI's own sort attribute into one key condition."""
    shown = ", ".join(f"{fname}__{lk}={v!r}" for lk, v in conds)
    bounds: list[tuple[str, Any]] = []
    for lk, v in conds:
        if lk == "begins_with":
            raise InvalidQuery(f"{meta.entity}: {shown}: begins_with cannot be combined with another condition "
                               f"on {fname}, the sort key of this index (DynamoDB takes one key condition and "
                               "no filter on a key attribute).")
        if lk == "between":
            if not (isinstance(v, (tuple, list)) and len(v) == 2):
                raise InvalidQuery(f"{meta.entity}.{fname}__between needs a (low, high) pair, got {v!r}.")
            bounds += [("gte", v[0]), ("lte", v[1])]
        elif lk == "exact":
            bounds += [("gte", v), ("lte", v)]
        else:
            bounds.append((lk, v))
    lo: dict[str, Any] | None = None
    hi: dict[str, Any] | None = None
    for lk, v in bounds:
        av = serialize_value(meta, fname, v)
        if lk in ("gt", "lt"):
            near = _adjacent_av(meta, fname, v, av, 1 if lk == "gt" else -1)
            if near is None:
                raise InvalidQuery(
                    f"{meta.entity}: {shown}: {fname} is the sort key of this index, and DynamoDB takes one "
                    f"condition on it and no filter on it; {fname}__{lk}={v!r} cannot be turned into an "
                    f"inclusive bound. Use {fname}__lte / __gte or __between.")
            av = near
        if lk in ("gt", "gte"):
            lo = av if lo is None or _av_key(av) > _av_key(lo) else lo
        else:
            hi = av if hi is None or _av_key(av) < _av_key(hi) else hi
    if lo is not None and hi is not None:
        if _av_key(lo) > _av_key(hi):
            raise InvalidQuery(f"{meta.entity}: {shown}: no value of {fname} meets all of these conditions; "
                               "the query is refused before any request.")
        if lo == hi:
            return f"{sk_name} = {b.value(lo)}"
        return f"{sk_name} BETWEEN {b.value(lo)} AND {b.value(hi)}"
    if lo is not None:
        return f"{sk_name} >= {b.value(lo)}"
    assert hi is not None
    return f"{sk_name} <= {b.value(hi)}"


def _needs_type_filter(meta: Any, bound: BoundIndex) -> bool:
    """True when other entity types can share ``bound``'s partitions and its sort key has no literal head."""
    if bound.sk is not None and bound.sk.prefix({}, meta.key_version, entity=meta.entity).value:
        return False
    return _partition_shared(meta, bound)


def _partition_shared(meta: Any, bound: BoundIndex) -> bool:
    """True when another entity type's items can share this access path's partitions.

    Then the sort key's literal prefix (``ORDER#``) keeps the others out of the read.
    """
    from .checks import could_collide

    for other in meta.table._entities.values():
        om = other._meta
        if om.entity_type == meta.entity_type:
            continue
        if bound.kind == "lsi":
            # an LSI's partitions are the table's: the other type is in it when it writes
            # the LSI's sort attribute (declares the index or a field stored there)
            in_lsi = (any(ob.index_name == bound.index_name for ob in om.all_indexes)
                      or any(f.attr_name == bound.sk_attr for f in om.fields.values()))
            if in_lsi and could_collide(bound.pk, meta.key_version, om.primary.pk, om.key_version):
                return True
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


def _projection(state: QueryState, b: ExpressionBuilder, meta: Any, tmeta: Any,
                bound: BoundIndex | None) -> str | None:
    if state.projection is None:
        return None
    attrs = [field_of(meta, f).attr_name for f in state.projection]
    # keys are always read (an instance never shows a key field it did not read), and so
    # are the key attributes of the table and the index (a cursor is built from them)
    attrs += [meta.fields[f].attr_name for f in meta.key_fields]
    attrs.append(tmeta.type_attribute)
    if meta.version_field:
        attrs.append(meta.fields[meta.version_field].attr_name)
    attrs += [a for a in (tmeta.pk_attribute, tmeta.sk_attribute) if a]
    if bound is not None:
        attrs += list(bound.key_attrs)
    seen: list[str] = []
    for a in attrs:
        if a not in seen:
            seen.append(a)
    return ", ".join(b.name(a) for a in seen)


def _finish(params: dict[str, Any], b: ExpressionBuilder, projection: str | None, state: QueryState,
            *, limit: int | None, count: bool) -> None:
    if count:
        params["Select"] = "COUNT"
    elif projection:
        params["ProjectionExpression"] = projection
    if limit is not None:
        params["Limit"] = max(limit, 1)
    # Names reserved while planning but not used (DynamoDB rejects unused placeholders);
    # whole placeholders are matched, so #n1 is not taken for used because #n10 is.
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
