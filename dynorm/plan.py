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

The planner is four modules: this one composes the steps of :func:`plan` (read the conditions;
the GetItem fast path; Scan; choose the access path; GetItem with checks; Query: key
condition, filter, projection, parameters); :mod:`dynorm.access_paths` chooses the access
path (candidates, ordering, the sparse-index rule); :mod:`dynorm.key_conditions` compiles the
KeyConditionExpression on it; :mod:`dynorm.plan_value` holds :class:`QueryState` and
:class:`Plan`. Every name other modules use is importable from here.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ._value import Value
from .access_paths import (
    _RANGE,
    _candidates,
    _choose_path,
    _exact,
    _multi_shared,
    _needs_type_filter,
    orderable,
    orders_by,
    sparse_fields,
)
from .access_paths import _text_orders as _text_orders
from .constraints import OWNER_KEY_ATTRIBUTE, sentinel_key, sentinel_pk
from .exceptions import InvalidQuery, ScanRequired
from .expressions import ExpressionBuilder, Leaf, Q, field_of, resolve_path, serialize_value
from .key_conditions import _adjacent_av as _adjacent_av
from .key_conditions import _av_key as _av_key
from .key_conditions import _multi_key_conditions, _sort_condition
from .options import PRIMARY, BoundIndex
from .plan_value import Plan, QueryState
from .plan_value import av_equal as av_equal
from .shards import given_bucket, shard_key
from .write_keys import check_key_sizes

__all__ = ["QueryState", "Plan", "plan", "orderable", "orders_by", "sparse_fields"]


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
    req = _read(state, limit=limit, count=count)
    if state.scan:
        return _plan_scan(req)
    try:
        best = _choose_path(state, req.leaves, req.complex_, req.eq, req.ranged)
    except ScanRequired:
        through = _plan_through_unique(req)  # get(email=...): the sentinel, then the item (2 GetItems)
        if through is None:
            raise
        return through
    if state.consistent and best.kind in ("gsi", "multi"):
        raise InvalidQuery(f"{req.meta.entity}: ConsistentRead is not possible on GSI {best.index_name}; "
                           "drop .consistent() or query the table or an LSI.")
    if best.is_multi:
        return _plan_multi(req, best)
    pk_value = best.pk.fill(req.eq, req.meta.key_version, entity=req.meta.entity)
    sk_full = _full_sort_key(req, best)
    if best.shards:
        return _plan_sharded(req, best, pk_value, sk_full)
    get_item = _plan_get_item(req, best, pk_value, sk_full)
    if get_item is not None:
        return get_item
    return _plan_query(req, best, pk_value, sk_full)


def _plan_sharded(req: _Request, best: BoundIndex, pk_value: str, sk_full: str | None) -> Plan:
    """The Query of a write-sharded GSI: one bucket when the conditions give its source, else one per bucket.

    The fan-out plan's ``params`` are bucket 0's request; :attr:`Plan.fanout` holds every bucket's,
    which differ only in the partition-key value.
    """
    delim = req.tmeta.delimiter
    bucket = given_bucket(best, req.eq, req.meta.entity)
    if bucket is not None:
        return _plan_query(req, best, shard_key(pk_value, bucket, delim), sk_full)
    qp = _plan_query(req, best, shard_key(pk_value, 0, delim), sk_full)
    assert qp.key_condition is not None
    pk_placeholder = qp.key_condition.split(" AND ")[0].split(" = ")[1]
    eav = qp.params["ExpressionAttributeValues"]
    fanout = tuple({**qp.params,
                    "ExpressionAttributeValues": {**eav, pk_placeholder: {"S": shard_key(pk_value, i, delim)}}}
                   for i in range(best.shards))
    return replace(qp, fanout=fanout)


# -- reading the conditions -------------------------------------------------------------------

class _Request(Value):
    """What every step of one :func:`plan` call reads: the state, its entity and table, its conditions.

    Attributes:
        state: the queryset's description; meta, tmeta: its entity's and table's options.
        table: the physical table name.
        leaves, complex_: the AND-ed ``(field, lookup, value)`` conditions, and the rest (OR, NOT).
        eq: the validated ``field=value`` equalities; ranged: fields with a range lookup.
        entity_types: the entity types the results may hold (``None``: a collection's, any).
        limit, count: :func:`plan`'s arguments.
        b: the placeholders of this request's expressions, in the order they are taken.
    """

    state: QueryState
    meta: Any
    tmeta: Any
    table: str
    b: ExpressionBuilder
    leaves: list[Leaf]
    complex_: list[Q]
    eq: dict[str, Any]
    ranged: set[str]
    entity_types: frozenset[str] | None
    limit: int | None
    count: bool

    def __init__(self, state: QueryState, meta: Any, tmeta: Any, table: str, b: ExpressionBuilder,
                 leaves: list[Leaf], complex_: list[Q], eq: dict[str, Any], ranged: set[str],
                 entity_types: frozenset[str] | None, limit: int | None, count: bool) -> None:
        self.state = state
        self.meta = meta
        self.tmeta = tmeta
        self.table = table
        self.b = b
        self.leaves = leaves
        self.complex_ = complex_
        self.eq = eq
        self.ranged = ranged
        self.entity_types = entity_types
        self.limit = limit
        self.count = count


