"""Deferred fields: the fields an instance does not hold the stored value of, loaded on first read.

A field is deferred when an ``only()`` read left it out, or when a write changed it with an
``F()`` expression whose result was not returned (a transaction returns no values): the
instance then never shows an older value beside a newer version. Reading the field loads every
deferred field of the instance with one GetItem, as Django's deferred fields do
(``obj._state.deferred = (names, loader)``; see :class:`dynorm._state.ModelState`).
"""

from __future__ import annotations

import threading
from typing import Any, Iterable

from . import backend
from .exceptions import SynchronousOnlyOperation

__all__ = ["DeferredLoader", "defer", "load_deferred", "load_deferred_steps", "load_needed_steps"]


class DeferredLoader:
    """``obj._state.deferred[1]``: loads the deferred fields (called: sync; ``.steps(obj)``: either driver).

    A module-level class, not a closure: the instance stays picklable.
    """

    def __init__(self, consistent: bool) -> None:
        self.consistent = consistent

    def __call__(self, obj: Any, name: str | None = None) -> None:
        refuse_in_event_loop(obj, name)
        _load_once(obj, name, self.consistent)

    def steps(self, obj: Any) -> backend.Steps:
        return load_deferred_steps(obj, self.consistent)


def load_deferred(obj: Any, consistent: bool) -> None:
    """Load the deferred fields of ``obj`` (see :func:`load_deferred_steps`)."""
    refuse_in_event_loop(obj, None)
    _load_once(obj, None, consistent)


#: Locks of the blocking loads, one per instance as far as a thread can tell: two threads reading a
#: deferred field of one instance for the first time send one GetItem, and the second waits for its
#: values (an instance holds no lock itself, so it stays picklable; two instances sharing a stripe
#: only wait for each other's GetItem). Reentrant: a load never waits for itself.
_LOCKS = tuple(threading.RLock() for _ in range(64))


def _load_once(obj: Any, name: str | None, consistent: bool) -> None:
    """Load the deferred fields of ``obj`` unless another thread did while this one waited."""
    with _LOCKS[id(obj) % len(_LOCKS)]:
        deferred = obj._state.deferred
        if deferred is None or (name is not None and (name not in deferred[0] or name in obj.attribute_values)):
            return  # loaded meanwhile (the marker is cleared only once the values are in place)
        backend.drive(load_deferred_steps(obj, consistent))


def refuse_in_event_loop(obj: Any, name: str | None) -> None:
    """Refuse to load deferred fields with a blocking GetItem inside a running asyncio event loop.

    Raises:
        SynchronousOnlyOperation: called from a coroutine (Django's ``SynchronousOnlyOperation``);
            nothing is sent.
    """
    import sys

    asyncio = sys.modules.get("asyncio")  # not imported: no event loop can be running
    if asyncio is None or asyncio._get_running_loop() is None:
        return
    unread = sorted(obj._state.deferred[0]) if obj._state.deferred else []
    field = name or (unread[0] if unread else "?")
    entity = obj._meta.entity
    listed = ", ".join(repr(n) for n in (unread or [field]))
    why = "only() deferred it" if obj._state.partial else "an F() expression changed it and its result was not returned"
    raise SynchronousOnlyOperation(
        f"{entity}.{field} was not read ({why}) and loading it now would send a blocking "
        f"GetItem inside the running event loop ({entity} {obj._describe_key()}). Load it first with "
        f"`await obj.arefresh_from_db(fields=[{listed}])`"
        + (", or do not defer it (leave it out of only())." if obj._state.partial else "."))


