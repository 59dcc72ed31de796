"""Compiling the KeyConditionExpression of a Query on a chosen access path.

The sort-key part of a template key (a literal prefix, ``begins_with`` or a key range under the
table's key encoding, :func:`dynorm.keys.key_range`), of an LSI on a field's own attribute (the
conditions merged into one inclusive range, since DynamoDB takes one condition on a sort key
and no filter on it), of ``collection().of()`` (the entity's sort-key prefix) and of a
multi-attribute GSI (one condition per key attribute, natively typed). Each step records the
conditions it carries in ``used`` (indexes into the leaves), so the rest become the
FilterExpression. Pure: placeholders come from the :class:`~dynorm.expressions.ExpressionBuilder`.
"""

from __future__ import annotations

import decimal as _decimal
from typing import Any

from .access_paths import _RANGE, _asks_present, _multi_prefix, _partition_shared
from .exceptions import InvalidQuery
from .expressions import ExpressionBuilder, Leaf, serialize_value
from .keys import key_range
from .options import BoundIndex
from .plan_value import QueryState

__all__: list[str] = []


def _sort_condition(best: BoundIndex, b: ExpressionBuilder, meta: Any, eq: dict[str, Any],
                    leaves: list[Leaf], used: set[int], state: QueryState) -> str | None:
    """The sort-key condition of a Query on ``best`` (``None``: the whole partition).

    Adds to ``used`` the indexes of the leaves the key condition answers.
    """
    if best.sk_attr is None:
        return None
    sk_name = b.name(best.sk_attr)
    if best.sort_field is not None:  # LSI on a field's own attribute: lookups map 1:1
        return _lsi_attribute_condition(best, b, meta, leaves, used, sk_name)
    if state.collection:
        return _collection_condition(best, b, state, sk_name)
    return _template_sort_condition(best, b, meta, eq, leaves, used, sk_name)


def _lsi_attribute_condition(best: BoundIndex, b: ExpressionBuilder, meta: Any, leaves: list[Leaf],
                             used: set[int], sk_name: str) -> str | None:
    """The condition on an LSI whose sort key is a field's own attribute (``best.sort_field``)."""
    assert best.sort_field is not None
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
        return _range_expr(sk_name, lk, v, b, lambda x, f=f: serialize_value(meta, f, x), f"{meta.entity}.{f}")
    # DynamoDB takes one condition on the sort key and no filter on a key attribute:
    # the conditions become one inclusive range (BETWEEN)
    return _attribute_range(meta, best.sort_field, conds, sk_name, b)


def _collection_condition(best: BoundIndex, b: ExpressionBuilder, state: QueryState, sk_name: str) -> str | None:
    """The sort-key condition of an item collection: none, or ``of()``'s entity's prefix."""
    if state.of is None:
        return None  # the whole item collection
    of_meta = state.of._meta
    of_bound = next((x for x in of_meta.all_indexes if x.index_name == best.index_name), None)
    if of_bound is None or of_bound.sk is None:
        raise InvalidQuery(f"{of_meta.entity} has no sort key on {best.index_name or 'the table'}; "
                           "it cannot be picked out of this collection.")
    pre = of_bound.sk.prefix(dict(state.of_values), of_meta.key_version, entity=of_meta.entity)
    if pre.complete:
        return f"{sk_name} = {b.value({'S': pre.value})}"
    return f"begins_with({sk_name}, {b.value({'S': pre.value})})" if pre.value else None


def _template_sort_condition(best: BoundIndex, b: ExpressionBuilder, meta: Any, eq: dict[str, Any],
                             leaves: list[Leaf], used: set[int], sk_name: str) -> str | None:
    """The condition on a sort-key template: its given prefix, then a range or ``begins_with`` on the next field."""
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


def _multi_key_conditions(best: BoundIndex, b: ExpressionBuilder, meta: Any, eq: dict[str, Any],
                          leaves: list[Leaf], used: set[int]) -> list[str]:
    """The key conditions of a Query on a multi-attribute GSI, one per key attribute, natively typed.

    Equalities on every partition field and on the pinned prefix of the sort fields, then one
    range or ``begins_with`` on the next sort field. Adds to ``used`` the leaves they answer.
    """
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
        rng = _multi_range(best, b, meta, nxt, leaves, used)
        if rng is not None:
            conds.append(rng)
    return conds


def _multi_range(best: BoundIndex, b: ExpressionBuilder, meta: Any, nxt: str, leaves: list[Leaf],
                 used: set[int]) -> str | None:
    """The condition on ``nxt``, the first sort field of a multi-attribute GSI not pinned (``None``: none)."""
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
                return None  # begins_with / gt / gte the empty value: every item of the index
            return _range_expr(b.name(meta.fields[f].attr_name), lk, v, b,
                               lambda x, f=f: serialize_value(meta, f, x), f"{meta.entity}.{f}")
    return None


def _range_expr(name: str, lk: str, v: Any, b: ExpressionBuilder, ser: Any, label: str) -> str:
    """One key condition ``name <op> value`` (or BETWEEN, begins_with), values serialised by ``ser``.

    Raises:
        InvalidQuery: ``begins_with`` with a value that is not text (``label`` names entity and field).
    """
    ops = {"exact": "=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
    if lk in ops:
        return f"{name} {ops[lk]} {b.value(ser(v))}"
    if lk == "between":
        lo, hi = v
        return f"{name} BETWEEN {b.value(ser(lo))} AND {b.value(ser(hi))}"
    if not isinstance(v, str):
        raise InvalidQuery(f"{label}__begins_with={v!r}: begins_with takes the leading text of the stored "
                           f"value (a str, e.g. '2024-01' for a DateTime), not a {type(v).__name__}; the "
                           "query is refused before any request.")
    return f"begins_with({name}, {b.value({'S': v})})"


def _key_range_expr(name: str, rng: Any, b: ExpressionBuilder) -> str:
    """The key condition of a :func:`dynorm.keys.key_range` (inclusive bounds on key text)."""
    if rng.lo is not None and rng.hi is not None:
        return f"{name} BETWEEN {b.value({'S': rng.lo})} AND {b.value({'S': rng.hi})}"
    if rng.lo is not None:
        return f"{name} >= {b.value({'S': rng.lo})}"
    return f"{name} <= {b.value({'S': rng.hi})}"


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