def _read(state: QueryState, *, limit: int | None, count: bool) -> _Request:
    """Split and check ``state``'s conditions (unknown fields and lookups, contradictory equalities)."""
    meta = state.model._meta
    table = meta.table.table_name()
    tmeta = meta.table._meta
    b = ExpressionBuilder()
    leaves, complex_ = _split(state)
    for fname, _lookup, _value in leaves:
        resolve_path(meta, fname)  # a field, or a document path inside a Map/List (filtered, never keyed)
    for q in complex_:
        for fname, _lookup, _value in q.leaves():
            resolve_path(meta, fname)
    eq = _equalities(meta, leaves)
    ranged = {f for f, lookup, _ in leaves if lookup in _RANGE}
    entity_types = None if state.collection else frozenset({meta.entity_type})
    return _Request(state, meta, tmeta, table, b, leaves, complex_, eq, ranged, entity_types, limit, count)


def _split(state: QueryState) -> tuple[list[Leaf], list[Q]]:
    """``state``'s AND-ed leaf conditions, and the rest (OR, NOT) as ``Q`` objects."""
    leaves: list[Leaf] = []
    complex_: list[Q] = []
    for q in state.where:
        lv, rest = q.flatten_and()
        leaves += lv
        complex_ += rest
    return leaves, complex_



def _equalities(meta: Any, leaves: list[Leaf]) -> dict[str, Any]:
    """The ``field=value`` equalities, validated; two different values for one field are refused."""
    eq: dict[str, Any] = {}
    for fname, lookup, value in leaves:
        if lookup != "exact" or fname not in meta.fields:  # a document path is only ever filtered
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



# -- GetItem -----------------------------------------------------------------------------------

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



def _full_sort_key(req: _Request, best: BoundIndex) -> str | None:
    """The whole sort-key text of the table key when the equalities give it (``None`` otherwise)."""
    if best.name == PRIMARY and best.sk is not None:
        pre = best.sk.prefix(req.eq, req.meta.key_version, entity=req.meta.entity)
        return pre.value if pre.complete else None
    return None


def _plan_get_item(req: _Request, best: BoundIndex, pk_value: str, sk_full: str | None) -> Plan | None:
    """GetItem when the whole primary key is given and nothing else is asked for (``None`` otherwise).

    Other equalities ride along as checks of the item read (GetItem takes no FilterExpression):
    the same answer as a Query with a filter, with ConsistentRead possible.
    """
    state, meta, tmeta, b, leaves = req.state, req.meta, req.tmeta, req.b, req.leaves
    # an equality through a lossy spec ({day:%Y-%m-%d}) only narrows the read: it stays a filter
    extra = [i for i, (f, lk, _) in enumerate(leaves) if not (lk == "exact" and f in best.fields and _exact(best, f))]
    if not (best.name == PRIMARY and (best.sk is None or sk_full is not None) and not req.complex_
            and all(leaves[i][1] == "exact" and leaves[i][0] in meta.fields for i in extra)
            and not state.collection and state.using is None):  # a document path: a Query's filter
        return None
    key: dict[str, Any] = {tmeta.pk_attribute: {"S": pk_value}}
    if best.sk is not None and tmeta.sk_attribute:
        key[tmeta.sk_attribute] = {"S": sk_full}
    checks: dict[str, dict[str, Any]] = {}
    for i in extra:
        f = leaves[i][0]
        checks[meta.fields[f].attr_name] = serialize_value(meta, f, req.eq[f])
    params = {"TableName": req.table, "Key": key}
    projection = _projection(req, best)
    if projection is not None and checks:
        projection = ", ".join([projection, *(b.name(a) for a in checks)])
    _finish(params, req, projection, limit=None, count=False)
    return Plan("GetItem", req.table, None, PRIMARY, None, None, projection, b.names, b.values, params,
                key=key, entity_types=req.entity_types, bound=best, checks=tuple(checks.items()))