def load_needed_steps(obj: Any, names: Iterable[str]) -> backend.Steps:
    """Load ``obj``'s deferred fields first when a write needs one of ``names`` (as Django does).

    A field deferred and not assigned since holds no value the instance saw, so a write must not
    send it as ``None`` nor refuse it: its deferred fields are loaded with one GetItem, through
    whichever driver runs these steps (the asyncio driver awaits it, where reading the field would
    raise ``SynchronousOnlyOperation``). Nothing is sent when none of ``names`` is deferred.

    Args:
        obj: the instance; names: the fields the write needs (written, or its index keys' sources).

    Raises:
        Entity.DoesNotExist: the item is gone. UnreadableItems: the stored item cannot be decoded.
    """
    state = obj._state
    if state.deferred is None or not any(n in state.deferred[0] and n not in obj.attribute_values for n in names):
        return
    loader = state.deferred[1]
    steps = getattr(loader, "steps", None)
    if steps is not None:
        yield from steps(obj)
    else:  # a loader without steps (set by other code): it can only block
        loader(obj)


def load_deferred_steps(obj: Any, consistent: bool) -> backend.Steps:
    """Load the deferred fields of ``obj`` with one GetItem (Django's deferred fields).

    The fields stay marked deferred until their values are in place: a reader in another thread
    never sees "not deferred, not held" (``None``) while the GetItem is under way; it waits for
    the blocking load (:class:`DeferredLoader`) or, through the steps, loads them again. A load
    that fails leaves them deferred.

    Raises:
        Entity.DoesNotExist: the item is gone.
        UnreadableItems: the stored item cannot be decoded (names key and attribute).
    """
    unread, _loader = obj._state.deferred
    meta = obj._meta
    names = [meta.fields[n].attr_name for n in unread]
    tmeta = meta.table._meta
    params: dict[str, Any] = {"TableName": meta.table.table_name(), "Key": obj._primary_key_av(),
                              "ProjectionExpression": ", ".join(f"#d{i}" for i in range(len(names) + 1)),
                              "ExpressionAttributeNames": {f"#d{i}": a for i, a in
                                                           enumerate([tmeta.type_attribute, *names])},
                              "ReturnConsumedCapacity": "TOTAL"}
    if consistent:
        params["ConsistentRead"] = True
    # not loaded (no answer, throttled, refused, cancelled, gone, unreadable): the fields stay
    # deferred, so a later write never takes their absence for values (a whole save() would remove
    # the attributes)
    resp = yield backend.Send("GetItem", params, entities=(type(obj),))
    if "Item" not in resp:
        raise obj.DoesNotExist(f"{meta.entity} with {obj._describe_key()} no longer exists; its deferred "
                               f"fields ({', '.join(sorted(unread))}) cannot be loaded.")
    from .fields import decode_item

    loaded = decode_item(type(obj), {**obj._primary_key_av(), **resp["Item"]})  # the key names the item
    for name in unread:
        # a deferred field assigned since the read keeps the assigned value
        if name in loaded.attribute_values and name not in obj.attribute_values:
            obj.attribute_values[name] = loaded.attribute_values[name]
        if name in loaded._state.read_as:
            obj._state.read_as[name] = loaded._state.read_as[name]
        if name in loaded._state.unique_as:
            obj._state.unique_as[name] = loaded._state.unique_as[name]
    # the values are in place: only now the marker goes (fields deferred again meanwhile stay so)
    current = obj._state.deferred
    rest = frozenset(current[0]) - unread if current is not None else frozenset()
    obj._state.deferred = (rest, current[1]) if rest and current is not None else None
    if not rest:
        obj._state.partial = False


def defer(obj: Any, names: frozenset[str] | set[str]) -> None:
    """Mark ``names`` of ``obj`` deferred: their values are dropped and loaded (ConsistentRead) on first read.

    Used after a write changed them with an ``F()`` expression whose result did not come back:
    the instance must not keep the value from before the write (a later ``save()`` would write
    it back). Fields already deferred stay deferred.
    """
    if not names:
        return
    state = obj._state
    for name in names:
        obj.attribute_values.pop(name, None)
        state.read_as.pop(name, None)
    if state.deferred is not None:
        names = frozenset(state.deferred[0]) | frozenset(names)
    state.deferred = (frozenset(names), DeferredLoader(True))
