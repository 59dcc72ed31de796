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

Resuming (a ``page()`` cursor) behaves like one Query resumed from its LastEvaluatedKey: every
bucket is read again from the last item the merge used from it (an exhausted bucket too: items
may have been written there since), and whatever sorts at or before the merge's position — the
last of those items in merge order, i.e. the last item the previous page returned — is skipped.
An item written between pages is thus returned when it sorts after the previous page's last item,
whichever bucket it lands in, and never when it sorts before (pages stay in order).
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any, Callable

from . import backend
from .shards import sort_value

__all__ = ["ShardMerge"]


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
        starts: per bucket, where to resume: ``None`` (its beginning) or the key (index and table
            key attributes) of the last item the merge used from it, its ExclusiveStartKey.
            ``None``: every bucket from the beginning. When any is a key, items that sort at or
            before the last of them in merge order are skipped (see the module's docstring).
        stats, entities: as for :class:`~dynorm.backend.Send`.
        next_limit: the ``Limit`` of a bucket's later requests, given how many it has sent
            (as for :class:`~dynorm.backend.Pager`).

    Attributes:
        counts: the ``Count`` of every response (``count()`` sums them).
        after, after_bucket: the merge position resumed from and its bucket (``None``: the beginning).
    """

    def __init__(self, requests: list[dict[str, Any]] | tuple[dict[str, Any], ...], sort_attr: str | None, *,
                 starts: list[dict[str, Any] | None] | None = None, stats: backend.Stats | None = None,
                 entities: tuple[Any, ...] = (), next_limit: Callable[[int], int | None] | None = None) -> None:
        starts = starts or [None] * len(requests)
        self.pagers = [backend.Pager(params, start, next_limit) for params, start in zip(requests, starts)]
        self.buffers: list[deque[dict[str, Any]]] = [deque() for _ in requests]
        self.sort_attr = sort_attr
        self.descending = bool(requests) and requests[0].get("ScanIndexForward") is False
        self.stats, self.entities = stats, entities
        self.counts: list[int] = []
        self.after: Any = None
        self.after_bucket: int | None = None  # resumed exactly by its ExclusiveStartKey: ties after it kept
        for b, start in enumerate(starts):
            if start is not None and (self.after is None or self.after < self.key(start, b)):
                self.after, self.after_bucket = self.key(start, b), b

    def finished(self, bucket: int) -> bool:
        """True when every item of ``bucket`` has been handed out and it has no page left to read."""
        return not self.buffers[bucket] and self.pagers[bucket].request is None

    def key(self, item: dict[str, Any], bucket: int) -> Any:
        """The merge-order key of ``item`` of ``bucket``: ``(sort value, bucket)``, reversed when descending.

        Items of one bucket with equal keys keep DynamoDB's order (the heap takes each bucket's head).
        """
        key = (sort_value(item.get(self.sort_attr)) if self.sort_attr else (0, b""), bucket)
        return _Desc(key) if self.descending else key

    def _key(self, bucket: int) -> Any:
        return self.key(self.buffers[bucket][0], bucket)

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
                    items = resp.get("Items", ())
                    if self.after is not None and b != self.after_bucket:
                        # written here since the last page, before its last item: skipped; another
                        # bucket's key never equals the position's, as it holds the bucket number
                        items = [it for it in items if self.after < self.key(it, b)]
                    self.buffers[b].extend(items)
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
