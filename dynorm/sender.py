"""Send one planned single-item write (beside :mod:`dynorm.batch` and :mod:`dynorm.transaction`).

The op comes from :mod:`dynorm.writes`; this module sends it through :func:`dynorm.backend.call`,
then lets the op apply its result to the instance, or maps a failed condition to the error the
user sees. A failed condition that proves an earlier attempt of the same request was applied
(botocore retried a request whose response was lost) is reported as the success it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import backend
from .exceptions import ConditionFailed

if TYPE_CHECKING:  # pragma: no cover
    from .models import Entity
    from .writes import WriteOp

__all__ = ["send", "asend", "send_steps"]


def send(op: WriteOp) -> Entity | None:
    """Send one planned write alone and apply it to its instance (see :func:`send_steps`)."""
    return backend.drive(send_steps(op))  # type: ignore[no-any-return]


async def asend(op: WriteOp) -> Entity | None:
    """:func:`send` for asyncio (the same steps, requests through :func:`dynorm.backend.acall`)."""
    return await backend.adrive(send_steps(op))  # type: ignore[no-any-return]


def send_steps(op: WriteOp) -> backend.Steps:
    """Send one planned write alone and apply it to its instance.

    Issues PutItem, UpdateItem or DeleteItem (as planned by :mod:`dynorm.writes`).

    Returns:
        the instance written (for an update without instance: the item as written), or ``None``.

    Raises:
        AlreadyExists, StaleWrite, ConditionFailed, DoesNotExist: the write's condition did not
            hold; nothing was written (when botocore had retried the request, the message says
            that its lost first attempt may have been applied and since been changed).
        ServiceError: DynamoDB refused the request or could not be reached.
    """
    operation, params = op.request()
    try:
        response = yield backend.Send(operation, params)
    except ConditionFailed as exc:
        if op.applied_earlier(exc):
            # the first attempt was applied; the item returned is the state it left (ALL_OLD of
            # the retry = ALL_NEW of the first attempt)
            return op.applied(exc.item if op.returns_item else None)
        error = op.error(exc)
        if getattr(exc, "retry_attempts", 0):
            # the truth we can tell: a lost first attempt may have been applied and then changed
            error.args = (f"{error.args[0]} (botocore retried this request after a lost response; its first "
                          "attempt may have been applied before the change that made the retry fail: re-read "
                          "the item)",)
        raise error from exc
    return op.applied(response.get("Attributes"))
