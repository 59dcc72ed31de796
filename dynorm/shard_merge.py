"""The fan-out over the buckets of a write-sharded GSI: one pager per bucket, merged in sort-key order.

A Query of a sharded index that does not give the bucket's source is one Query per bucket
(:attr:`dynorm.plan.Plan.fanout`). :class:`ShardMerge` pages through every bucket with the one
pager (:class:`dynorm.backend.Pager`), sending the pages the merge needs next together (a
:class:`~dynorm.backend.SendAll` step: threads for the sync driver, ``asyncio.gather`` for
asyncio), and hands out the items in the order DynamoDB would give them if the buckets were one
partition: by the index's sort key (byte order for S and B, numeric for N), ties by bucket number,
each bucket's items in the order DynamoDB returned them; ``ScanIndexForward=false`` reverses all
of it. A bucket's next page is read only once the merge has used every item of its last one, so
a ``Limit`` stops early instead of reading every bucket to the end.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any, Callable

from . import backend
from .shards import sort_value

__all__ = ["ShardMerge", "DONE"]

#: A bucket's position in a cursor when it has nothing more to read.
DONE = "done"


class _Desc:
    """Reverses the order of a sort value (a reversed query's heap)."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __lt__(self, other: _Desc) -> bool:
        return bool(other.v < self.v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.v == other.v


class ShardMerge:
    """The k-way merge of the pages of every bucket of a fan-out, as steps.

    Args:
        requests: each bucket's first request (``Plan.fanout``), in bucket order.
        sort_attr: the index's sort-key attribute (``None``: the index has none; buckets in order).
        starts: per bucket, where to start: ``None`` (the beginning), an ExclusiveStartKey, or
            :data:`DONE` (nothing to read). ``None``: every bucket from the beginning.
        stats, entities: as for :class:`~dynorm.backend.Send`.
        next_limit: the ``Limit`` of a bucket's later requests, given how many it has sent
            (as for :class:`~dynorm.backend.Pager`).

    Attributes:
        counts: the ``Count`` of every response (``count()`` sums them).
    """

    def __init__(self, requests: list[dict[str, Any]] | tuple[dict[str, Any], ...], sort_attr: str | None, *,
                 starts: list[Any] | None = None, stats: backend.Stats | None = None,
                 entities: tuple[Any, ...] = (), next_limit: Callable[[int], int | None] | None = None) -> None:
        starts = starts or [None] * len(requests)
        self.pagers = []
        for params, start in zip(requests, starts):
            pager = backend.Pager(params, start if isinstance(start, dict) else None, next_limit)
            if start == DONE:
                pager.request = None
            self.pagers.append(pager)
        self.buffers: list[deque[dict[str, Any]]] = [deque() for _ in requests]
        self.sort_attr = sort_attr
        self.descending = bool(requests) and requests[0].get("ScanIndexForward") is False
        self.stats, self.entities = stats, entities
        self.counts: list[int] = []

    def finished(self, bucket: int) -> bool:
        """True when every item of ``bucket`` has been handed out and it has no page left to read."""
        return not self.buffers[bucket] and self.pagers[bucket].request is None

    def _key(self, bucket: int) -> Any:
        head = self.buffers[bucket][0]
        key = (sort_value(head.get(self.sort_attr)) if self.sort_attr else (0, b""), bucket)
        return _Desc(key) if self.descending else key

    def steps(self) -> backend.Steps:
        """Send the pages, merge: one :class:`~dynorm.backend.SendAll` per round of pages, then an
        ``Emit`` of the ``(bucket, raw item)`` pairs merged until a bucket needs its next page.

        Closing the steps (a window filled) sends nothing more.
        """
        n = len(self.pagers)
        while True:
            need = [b for b in range(n) if not self.buffers[b] and self.pagers[b].request is not None]
            if need:
                sends = [backend.Send("Query", self.pagers[b].request or {}, self.stats, self.entities)
                         for b in need]
                responses = yield backend.SendAll(sends)
                for b, resp in zip(need, responses):
                    self.pagers[b].got(resp)
                    self.buffers[b].extend(resp.get("Items", ()))
                    self.counts.append(int(resp.get("Count", 0)))
                continue  # a page a filter emptied: that bucket is read again before any merge
            heap = [(self._key(b), b) for b in range(n) if self.buffers[b]]
            if not heap:
                return
            heapq.heapify(heap)
            out: list[tuple[int, dict[str, Any]]] = []
            while heap:
                _, b = heapq.heappop(heap)
                out.append((b, self.buffers[b].popleft()))
                if self.buffers[b]:
                    heapq.heappush(heap, (self._key(b), b))
                elif self.pagers[b].request is not None:
                    break  # its next item may come before every other head: read its next page first
            yield backend.Emit(out)
