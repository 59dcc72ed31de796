"""``bulk_create``/``bulk_delete`` of an entity with unique constraints: one TransactWriteItems per item.

BatchWriteItem takes no condition, so it cannot claim a unique value: each item goes as its own
TransactWriteItems (the entity's Put or Delete plus one action per sentinel, under a
ClientRequestToken). Cost, against BatchWriteItem's 25 items a request: one request per item, and
transactional writes are billed double (2 WCU per KB of the item, 2 per sentinel); a delete by key
reads the unique values first (one consistent GetItem, 0.5 RCU). ``bulk_update`` already writes
through transactions and needs nothing here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from . import backend
from .exceptions import BatchIncomplete, DynormError, IntegrityError, UniqueIncomplete, ValidationError
from .sender import send_checked_steps
from .unique_reads import know_unique_steps, stored_unique_steps
from .writes import WriteOp, is_instance, prepare_delete, prepare_put

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["create_each_steps", "delete_each_steps"]


def create_each_steps(model: type[EntityLike], objs: list[EntityLike]) -> backend.Steps:
    """Create each of ``objs`` as ``create()`` does (refusing to overwrite), one TransactWriteItems each.

    Every item is planned (and validated) before the first request; two items of the batch claiming
    one value are refused then.

    Returns:
        ``objs``.

    Raises:
        ValidationError, IntegrityError: bad input, or two items claiming one value (before any request).
        UniqueIncomplete: an item's value is taken (both a BatchIncomplete and an IntegrityError);
            ``.written`` lists the items created before it (not undone: each item is its own
            transaction), ``.unprocessed`` it and the ones after.
        BatchIncomplete: an item was refused otherwise (it exists: the cause is AlreadyExists);
            ``.written`` and ``.unprocessed`` as above.
    """
    ops: list[WriteOp] = []
    claimed: dict[tuple[str, str, str], int] = {}
    for i, obj in enumerate(objs):
        if type(obj) is not model:
            raise ValidationError(f"bulk_create on {model.__name__} got a {type(obj).__name__}.", entity=model.__name__)
        op = prepare_put(obj, create=True, fresh=True)
        for s in op.sentinels:
            if s.identity in claimed:
                name = getattr(getattr(s, "constraint", None), "name", None)
                values = getattr(s, "values", {})
                raise IntegrityError(
                    f"bulk_create on {model.__name__}: items {claimed[s.identity]} and {i} both hold {values!r} "
                    f"(unique constraint {name!r}); nothing was written.",
                    entity=model.__name__, constraint=name, values=values)
            claimed[s.identity] = i
        ops.append(op)
    yield from _send_each(model, "bulk_create", objs, ops)
    return objs


def delete_each_steps(model: type[EntityLike], targets: list[EntityLike | Mapping[str, Any]]) -> backend.Steps:
    """Delete each target (instance or key dict) with its sentinels, one TransactWriteItems each
    (unconditionally, as ``bulk_delete`` does, apart from the unique values read).

    Returns:
        the number of items deleted (existing or not).

    Raises:
        BatchIncomplete: a delete was refused; ``.written`` lists the targets deleted before it.
    """
    ops: list[WriteOp] = []
    for t in targets:
        if is_instance(t):
            yield from know_unique_steps(t)  # type: ignore[arg-type]
            ops.append(prepare_delete(model, t))
        else:
            stored = yield from stored_unique_steps(model, t)
            ops.append(prepare_delete(model, t, stored=stored))
    yield from _send_each(model, "bulk_delete", targets, ops)
    return len(ops)


def _send_each(model: type[EntityLike], verb: str, objs: list[Any], ops: list[WriteOp]) -> backend.Steps:
    for i, op in enumerate(ops):
        try:
            refused = yield from send_checked_steps(op, [])
            if refused is not None:
                raise refused.error() from refused.cause
        except IntegrityError as exc:
            raise UniqueIncomplete(
                f"{verb}: {i} of {len(ops)} {model.__name__} item(s) went in (listed in .written; each item is its "
                f"own transaction, so the batch is not atomic across items); item {i} was refused ({exc}) and the "
                "rest were not sent (.unprocessed).", objs[i:], written=objs[:i], cause=exc) from exc
        except DynormError as exc:
            raise BatchIncomplete(
                f"{verb}: {i} of {len(ops)} {model.__name__} item(s) went in (listed in .written); item {i} was "
                f"refused ({exc}) and the rest were not sent (.unprocessed).", objs[i:], written=objs[:i]) from exc
