"""Retry policy: dynorm's one backoff, and no retry at all once a run is asked to stop.

Throttled requests as a whole are retried inside botocore (standard mode,
``settings.max_attempts``); :class:`RetryPolicy` paces dynorm's own loops (unprocessed batch
items, ``update_with_retry``); :func:`no_retries_after` cuts botocore's retries after a stop.
"""

from __future__ import annotations

import random
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from .._value import FrozenValue
from .clients import register_hook, unregister_hook

__all__ = ["RetryPolicy", "no_retries_after", "stopping"]


class RetryPolicy(FrozenValue):
    """The one backoff policy of dynorm's own retry loops (unprocessed batch items and keys,
    ``update_with_retry``): sleep ``uniform(0, min(max_delay, base_delay * 2**attempt))``.

    Throttled requests as a whole are retried inside botocore (standard mode), not here.

    Attributes:
        max_attempts: tries at most (the first one included).
        base_delay, max_delay: seconds.
    """

    max_attempts: int
    base_delay: float
    max_delay: float

    def __init__(self, max_attempts: int = 8, base_delay: float = 0.05, max_delay: float = 2.0) -> None:
        self.__dict__.update(max_attempts=max_attempts, base_delay=base_delay, max_delay=max_delay)

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based): full jitter."""
        return random.uniform(0, min(self.max_delay, self.base_delay * 2 ** attempt))


# -- stopping: once a run is asked to stop, no request is retried ------------------------------
#: of the active no_retries_after() blocks: each block's "stopping?" test
_stop_events: list[Callable[[], bool]] = []

#: error codes botocore retries as throttling (with backoff); after a stop, the attempt is the last
_THROTTLE_CODES = frozenset({"ThrottlingException", "Throttling", "ProvisionedThroughputExceededException",
                             "RequestLimitExceeded", "LimitExceededException", "TransactionInProgressException",
                             "TooManyRequestsException"})


def stopping() -> bool:
    """Whether a :func:`no_retries_after` block's stop event is set (a request failing now is not retried)."""
    return any(test() for test in _stop_events)


@contextmanager
def no_retries_after(stop: threading.Event, also: Callable[[], bool] | None = None) -> Iterator[None]:
    """Inside the block, once ``stop`` is set (or ``also()`` is true), no request of this process is
    retried, in any thread.

    A run asked to stop (SIGINT, a lost lock lease) must not wait out botocore's retries of requests
    to an endpoint that stopped answering (``max_attempts`` x ``read_timeout`` each, plus backoff):
    from the stop on, an attempt that failed (no answer, a 5xx, a throttle) is the last one and
    raises what the last attempt would (:class:`ServiceError` from :func:`call`, saying it was not
    retried). A request that succeeds, or is refused with a definite answer (a failed condition),
    is unaffected; a request already in flight still ends within ``connection.read_timeout``.

    Args:
        stop: the run's stop event.
        also: a further test, e.g. ``lambda: not ledger.holds()``: a migration whose lock lease has
            (nearly) run out must not have botocore retry its writes past the lease's end, when another
            run may take the lock.

    Uses botocore's ``needs-retry`` event (a hook added with :func:`register_hook`, removed on exit);
    it sends no request itself.
    """
    def stopping() -> bool:
        return stop.is_set() or (also is not None and also())

    def last_attempt(response: Any = None, caught_exception: BaseException | None = None, operation: Any = None,
                     **kwargs: Any) -> None:
        if not stopping():
            return None
        if caught_exception is not None:
            raise caught_exception  # what botocore raises after its last attempt
        if response is not None:
            http, parsed = response
            code = (parsed or {}).get("Error", {}).get("Code", "")
            if http.status_code >= 500 or http.status_code == 429 or code in _THROTTLE_CODES:
                from botocore.exceptions import ClientError

                raise ClientError(parsed, operation.name if operation is not None else "")
        return None

    _stop_events.append(stopping)
    register_hook("needs-retry.dynamodb", last_attempt)
    try:
        yield
    finally:
        unregister_hook("needs-retry.dynamodb", last_attempt)
        _stop_events.remove(stopping)