def _plan_through_unique(req: _Request) -> Plan | None:
    """Two GetItems for equalities on every field of a unique constraint that no index serves.

    The first reads the constraint's sentinel (its owner's primary-key fields), the second the item
    under the key they render; every equality asked is checked on the item read, so a value
    changed between the two reads gives no result. Consistent when the queryset is (``consistent()``),
    else both eventually consistent (0.5 RCU each), as ``get()`` by key is. ``None`` when no
    constraint is fully given by equalities alone.
    """
    state, meta, tmeta, b, leaves = req.state, req.meta, req.tmeta, req.b, req.leaves
    if req.complex_ or state.collection or state.using is not None or any(lk != "exact" for _, lk, _ in leaves):
        return None
    given = [c for c in meta.constraints if all(req.eq.get(n) is not None for n in c.fields)]
    if not given:
        return None
    c = given[0]
    key = sentinel_key(tmeta, sentinel_pk(meta.entity_type, c, meta.fields, [req.eq[n] for n in c.fields],
                                          entity=meta.entity))
    checks = {meta.fields[f].attr_name: serialize_value(meta, f, req.eq[f]) for f, _, _ in leaves}
    projection = _projection(req, None)
    if projection is not None:
        projection = ", ".join([projection, *(b.name(a) for a in checks)])
    item_params: dict[str, Any] = {"TableName": req.table}
    _finish(item_params, req, projection, limit=None, count=False)
    params: dict[str, Any] = {"TableName": req.table, "Key": key, "ProjectionExpression": "#o",
                              "ExpressionAttributeNames": {"#o": OWNER_KEY_ATTRIBUTE}}
    if state.consistent:
        params["ConsistentRead"] = True
    params["ReturnConsumedCapacity"] = "TOTAL"
    return Plan("GetItem", req.table, None, PRIMARY, None, None, projection, dict(b.names), dict(b.values), params,
                key=key, entity_types=req.entity_types, bound=meta.primary, checks=tuple(checks.items()),
                through_unique=(c.name, item_params))


# -- Scan --------------------------------------------------------------------------------------

def _plan_scan(req: _Request) -> Plan:
    """The Scan ``scan()`` asked for: every condition in the FilterExpression.

    Raises:
        InvalidQuery: an order was asked for (a Scan has none).
    """
    state, meta, b = req.state, req.meta, req.b
    if state.descending or state.ordered or state.order_field is not None:
        raise InvalidQuery(f"{meta.entity}: a Scan returns items in no particular order; order_by() (also "
                           "order_by('sk')) and reverse() need a Query (give the partition-key fields of an "
                           "access path), or drop the order_by() and sort the results yourself.")
    filter_expr = _filter(b, meta, req.leaves, req.complex_)
    if not state.collection:
        # a Scan reads every entity type: keep only this one server-side, so count() and
        # Limit mean this entity's items
        filter_expr = _with_type(req, meta.entity_type, filter_expr)
    params: dict[str, Any] = {"TableName": req.table}
    scan_bound = None
    if state.using and state.using != PRIMARY:
        scan_bound = _candidates(state, req.eq)[0]
        params["IndexName"] = scan_bound.index_name
    if filter_expr:
        params["FilterExpression"] = filter_expr
    projection = _projection(req, scan_bound)
    _finish(params, req, projection, limit=req.limit, count=req.count)
    return Plan("Scan", req.table, params.get("IndexName"), None, None, filter_expr or None,
                projection, b.names, b.values, params, entity_types=req.entity_types, bound=scan_bound)


# -- Query -------------------------------------------------------------------------------------

def _plan_query(req: _Request, best: BoundIndex, pk_value: str, sk_full: str | None) -> Plan:
    """The Query on a template access path: key condition, then filter, projection and parameters."""
    b = req.b
    pk_placeholder = b.value({'S': pk_value})
    conds = [f"{b.name(best.pk_attr)} = {pk_placeholder}"]
    used: set[int] = set()  # indexes into leaves consumed by the key condition
    for i, (f, lk, _) in enumerate(req.leaves):
        if lk == "exact" and f in best.pk.fields and best.pk.exact_for(f):
            used.add(i)
    sk_cond = _sort_condition(best, b, req.meta, req.eq, req.leaves, used, req.state)
    if sk_cond:
        conds.append(sk_cond)
    qp = _query_plan(req, best, conds, _query_filter(req, best, used))
    whole = _whole_key(req, best, pk_placeholder, sk_full, sk_cond)
    return replace(qp, whole_key=whole) if whole else qp


def _query_filter(req: _Request, best: BoundIndex, used: set[int]) -> str:
    """The FilterExpression of a Query on a template path: the conditions its key does not carry, and the type."""
    state, meta = req.state, req.meta
    filter_expr = _filter(req.b, meta, [lf for i, lf in enumerate(req.leaves) if i not in used], req.complex_)
    # the type the results are read as (collection().of(X): X; a plain collection: any)
    typed = state.of._meta if state.collection and state.of is not None else None if state.collection else meta
    if typed is not None and (req.count or (not state.collection and _needs_type_filter(meta, best))):
        # another entity type's items share these partitions and the sort key starts with a
        # placeholder, so no key condition keeps them out: filter on the type attribute, so
        # Limit means this entity's items. count() always filters: iteration drops every item
        # of another type (one whose key text extends this prefix, "M#{m}#N#{k}" under
        # "M#{m}", or a type no model declares), so Select=COUNT must not count them
        filter_expr = _with_type(req, typed.entity_type, filter_expr)
    return filter_expr


