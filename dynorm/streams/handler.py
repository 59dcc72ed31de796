"""A Lambda handler helper: call a function per change, report partial batch failures.

With ``ReportBatchItemFailures`` on the event source mapping, AWS Lambda retries a batch from the
lowest sequence number the handler returns in ``batchItemFailures``; records before it count as
processed. :func:`handler` calls the wrapped function for each change in order and, at the first
one that raises, stops and reports that change's first record and every record after it, so no
change is skipped and none after the failure is applied before it (ordered processing per item).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping

from .changes import Change, changes
from .records import records_of

if TYPE_CHECKING:  # pragma: no cover
    from ..tables import Table

__all__ = ["handler", "StreamHandler"]

logger = logging.getLogger("dynorm.streams")


def _failures(records: list[Mapping[str, Any]], start: int) -> dict[str, list[dict[str, str]]]:
    """``batchItemFailures`` naming every record from position ``start`` on (by sequence number)."""
    seqs = [r.get("dynamodb", {}).get("SequenceNumber") for r in records[start:]]
    return {"batchItemFailures": [{"itemIdentifier": s} for s in seqs if s is not None]}


class StreamHandler:
    """A Lambda handler made by :func:`handler`: ``handler(event, context)`` -> ``{"batchItemFailures": [...]}``.

    Attributes:
        fn: the function called with each :class:`~dynorm.streams.Change` (``def`` or ``async def``).
    """

    def __init__(self, fn: Callable[[Change], Any], table: type[Table] | None, moves: str,
                 include_internal: bool) -> None:
        self.fn = fn
        self.options: dict[str, Any] = {"table": table, "moves": moves, "include_internal": include_internal}
        functools.update_wrapper(self, fn)

    @property
    def is_async(self) -> bool:
        """Whether the wrapped function is a coroutine function: ``async def``, or an object whose
        ``__call__`` is ``async def``."""
        fn = self.fn
        return inspect.iscoroutinefunction(fn) or (
            not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__))

    def __call__(self, event: Any, context: Any = None) -> dict[str, list[dict[str, str]]]:
        """Handle one Lambda batch: call the function per change (an ``async def`` one, or an object
        with ``async def __call__``, on a new event loop; an awaitable a plain function returns is
        run on one new event loop for the batch, so a change counts as handled only once it ran).

        Returns:
            ``{"batchItemFailures": [{"itemIdentifier": sequence number}, ...]}``: empty when every
            change was handled; else the first failing change's first record and every record after it.

        Raises:
            ConfigurationError: the event is not a DynamoDB Streams batch, or its table is not declared
                (the whole batch fails, so Lambda retries it once the configuration is fixed).
        """
        if self.is_async:
            return asyncio.run(self.ahandle(event, context))
        records = records_of(event)
        loop: asyncio.AbstractEventLoop | None = None
        try:
            for change in changes(records, **self.options):
                try:
                    result = self.fn(change)
                    if inspect.isawaitable(result):
                        # a plain function returning an awaitable: it is the handling, run it (on one
                        # loop for the batch); never report success for a change not handled
                        if loop is None:
                            loop = asyncio.new_event_loop()
                        loop.run_until_complete(_awaited(result))
                except Exception:
                    logger.exception("dynorm.streams: handling %r failed; reporting it and the records after it",
                                     change)
                    return _failures(records, min(change._positions))
        finally:
            if loop is not None:
                loop.close()
        return {"batchItemFailures": []}

    async def ahandle(self, event: Any, context: Any = None) -> dict[str, list[dict[str, str]]]:
        """:meth:`__call__` on the running event loop: each change awaited in order (``async def`` or not)."""
        records = records_of(event)
        for change in changes(records, **self.options):
            try:
                result = self.fn(change)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                logger.exception("dynorm.streams: handling %r failed; reporting it and the records after it", change)
                return _failures(records, min(change._positions))
        return {"batchItemFailures": []}


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def handler(fn: Callable[[Change], Any] | Callable[[Change], Awaitable[Any]] | None = None, *,
            table: type[Table] | None = None, moves: str = "report",
            include_internal: bool = False) -> Any:
    """Make an AWS Lambda handler for a DynamoDB stream from a function of one change.

    Use it bare (``@dynorm.streams.handler``) or with the options of :func:`~dynorm.streams.changes`
    (``@dynorm.streams.handler(table=Shop, moves="hide")``). The function may be ``async def`` (or
    an object with ``async def __call__``, or a function returning an awaitable, which is awaited): the
    handler then runs it on a new event loop per batch (``asyncio.run``), and ``handler.ahandle(event)``
    awaits it on a running loop. No request is sent by the handler itself.

    Args:
        fn: called with each :class:`~dynorm.streams.Change`, in the batch's order.
        table, moves, include_internal: as for :func:`~dynorm.streams.changes`.

    Returns:
        a :class:`StreamHandler`: ``handler(event, context)`` returns
        ``{"batchItemFailures": [...]}`` for Lambda's ``ReportBatchItemFailures``.
    """
    def wrap(f: Callable[[Change], Any]) -> StreamHandler:
        return StreamHandler(f, table, moves, include_internal)

    return wrap(fn) if fn is not None else wrap
