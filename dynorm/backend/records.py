"""Request records: what each request cost, for :func:`capture` blocks and queryset ``stats``.

:func:`record` is called once per request by :mod:`dynorm.backend.calls` (answered or not);
it adds the figures to the caller's :class:`Stats` and to every open :class:`Capture`.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

__all__ = ["WRITE_OPERATIONS", "Stats", "RequestRecord", "Capture", "capture", "record", "table_names", "tables_of"]


@dataclass
class Stats:
    """Cost of the requests made for one queryset evaluation or capture block.

    Attributes:
        requests: number of requests sent.
        items: items returned (``Count``; for GetItem 0 or 1).
        scanned: items read before filtering (``ScannedCount``).
        read_capacity: read capacity units consumed.
        write_capacity: write capacity units consumed.
    """

    requests: int = 0
    items: int = 0
    scanned: int = 0
    read_capacity: float = 0.0
    write_capacity: float = 0.0

    def add(self, record: RequestRecord) -> None:
        """Add one request's figures."""
        self.requests += 1
        self.items += record.items
        self.scanned += record.scanned
        self.read_capacity += record.read_capacity
        self.write_capacity += record.write_capacity


@dataclass
class RequestRecord:
    """One request sent to DynamoDB.

    Attributes:
        operation: ``GetItem``, ``Query``, ``PutItem``, ...
        table: table name; index: index name or ``None``.
        params: the request parameters as sent.
        items, scanned: ``Count``/``ScannedCount`` (or 1/0 for a found GetItem).
        read_capacity, write_capacity: consumed capacity units (when DynamoDB reports them).
        error: the DynamoDB error code when the request failed, else ``None``.
    """

    operation: str
    table: str | None
    index: str | None
    params: dict[str, Any]
    items: int = 0
    scanned: int = 0
    read_capacity: float = 0.0
    write_capacity: float = 0.0
    error: str | None = None


@dataclass
class Capture:
    """Requests recorded inside a :func:`capture` block (from every thread)."""

    requests: list[RequestRecord] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.requests)

    @property
    def count(self) -> int:
        """Number of requests sent."""
        return len(self.requests)

    @property
    def operations(self) -> list[str]:
        """The operations sent, in order (``["Query", "GetItem"]``)."""
        return [r.operation for r in self.requests]

    @property
    def stats(self) -> Stats:
        """Totals over the captured requests."""
        total = Stats()
        for r in self.requests:
            total.add(r)
        return total


_captures: list[Capture] = []


_captures_lock = threading.Lock()


@contextmanager
def capture() -> Iterator[Capture]:
    """Record every request sent (by any thread) while the block runs.

    Example::

        with dynorm.capture() as c:
            list(Product.objects.by_brand("3"))
        assert c.operations == ["Query"]

    Yields:
        a :class:`Capture` whose ``requests`` fill in as requests are sent.
    """
    cap = Capture()
    with _captures_lock:
        _captures.append(cap)
    try:
        yield cap
    finally:
        with _captures_lock:
            _captures.remove(cap)


def _consumed(consumed: Any) -> tuple[float, float]:
    if not consumed:
        return 0.0, 0.0
    if isinstance(consumed, list):
        r = w = 0.0
        for c in consumed:
            cr, cw = _consumed(c)
            r += cr
            w += cw
        return r, w
    read = consumed.get("ReadCapacityUnits")
    write = consumed.get("WriteCapacityUnits")
    if read is None and write is None:
        total = float(consumed.get("CapacityUnits", 0.0))
        return total, 0.0
    return float(read or 0.0), float(write or 0.0)


#: The operations that change items: their consumed capacity is write capacity, and one that gets
#: no answer may have been applied.
WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})


def record(operation: str, params: dict[str, Any], response: dict[str, Any] | None,
           error: str | None, stats: Stats | None) -> RequestRecord:
    """Record one request: add its figures to ``stats`` and to every open :class:`Capture`.

    Args:
        operation, params: the request as sent.
        response: its response, or ``None`` when it failed.
        error: the error code when it failed, else ``None``.
        stats: a :class:`Stats` to add its figures to, or ``None``.

    Returns:
        the :class:`RequestRecord`.
    """
    rec = RequestRecord(operation, params.get("TableName") or tables_of(params) or None, params.get("IndexName"),
                        params, error=error)
    if response is not None:
        if operation == "GetItem":
            rec.items = 1 if "Item" in response else 0
        else:
            rec.items = int(response.get("Count", 0))
            rec.scanned = int(response.get("ScannedCount", 0))
        r, w = _consumed(response.get("ConsumedCapacity"))
        if operation in WRITE_OPERATIONS and not w:
            r, w = 0.0, r
        rec.read_capacity, rec.write_capacity = r, w
    if stats is not None:
        stats.add(rec)
    if _captures:
        with _captures_lock:
            for cap in _captures:
                cap.requests.append(rec)
    return rec


def table_names(params: dict[str, Any]) -> list[str]:
    """The table names a request addresses (batch and transaction requests name several)."""
    if "TableName" in params:
        return [str(params["TableName"])]
    names: dict[str, None] = {}
    for name in params.get("RequestItems") or {}:
        names[str(name)] = None
    for action in params.get("TransactItems") or []:
        for body in action.values():
            if isinstance(body, dict) and "TableName" in body:
                names[str(body["TableName"])] = None
    return list(names)


def tables_of(params: dict[str, Any]) -> str:
    """Name the table(s) a request is about, for messages: ``TableName``, or the tables of a batch
    (``RequestItems``) or transaction (``TransactItems``); ``""`` when none."""
    return ", ".join(table_names(params))
