"""The planner's values: :class:`QueryState` (what a queryset describes) and :class:`Plan` (the request).

A :class:`Plan` is what ``QuerySet.explain()`` returns and what evaluation sends: its ``params``
are the first request exactly. ``str(plan)`` renders it for people (placeholders substituted);
:func:`av_equal` is DynamoDB's ``=`` on attribute values, which a GetItem plan's checks use.
Pure: no I/O, no planning (that is :mod:`dynorm.plan`).
"""

from __future__ import annotations

import decimal as _decimal
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._value import FrozenValue
from .expressions import Q, show_key
from .options import BoundIndex

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["QueryState", "Plan", "av_equal"]


class QueryState(FrozenValue):
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
    where: tuple[Q, ...]
    using: str | None
    scan: bool
    descending: bool
    projection: tuple[str, ...] | None
    consistent: bool
    collection: bool
    of: type[EntityLike] | None
    of_values: tuple[tuple[str, Any], ...]
    prefetch: tuple[str, ...]
    order_field: str | None
    order_then: tuple[str, ...]
    ordered: bool
    empty: bool

    def __init__(self, model: type[EntityLike], where: tuple[Q, ...] = (), using: str | None = None,
                 scan: bool = False, descending: bool = False, projection: tuple[str, ...] | None = None,
                 consistent: bool = False, collection: bool = False, of: type[EntityLike] | None = None,
                 of_values: tuple[tuple[str, Any], ...] = (), prefetch: tuple[str, ...] = (),
                 order_field: str | None = None, order_then: tuple[str, ...] = (), ordered: bool = False,
                 empty: bool = False) -> None:
        self.__dict__.update(model=model, where=where, using=using, scan=scan, descending=descending,
                             projection=projection, consistent=consistent, collection=collection, of=of,
                             of_values=of_values, prefetch=prefetch, order_field=order_field,
                             order_then=order_then, ordered=ordered, empty=empty)

    def with_(self, **changes: Any) -> QueryState:
        """Return a copy with ``changes`` applied."""
        return self.replace(**changes)



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
        through_unique: for ``get(email=...)`` on a unique constraint no index serves, (constraint
            name, the parameters of the second GetItem without its ``Key``): ``params`` read the
            sentinel, whose owner's key fields give the item's key; ``checks`` then hold on the item.
        fanout: for a Query of a write-sharded GSI without the bucket's source, the request of
            each bucket in bucket order (``params`` is bucket 0's); ``()`` for any other plan.
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
    through_unique: tuple[str, dict[str, Any]] | None = None
    fanout: tuple[dict[str, Any], ...] = ()

    @property
    def requests(self) -> tuple[dict[str, Any], ...]:
        """Every first request this plan sends: each bucket's of a fan-out, else ``(params,)``."""
        return self.fanout or (self.params,)

    def admits(self, item: dict[str, Any]) -> bool:
        """True when the raw ``item`` a GetItem returned meets :attr:`checks` (DynamoDB's equality)."""
        return all(attr in item and av_equal(item[attr], av) for attr, av in self.checks)

    def readable(self, text: str | None) -> str | None:
        """Substitute names and values into an expression for display (a name or map key that is not a
        plain identifier is quoted: ``stock."W 01" = 1``)."""
        if text is None:
            return None
        for ph in sorted(self.values, key=len, reverse=True):
            (kind, v), = self.values[ph].items()
            text = text.replace(ph, json.dumps(v, ensure_ascii=False) if kind == "S" else str(v))
        for ph in sorted(self.names, key=len, reverse=True):
            text = text.replace(ph, show_key(self.names[ph]))
        return text

    def __str__(self) -> str:
        parts = [f"{self.operation} {self.table}" + (f" index {self.index}" if self.index else "")]
        if self.key is not None:
            parts.append("Key: " + ", ".join(f"{k} = {json.dumps(next(iter(v.values())))}"
                                             for k, v in self.key.items()))
        if self.through_unique is not None:
            parts[0] += f" (the sentinel of unique constraint {self.through_unique[0]!r})"
            parts.append(f"then GetItem {self.table} Key: the primary key of the item the sentinel names")
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
        if self.fanout:
            ph = self._pk_placeholder()
            keys = ", ".join(json.dumps(r["ExpressionAttributeValues"][ph]["S"], ensure_ascii=False)
                             for r in self.fanout)
            parts.append(f"Fan-out: {len(self.fanout)} Queries in parallel (one per write-sharding bucket), "
                         f"merged in sort-key order; partition keys {keys}")
        return "\n  ".join(parts)

    def _pk_placeholder(self) -> str:
        return (self.key_condition or "").split(" AND ")[0].split(" = ")[-1]

    def fingerprint(self) -> str:
        """A short hash of the request (without paging), identifying the query for cursors."""
        import hashlib

        query = {k: v for k, v in self.params.items() if k not in ("Limit", "ExclusiveStartKey")}
        blob = json.dumps(query, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]



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

