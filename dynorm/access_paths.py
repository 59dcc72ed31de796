"""Choosing the access path of a Query: the table's key or one of the entity's indexes.

Pure rules over an entity's bound indexes (:class:`dynorm.options.BoundIndex`) and the
conditions of a :class:`~dynorm.plan_value.QueryState`: which paths have their partition key
given (:func:`_candidates`), which can carry the conditions and give the order asked for
(:func:`_pick`), which hold every matching item (the sparse-index rule, :func:`sparse_fields`),
and whether other entity types share a path's partitions (then a type condition keeps them
out). :func:`_choose_path` composes them for :func:`dynorm.plan.plan`.
"""

from __future__ import annotations

from typing import Any

from .exceptions import InvalidQuery, ScanRequired
from .expressions import Leaf, Q, split_lookup
from .options import PRIMARY, BoundIndex
from .plan_value import QueryState

__all__ = ["orderable", "orders_by", "sparse_fields"]

_RANGE = ("lt", "lte", "gt", "gte", "between", "begins_with")


def _choose_path(state: QueryState, leaves: list[Leaf], complex_: list[Q], eq: dict[str, Any],
                 ranged: set[str]) -> BoundIndex:
    """The access path a Query for ``state`` reads: ``using()``'s, or the best that holds every match.

    Raises:
        ScanRequired: no access path has its partition key given (and ``using()`` named none).
        InvalidQuery: ``using()`` names a path whose partition key is not given, or no given
            path can serve the conditions and order (:func:`_pick`, :func:`_pick_complete`).
    """
    meta = state.model._meta
    candidates = _candidates(state, eq)
    if not candidates or not all(f in eq for f in candidates[0].pk.fields):
        if state.using is not None and candidates:
            missing = [f for f in candidates[0].pk.fields if f not in eq]
            raise InvalidQuery(f"{meta.entity}.objects.using({state.using!r}) needs "
                               f"{', '.join(missing)} for the partition key.")
        raise _scan_required(meta, leaves, complex_)
    if state.using is not None:
        return _pick(state, candidates, leaves, complex_, eq, ranged)
    return _pick_complete(state, candidates, leaves, complex_, eq, ranged)


def _candidates(state: QueryState, eq: dict[str, Any]) -> list[BoundIndex]:
    """The access paths whose partition key the equalities give (``using()``'s alone when named)."""
    meta = state.model._meta
    if state.using is not None:
        if state.using == PRIMARY:
            return [meta.primary]
        if state.using not in meta.indexes:
            paths = ", ".join([PRIMARY, *meta.indexes])
            raise InvalidQuery(f"{meta.entity} has no access path {state.using!r}; access paths: {paths}.")
        return [meta.indexes[state.using]]
    return [b for b in meta.all_indexes if all(f in eq for f in b.pk.fields)]


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


def _score(bound: BoundIndex, eq: dict[str, Any], ranged: set[str], meta: Any) -> int:
    """How much of ``bound``'s sort key the conditions use: pinned fields count 2, a range on the next 1."""
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


def _full_primary(meta: Any, eq: dict[str, Any]) -> bool:
    """True when the equalities give the whole primary key (one item)."""
    prim = meta.primary
    if not all(f in eq for f in prim.pk.fields):
        return False
    return prim.sk is None or prim.sk.prefix(eq, meta.key_version, entity=meta.entity).complete


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


def _exact(bound: BoundIndex, f: str) -> bool:
    """True when an equality on ``f`` is fully answered by ``bound``'s key text."""
    return all(t.exact_for(f) for t in (bound.pk, bound.sk) if t is not None and f in t.fields)


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


# -- orderings -----------------------------------------------------------------------------

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


# -- partitions shared with other entity types ---------------------------------------------

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
                    bound.pk, meta.key_version, ob.pk, om.key_version, bound.shards, ob.shards):
                return True
    return False


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


# -- refusals ------------------------------------------------------------------------------

def _describe_path(bound: BoundIndex, meta: Any) -> str:
    """``bound`` for an error message: its name, where it lives and its key."""
    where = bound.index_name or "table"
    if bound.is_multi:
        sort = f", sort {' + '.join(bound.sk_fields)}" if bound.sk_fields else ""
        return f"{bound.name} ({where}: partition {' + '.join(bound.pk_fields)}{sort})"
    sort = (f", sort {bound.sk.template}" if bound.sk is not None
            else f", sort {bound.sort_field}" if bound.sort_field else "")
    return f"{bound.name} ({where}: partition {bound.pk.template}{sort})"


def _scan_required(meta: Any, leaves: list[Leaf], complex_: list[Q]) -> ScanRequired:
    """The :class:`ScanRequired` for conditions no access path serves, naming what would make one."""
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

