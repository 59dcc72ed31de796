"""Send one planned single-item write (beside :mod:`dynorm.batch` and :mod:`dynorm.transaction`).

The op comes from :mod:`dynorm.writes`; this module sends it through :func:`dynorm.backend.call`,
then lets the op apply its result to the instance, or maps a failed condition to the error the
user sees. A failed condition that proves an earlier attempt of the same request was applied
(botocore retried a request whose response was lost) is reported as the success it was.

A non-idempotent op that no version condition protects (``op.once``: ``F("n") + 1``,
``append()``) is sent as a one-action TransactWriteItems with a ``ClientRequestToken``: DynamoDB
applies a token at most once within 10 minutes and botocore's retry resends the same token, so
the write is applied once even when another write lands between a lost attempt and its retry.
A transaction returns no values, and none is read back: the fields whose new values the table
computed (``F()`` results; for a write by key, every field it did not set) are deferred on the
instance returned and loaded with one consistent GetItem when first read (:mod:`dynorm._deferred`),
so the write is one request (2 WCU per KB: a transactional write) and costs no read unless a
field is read.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from . import backend
from ._value import Value
from .exceptions import ConditionFailed, DynormError, ServiceError, TransactionCanceled

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike
    from .writes import WriteOp

__all__ = ["send", "asend", "send_steps", "send_create_steps", "send_checked_steps", "Refused"]

#: Set on an error raised after botocore retried a request whose first attempt may have been applied.
MAYBE_APPLIED = "maybe_applied"


def send(op: WriteOp) -> EntityLike | None:
    """Send one planned write alone and apply it to its instance (see :func:`send_steps`)."""
    return backend.drive(send_steps(op))  # type: ignore[no-any-return]


async def asend(op: WriteOp) -> EntityLike | None:
    """:func:`send` for asyncio (the same steps, requests through :func:`dynorm.backend.acall`)."""
    return await backend.adrive(send_steps(op))  # type: ignore[no-any-return]


def send_steps(op: WriteOp) -> backend.Steps:
    """Send one planned write alone and apply it to its instance.

    Issues PutItem, UpdateItem or DeleteItem (as planned by :mod:`dynorm.writes`); an op marked
    ``once`` goes as a one-action TransactWriteItems (``ClientRequestToken``) and nothing else:
    the fields it computed in the table are deferred on the instance (loaded on first read).

    Returns:
        the instance written (for an update without instance: the item as written; after an
        ``op.once`` write, an instance holding the key and the values set, its other fields
        deferred), or ``None``.

    Raises:
        AlreadyExists, StaleWrite, ConditionFailed, DoesNotExist: the write's condition did not
            hold; nothing was written (when botocore had retried the request, the message says
            that its lost first attempt may have been applied and since been changed, and the
            error's ``maybe_applied`` attribute is True).
        ValidationError: DynamoDB refused the update for the item as stored (a document path through a
            missing map or list, an ``F()`` source missing), naming entity, field and path; its
            ``maybe_applied`` is True (and the message says so) when botocore had retried an UpdateItem
            whose first attempt may have been applied, else False (nothing was written).
        ServiceError: DynamoDB refused the request or could not be reached.
    """
    try:
        if op.sentinels:  # unique constraints: the write and its sentinels in one TransactWriteItems
            return (yield from _send_with_sentinels_steps(op))
        if op.once:
            return (yield from _send_once_steps(op))
        return (yield from _send_alone_steps(op))
    except ServiceError as exc:  # DynamoDB refused the update for the item as stored (a parent, a source missing)
        from .write_update import update_refused  # the write path is imported on first write

        # a retried UpdateItem may have been applied first; a TransactWriteItems' token makes a retry of
        # an applied attempt succeed, so its refusal means nothing was written
        retried = exc.operation == "UpdateItem" and getattr(exc, "retry_attempts", 0) > 0
        refused = update_refused([op], exc.code, str(exc), retried=retried)
        if refused is None:
            raise
        raise refused from exc


def _send_with_sentinels_steps(op: WriteOp) -> backend.Steps:
    """Send ``op`` with its unique-constraint sentinels in one TransactWriteItems (see :func:`send_steps`)."""
    refused = yield from send_checked_steps(op, [])
    released = [a for a in refused.failed if a.kind == "Delete" and a is not op] if refused else []
    if refused is not None and released and len(released) == len(refused.failed):
        # the old value's sentinel is another item's (a duplicate stored before the constraint was
        # added): this item, pinned at that value, never held it, so there is nothing to release
        op.sentinels = [a for a in op.sentinels if a not in released]
        refused = yield from send_checked_steps(op, [], attempt_token=f"{op.token}-r")
    if refused is not None:
        raise refused.error() from refused.cause
    return op.instance


def _send_alone_steps(op: WriteOp) -> backend.Steps:
    """Send ``op`` as one PutItem/UpdateItem/DeleteItem and apply it to its instance (see :func:`send_steps`)."""
    operation, params = op.request()
    try:
        response = yield backend.Send(operation, params, entities=(op.model,))
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
            setattr(error, MAYBE_APPLIED, True)
        raise error from exc
    return op.applied(response.get("Attributes"))


def _send_once_steps(op: WriteOp) -> backend.Steps:
    policy = backend.RetryPolicy()
    for attempt in range(1, policy.max_attempts + 1):
        # a cancellation that arrived means nothing was applied under that token, so a
        # transaction conflict (another transaction on the item) is sent again under a new one
        params = {"TransactItems": [op.transact_item()], "ClientRequestToken": f"{op.token}-{attempt}",
                  "ReturnConsumedCapacity": "TOTAL"}
        try:
            yield backend.Send("TransactWriteItems", params, entities=(op.model,))
            break
        except TransactionCanceled as exc:
            raw = exc.reasons[0] if exc.reasons else {}
            if raw.get("code") == "ConditionalCheckFailed":
                raise op.error(None, raw_item=raw.get("item")) from exc
            if raw.get("code") != "TransactionConflict" or attempt == policy.max_attempts:
                raise
            yield backend.Sleep(policy.delay(attempt))
    # no read-back: what the write computed in the table (the F() results, and for a write by key
    # every field it did not set) is deferred, loaded with one consistent GetItem on first read
    return op.applied_unread() if op.returns_item else op.applied(None)


def send_create_steps(op: WriteOp, checks: list[WriteOp]) -> backend.Steps:
    """Send a creating Put that must find no item under older key versions (:func:`send_checked_steps`).

    Returns:
        the instance written.

    Raises:
        AlreadyExists: an item exists under the current key or under an older one (the message
            names the version); nothing was written.
        TransactionCanceled: cancelled for another reason, after the retries of a conflict.
    """
    refused = yield from send_checked_steps(op, checks)
    if refused is not None:
        raise refused.error() from refused.cause
    return op.instance


class Refused(Value):
    """What DynamoDB said when it cancelled a write sent with its checks (:func:`send_checked_steps`).

    Attributes:
        op: the write; failed: the actions whose condition failed (the write and/or its checks),
            in request order; cause: the cancellation, with each action's reason.
    """

    op: WriteOp
    failed: list[WriteOp]
    cause: TransactionCanceled

    def __init__(self, op: WriteOp, failed: list[WriteOp], cause: TransactionCanceled) -> None:
        self.op = op
        self.failed = failed
        self.cause = cause

    @property
    def older_item(self) -> bool:
        """True when a check found an item stored under an older key version."""
        return any(a.older_version is not None for a in self.failed)

    def error(self) -> DynormError:
        """The error of the first failed action (the write's own, with the item it found; a sentinel's
        :class:`~dynorm.exceptions.IntegrityError` naming the value taken)."""
        first = self.failed[0]
        return first.error(None, raw_item=self.cause.reasons[0].get("item") if first is self.op else None)


def send_checked_steps(op: WriteOp, checks: list[WriteOp], attempt_token: str | None = None) -> backend.Steps:
    """Send a write that must find no item under older key versions; say whether it went.

    During a key-version rollout (``Meta.read_versions``) an item may exist only under an older
    key: reads find it there, so a new item under the current key would hide it (its data lost
    to every read). One TransactWriteItems: the write (a conditional Put, or the UpdateItem of a
    new unversioned instance) plus the ``ConditionCheck`` ``attribute_not_exists`` per older key
    (:func:`dynorm.writes.prepare_create_checks`, :func:`~dynorm.writes.prepare_older_checks`),
    under a ``ClientRequestToken`` (a retried request is applied once). Billed as transactional
    writes: twice the write's WCU (2 for a 1 KB item), plus 2 WCU per check. A transaction
    conflict is sent again (a new token: nothing was applied under the old one).

    Args:
        attempt_token: the ``ClientRequestToken`` prefix (default: the op's revision token), for a
            second sending whose actions differ from the first's.

    Returns:
        ``None`` when it was applied (and applied to the instance), else a :class:`Refused`
        naming the actions whose condition failed; nothing was written then.

    Raises:
        TransactionCanceled: cancelled for another reason, after the retries of a conflict.
    """
    actions = (op, *checks, *op.sentinels)
    policy = backend.RetryPolicy()
    # a Delete stores no revision token: one for this call; a second sending of other actions: its own
    token = attempt_token or op.token or uuid.uuid4().hex[:16]
    for attempt in range(1, policy.max_attempts + 1):
        params = {"TransactItems": [a.transact_item() for a in actions],
                  "ClientRequestToken": f"{token}-{attempt}", "ReturnConsumedCapacity": "TOTAL"}
        try:
            yield backend.Send("TransactWriteItems", params, entities=tuple(dict.fromkeys(a.model for a in actions)))
            break
        except TransactionCanceled as exc:
            codes = [r.get("code") for r in exc.reasons]
            failed = [a for a, code in zip(actions, codes) if code == "ConditionalCheckFailed"]
            if failed:
                return Refused(op, failed, exc)
            if "TransactionConflict" not in codes or attempt == policy.max_attempts:
                raise
            yield backend.Sleep(policy.delay(attempt))
    op.applied(None)
    return None