def _whole_key(req: _Request, best: BoundIndex, pk_placeholder: str, sk_full: str | None,
               sk_cond: str | None) -> tuple[tuple[str, str], ...]:
    """:attr:`Plan.whole_key` of a Query on one whole primary key (``()`` for any other Query)."""
    tmeta, b = req.tmeta, req.b
    if not (best.name == PRIMARY and not req.state.collection and tmeta.pk_attribute == best.pk_attr):
        return ()
    if best.sk is None:
        return ((tmeta.pk_attribute, pk_placeholder),)
    if sk_full is not None and tmeta.sk_attribute:
        sk_ph = next((ph for ph, av in b.values.items() if av == {"S": sk_full} and ph != pk_placeholder), None)
        if sk_ph is not None and sk_cond == f"{b.name(tmeta.sk_attribute)} = {sk_ph}":
            return ((tmeta.pk_attribute, pk_placeholder), (tmeta.sk_attribute, sk_ph))
    return ()


def _plan_multi(req: _Request, best: BoundIndex) -> Plan:
    """The Query on a multi-attribute GSI: one condition per key attribute, natively typed."""
    state, meta, b = req.state, req.meta, req.b
    if state.collection and state.of is not None:
        raise InvalidQuery(f"{meta.entity}: collection().of() needs a sort-key prefix; {best.index_name} is a "
                           "multi-attribute GSI: filter on the entity's own fields instead.")
    used: set[int] = set()
    conds = _multi_key_conditions(best, b, meta, req.eq, req.leaves, used)
    filter_expr = _filter(b, meta, [lf for i, lf in enumerate(req.leaves) if i not in used], req.complex_)
    # count() always filters on the type (as on template paths): iteration drops every item of
    # another type holding these attributes, a type no model declares included
    if not state.collection and (req.count or _multi_shared(meta, best)):
        filter_expr = _with_type(req, meta.entity_type, filter_expr)
    return _query_plan(req, best, conds, filter_expr)


def _query_plan(req: _Request, best: BoundIndex, conds: list[str], filter_expr: str | None) -> Plan:
    """Assemble a Query plan from its key conditions and filter (template and multi-attribute paths)."""
    params: dict[str, Any] = {"TableName": req.table}
    if best.index_name:
        params["IndexName"] = best.index_name
    params["KeyConditionExpression"] = " AND ".join(conds)
    if filter_expr:
        params["FilterExpression"] = filter_expr
    if req.state.descending:
        params["ScanIndexForward"] = False
    projection = _projection(req, best)
    _finish(params, req, projection, limit=req.limit, count=req.count)
    return Plan("Query", req.table, best.index_name, best.name, params["KeyConditionExpression"],
                filter_expr or None, projection, req.b.names, req.b.values, params, entity_types=req.entity_types,
                bound=best)


# -- filter, projection and the request's parameters -------------------------------------------

def _filter(b: ExpressionBuilder, meta: Any, leaves: list[Leaf], complex_: list[Q]) -> str:
    """The FilterExpression of these conditions (``""`` when there are none)."""
    parts = [b.leaf(lf, meta) for lf in leaves]
    parts += [b.condition(q, meta) for q in complex_]
    parts = [p for p in parts if p]
    return " AND ".join(parts)



def _with_type(req: _Request, entity_type: str, filter_expr: str) -> str:
    """``filter_expr`` with a condition on the type attribute first (only ``entity_type``'s items)."""
    b = req.b
    type_cond = f"{b.name(req.tmeta.type_attribute)} = {b.value({'S': entity_type})}"
    return f"{type_cond} AND {filter_expr}" if filter_expr else type_cond


def _projection(req: _Request, bound: BoundIndex | None) -> str | None:
    """The ProjectionExpression of ``only()``/``values()`` (``None``: every attribute)."""
    state, b, meta, tmeta = req.state, req.b, req.meta, req.tmeta
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



def _finish(params: dict[str, Any], req: _Request, projection: str | None, *, limit: int | None,
            count: bool) -> None:
    """Add the parameters every read shares: Select/projection, Limit, placeholders, ConsistentRead."""
    b = req.b
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
    if req.state.consistent:
        params["ConsistentRead"] = True
    params["ReturnConsumedCapacity"] = "TOTAL"

