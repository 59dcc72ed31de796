"""Paging: the one loop over LastEvaluatedKey (:class:`Pager`), as steps and as sync/asyncio iterators.

Querysets, ``count()``, the test plugin and the migration engine page through it.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Callable, Iterator

from .records import Stats
from .steps import Emit, Send, Steps, astream, stream

__all__ = ["Pager", "page_steps", "paginate", "apaginate"]


class Pager:
    """The one loop over LastEvaluatedKey, without I/O: the next request, given the last response.

    :func:`paginate`, :func:`apaginate` and the queryset pipeline drive it. The first request
    is ``params`` exactly as given (plus ``ExclusiveStartKey`` when ``start_key`` is given);
    each later request changes only ``ExclusiveStartKey`` and, when ``next_limit`` is given,
    ``Limit``.

    Args:
        params: the request parameters of the first page (not modified).
        start_key: the ExclusiveStartKey of the first request (a resumed cursor), or ``None``.
        next_limit: called with the number of the request about to be sent (1 for the
            second) to give its ``Limit`` (``None`` drops ``Limit``).
    """

    def __init__(self, params: dict[str, Any], start_key: dict[str, Any] | None = None,
                 next_limit: Callable[[int], int | None] | None = None) -> None:
        self.request: dict[str, Any] | None = dict(params)
        if start_key:
            self.request["ExclusiveStartKey"] = start_key
        self.sent = 0
        self.next_limit = next_limit

    def got(self, response: dict[str, Any]) -> None:
        """Take the response to ``self.request``; ``self.request`` becomes the next one, or ``None``."""
        self.sent += 1
        key = response.get("LastEvaluatedKey")
        if not key or self.request is None:
            self.request = None
            return
        request = dict(self.request)
        request["ExclusiveStartKey"] = key
        if self.next_limit is not None:
            limit = self.next_limit(self.sent)
            if limit is None:
                request.pop("Limit", None)
            else:
                request["Limit"] = limit
        self.request = request


def page_steps(operation: str, params: dict[str, Any], *, stats: Stats | None = None,
               start_key: dict[str, Any] | None = None,
               next_limit: Callable[[int], int | None] | None = None, entities: tuple[Any, ...] = ()) -> Steps:
    """The steps of :func:`paginate`: a :class:`Send` per page (for ``entities``), an :class:`Emit` of each response."""
    pager = Pager(params, start_key, next_limit)
    while pager.request is not None:
        response = yield Send(operation, pager.request, stats, entities)
        yield Emit(response)
        pager.got(response)


def paginate(operation: str, params: dict[str, Any], *, stats: Stats | None = None,
             start_key: dict[str, Any] | None = None,
             next_limit: Callable[[int], int | None] | None = None) -> Iterator[dict[str, Any]]:
    """Send ``operation`` page after page, following LastEvaluatedKey; yield each response.

    The one loop over LastEvaluatedKey (:class:`Pager`): querysets, ``count()`` and the
    migration engine page through it. The first request is ``params`` exactly as given (plus
    ``ExclusiveStartKey`` when ``start_key`` is given); each later request changes only
    ``ExclusiveStartKey`` and, when ``next_limit`` is given, ``Limit``. Stop early by
    leaving the loop (closing the generator): no further request is sent.
    :func:`apaginate` is the same for asyncio.

    Args:
        operation: ``"Query"`` or ``"Scan"``.
        params: the request parameters of the first page (not modified).
        stats: a :class:`Stats` to add each request's figures to.
        start_key: the ExclusiveStartKey of the first request (a resumed cursor), or ``None``.
        next_limit: called with the number of the request about to be sent (1 for the
            second) to give its ``Limit`` (``None`` drops ``Limit``).

    Yields:
        each response dict (``Items``/``Count``/``LastEvaluatedKey``...), in order.

    Raises:
        the errors of :func:`call`.
    """
    return stream(page_steps(operation, params, stats=stats, start_key=start_key, next_limit=next_limit))


def apaginate(operation: str, params: dict[str, Any], *, stats: Stats | None = None,
              start_key: dict[str, Any] | None = None,
              next_limit: Callable[[int], int | None] | None = None) -> AsyncIterator[dict[str, Any]]:
    """:func:`paginate` for asyncio: ``async for response in apaginate(...)`` (same requests)."""
    return astream(page_steps(operation, params, stats=stats, start_key=start_key, next_limit=next_limit))
