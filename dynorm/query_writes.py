"""The writes that start from a queryset: ``create``, ``update``, ``get_or_create``, ``bulk_*``, ``delete``...

:class:`QuerySetWrites` is mixed into :class:`dynorm.query.QuerySet` (so custom querysets and
managers have these methods, sync and async); each one plans its write with
:mod:`dynorm.writes` and sends it with :mod:`dynorm.sender`, :mod:`dynorm.batch` or
:mod:`dynorm.transaction`. On ``none()`` none of them sends anything (:func:`_none_writes`).
The reads they start with (``get()``, the keys ``delete()`` reads) are the queryset's own
(:mod:`dynorm.iterables`).
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, Mapping, TypeVar

from . import backend
from .exceptions import InvalidQuery
from .expressions import Q
from .fields import validate_values
from .plan import Plan, QueryState

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["QuerySetWrites"]

T = TypeVar("T", bound="EntityLike")
_F = TypeVar("_F", bound=Callable[..., Any])

_REFUSE: Any = object()


def _none_writes(returns: Any = _REFUSE) -> Callable[[_F], _F]:
    """Declare what a write method does on ``none()``: send nothing and return ``returns``, or,
    for a write that would create items (the default), raise :class:`InvalidQuery`.

    Writes start from a queryset but do not read it through the read pipeline (``bulk_update(objs)``,
    ``update_with_retry(key, fn)``...), so :func:`dynorm.iterables.evaluate` cannot see them: each
    carries this decorator (the sync and the async twin alike), the one place they read the flag of
    ``none()``. It matches nothing, so nothing is written (Django's ``none().update()`` is 0 rows),
    and it never creates an item.
    """
    def decorate(method: _F) -> _F:
        is_async = inspect.iscoroutinefunction(method)
        what = method.__name__[1:] if is_async else method.__name__

        def nothing(self: Any) -> Any:
            if returns is _REFUSE:
                name = self.model.__name__
                raise InvalidQuery(f"{name}.objects.none().{what}(): none() matches nothing and never writes; "
                                   f"call {name}.objects.{what}() instead.")
            return returns

        if is_async:
            @functools.wraps(method)
            async def awrite(self: Any, *args: Any, **kwargs: Any) -> Any:
                return nothing(self) if self._state.empty else await method(self, *args, **kwargs)
            return awrite  # type: ignore[return-value]

        @functools.wraps(method)
        def write(self: Any, *args: Any, **kwargs: Any) -> Any:
            return nothing(self) if self._state.empty else method(self, *args, **kwargs)
        return write  # type: ignore[return-value]

    return decorate


class QuerySetWrites(Generic[T]):
    """The writes of :class:`dynorm.query.QuerySet` (a mixin: it is never used alone)."""

    model: type[T]
    _state: QueryState

    if TYPE_CHECKING:  # provided by QuerySet (dynorm.query imports this module, not the reverse)
        def explain(self, *, count: bool = False) -> Plan: ...

        def consistent(self, on: bool = True) -> Any: ...

        def only(self, *fields: str) -> Any: ...

        def _plan(self, *, limit: int | None = None, count: bool = False, window: bool = True) -> Plan: ...

        def _check_unsliced(self, what: str) -> None: ...

        def _get_steps(self, args: tuple[Q, ...], kwargs: dict[str, Any]) -> backend.Steps: ...

    @_none_writes()
    def create(self, **fields: Any) -> T:
        """Create and return a new item; refuses to overwrite.

        Issues PutItem with ``attribute_not_exists(PK)``. While ``Meta.read_versions`` lists older
        key versions: one TransactWriteItems instead, that Put plus a ``ConditionCheck``
        ``attribute_not_exists`` on the key under each older version (billed as transactional
        writes: up to 4 WCU for a 1 KB item and one older version, against 1), so
        an item stored only under an older key (which ``get()`` reads) is never hidden.

        Raises:
            AlreadyExists: an item with the same primary key exists, under the current or an
                older read key version (nothing is written).
            ValidationError, InvalidKeyValue: bad values (before any request).
        """
        obj = self.model(**fields)
        obj.save(_create=True)
        return obj

    @_none_writes()
    async def acreate(self, **fields: Any) -> T:
        """:meth:`create` for asyncio (``await obj.asave()``: the same conditional PutItem and errors)."""
        obj = self.model(**fields)
        await obj.asave(_create=True)
        return obj

    def _create_steps(self, fields: dict[str, Any]) -> backend.Steps:
        obj = self.model(**fields)
        yield from obj._save_steps(None, True)  # create(): the same conditional write
        return obj

    def _primary_key_filter(self, what: str) -> dict[str, Any]:
        """The primary-key fields of a queryset that names exactly one item (else InvalidQuery)."""
        p = self.explain()
        if p.operation != "GetItem" or p.checks:
            raise InvalidQuery(
                f"{self.model.__name__}.objects.filter(...).{what}() needs exactly the primary-key fields "
                f"({', '.join(self.model._meta.key_fields)}) and nothing else.")
        leaves = [lf for q in self._state.where for lf in q.flatten_and()[0]]
        return {f: v for f, lookup, v in leaves if lookup == "exact"}

    @_none_writes(None)
    def update(self, *, condition: Q | None = None, **changes: Any) -> T:
        """Update the one item this queryset names (its full primary key) without reading it first.

        One UpdateItem (ReturnValues ALL_NEW, conditional on the item existing); see
        :meth:`Entity.update` for ``changes`` and ``condition``. On a versioned entity the
        version is incremented (no version check: nothing was read). When the item is not
        under the current key version and ``Meta.read_versions`` lists older ones, the same
        fallback as :meth:`get` finds it; it is moved to the current keys and updated there
        (see :mod:`dynorm.fallback`).

        An update with ``+``, ``-`` or ``append()`` is one TransactWriteItems under a
        ``ClientRequestToken`` (applied exactly once under botocore's retries; 2 WCU per KB) and
        reads nothing back: the instance returned holds the key and the values set, and every
        other field (the ``F()`` results, the version) is deferred, loaded with one consistent
        GetItem when first read.

        Returns:
            the item as written (after a TransactWriteItems: its unwritten fields deferred).

        Raises:
            InvalidQuery: the queryset does not name one item by its primary key.
            DoesNotExist: there is no such item. ConditionFailed: ``condition`` did not hold.
        """
        return backend.drive(self._update_steps(condition, changes))  # type: ignore[no-any-return]

    @_none_writes(None)
    async def aupdate(self, *, condition: Q | None = None, **changes: Any) -> T:
        """:meth:`update` for asyncio (the same UpdateItem and errors)."""
        return await backend.adrive(self._update_steps(condition, changes))  # type: ignore[no-any-return]

    def _update_steps(self, condition: Q | None, changes: dict[str, Any]) -> backend.Steps:
        from .sender import send_steps
        from .write_unique import check_unique_changes, touches_unique
        from .writes import prepare_update

        key = self._primary_key_filter("update")
        if touches_unique(self.model, list(changes)):
            # a unique field: the sentinel of its stored value is swapped, so the item is read first
            # (one consistent GetItem) and updated as an instance (one TransactWriteItems)
            check_unique_changes(self.model, changes)
            obj = yield from self.consistent()._get_steps((), {})
            return (yield from obj._update_steps(condition, changes))
        op = prepare_update(self.model, key=key, changes=changes, condition=condition)
        try:
            return (yield from send_steps(op))
        except self.model.DoesNotExist:
            meta = self.model._meta
            if not [v for v in meta.read_versions if v != meta.key_version]:
                raise
            # the same fallback as get(): an item under an older key version is moved to the
            # current one, then updated (Entity.update)
            obj = yield from self.consistent()._get_steps((), {})
            return (yield from obj._update_steps(condition, changes))

    @_none_writes(None)
    def update_with_retry(self, key: Mapping[str, Any] | EntityLike, fn: Callable[[T], Any], attempts: int = 5,
                          base_delay: float = 0.02) -> T:
        """Read the item (consistently), apply ``fn(obj)``, ``save()``; on a lost race re-read and retry.

        Args:
            key: primary-key fields (``{"product_id": "01J…"}``) or an instance.
            fn: changes the instance in place (its return value is ignored).
            attempts: total tries (>= 1).
            base_delay: seconds; retry ``n`` waits ``uniform(0, base_delay * 2**n)`` (full jitter).

        Requests: GetItem (ConsistentRead) + PutItem per attempt.

        Returns:
            the saved instance.

        Raises:
            StaleWrite: every attempt lost its race, or botocore retried a request whose response
                was lost and the item changed since (``exc.maybe_applied`` is True: the change may
                have been applied once; fn is never run again after such an attempt).
                DoesNotExist: no such item.
            ModelError: the entity has no ``fields.Version()`` (without it a race cannot be detected).
        """
        return backend.drive(self._update_with_retry_steps(key, fn, attempts, base_delay))  # type: ignore

    @_none_writes(None)
    async def aupdate_with_retry(self, key: Mapping[str, Any] | EntityLike, fn: Callable[[T], Any], attempts: int = 5,
                                 base_delay: float = 0.02) -> T:
        """:meth:`update_with_retry` for asyncio (``fn`` is a plain function; waits with ``asyncio.sleep``)."""
        return await backend.adrive(self._update_with_retry_steps(key, fn, attempts, base_delay))  # type: ignore

    def _update_with_retry_steps(self, key: Mapping[str, Any] | EntityLike, fn: Callable[[T], Any], attempts: int,
                                 base_delay: float) -> backend.Steps:
        from .backend import RetryPolicy
        from .exceptions import ModelError, StaleWrite
        from .registry import default_manager

        if not self.model._meta.version_field:
            raise ModelError(f"{self.model.__name__} has no fields.Version(); update_with_retry needs optimistic "
                             "locking to detect lost races.")
        keydict = key.key if hasattr(key, "key") and not isinstance(key, Mapping) else dict(key)
        policy = RetryPolicy(max_attempts=max(attempts, 1), base_delay=base_delay, max_delay=float("inf"))
        for attempt in range(max(attempts, 1)):
            obj = yield from default_manager(self.model).get_queryset().consistent()._get_steps((), keydict)
            fn(obj)
            try:
                yield from obj._save_steps(None, False)
                return obj
            except StaleWrite as exc:
                if attempt >= attempts - 1 or getattr(exc, "maybe_applied", False):
                    # a lost response whose first attempt may have been applied: running fn
                    # again could apply it twice, so the uncertainty is reported instead
                    raise
                yield backend.Sleep(policy.delay(attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    @_none_writes()
    def get_or_create(self, defaults: Mapping[str, Any] | None = None, **kwargs: Any) -> tuple[T, bool]:
        """Return ``(obj, created)``: the item with this primary key, created from ``kwargs`` + ``defaults`` if missing.

        Race-safe: the create is conditional (``attribute_not_exists``); a concurrent creator
        wins and this call returns its item (read consistently). ``kwargs`` must hold the
        primary-key fields.

        Requests: GetItem, then PutItem if missing (then GetItem if another caller won).
        """
        return backend.drive(self._get_or_create_steps(defaults, kwargs))  # type: ignore[no-any-return]

    @_none_writes()
    async def aget_or_create(self, defaults: Mapping[str, Any] | None = None, **kwargs: Any) -> tuple[T, bool]:
        """:meth:`get_or_create` for asyncio (the same requests, race-safe the same way)."""
        return await backend.adrive(self._get_or_create_steps(defaults, kwargs))  # type: ignore[no-any-return]

    def _get_or_create_steps(self, defaults: Mapping[str, Any] | None, kwargs: dict[str, Any]) -> backend.Steps:
        from .exceptions import AlreadyExists

        missing = [f for f in self.model._meta.key_fields if f not in kwargs]
        if missing:
            raise InvalidQuery(f"get_or_create on {self.model.__name__} needs the primary-key field(s) "
                               f"{', '.join(missing)}: only a conditional write on one key is race-safe.")
        validate_values(self.model._meta, {**(defaults or {}), **kwargs})  # bad values: refused before the read
        try:
            return (yield from self._get_steps((), kwargs)), False
        except self.model.DoesNotExist:
            pass
        try:
            return (yield from self._create_steps({**(defaults or {}), **kwargs})), True
        except AlreadyExists as exc:
            if getattr(exc, "other_entity", None):
                raise  # another entity type's item holds the key: it names both, nothing to read again
            # the conditional create decides: an item holds this primary key. Read it
            # consistently; if its other fields differ from kwargs it is not the one asked for,
            # and creating it would overwrite another: say so instead of DoesNotExist
            try:
                return (yield from self.consistent()._get_steps((), kwargs)), False
            except self.model.DoesNotExist:
                asked = ", ".join(f"{k}={v!r}" for k, v in kwargs.items() if k not in self.model._meta.key_fields)
                raise AlreadyExists(
                    f"get_or_create on {self.model.__name__}: an item with this primary key exists, but its fields "
                    f"differ from {asked}; nothing was written. Give only the primary-key fields (and "
                    "defaults=...) to get it.") from exc

    @_none_writes()
    def update_or_create(self, defaults: Mapping[str, Any] | None = None, attempts: int = 5,
                         **kwargs: Any) -> tuple[T, bool]:
        """Return ``(obj, created)``: update the item with this primary key with ``defaults``, or create it.

        Race-safe through conditional writes: a lost race (someone created or changed the
        item first) re-reads and tries again, up to ``attempts`` times.

        Requests: GetItem (ConsistentRead), then UpdateItem or PutItem (a TransactWriteItems
        during a key-version rollout, as :meth:`create`).

        Raises:
            AlreadyExists: an item holds this primary key but its fields differ from the other
                lookups in ``kwargs`` (it is not the item asked for); nothing was written.
            StaleWrite: lost the race ``attempts`` times.
        """
        return backend.drive(self._update_or_create_steps(defaults, attempts, kwargs))  # type: ignore

    @_none_writes()
    async def aupdate_or_create(self, defaults: Mapping[str, Any] | None = None, attempts: int = 5,
                                **kwargs: Any) -> tuple[T, bool]:
        """:meth:`update_or_create` for asyncio (the same requests, race-safe the same way)."""
        return await backend.adrive(self._update_or_create_steps(defaults, attempts, kwargs))  # type: ignore

    def _update_or_create_steps(self, defaults: Mapping[str, Any] | None, attempts: int,
                                kwargs: dict[str, Any]) -> backend.Steps:
        from .exceptions import AlreadyExists, StaleWrite

        missing = [f for f in self.model._meta.key_fields if f not in kwargs]
        if missing:
            raise InvalidQuery(f"update_or_create on {self.model.__name__} needs the primary-key field(s) "
                               f"{', '.join(missing)}.")
        validate_values(self.model._meta, {**(defaults or {}), **kwargs})  # bad values: refused before the read
        keys = {f: kwargs[f] for f in self.model._meta.key_fields}
        for attempt in range(max(attempts, 1)):
            try:
                obj = yield from self.consistent()._get_steps((), kwargs)
            except self.model.DoesNotExist:
                try:
                    return (yield from self._create_steps({**(defaults or {}), **kwargs})), True
                except AlreadyExists as exc:
                    if getattr(exc, "other_entity", None):
                        raise  # another entity type's item holds the key: no race, no retry
                    if len(keys) == len(kwargs):
                        continue  # created by another caller since the read: read it again
                    # an item holds this primary key: when it differs from the lookups it is not
                    # the one asked for (updating it would change another), as get_or_create says
                    try:
                        yield from self.consistent()._get_steps((), keys)
                    except self.model.DoesNotExist:
                        continue  # deleted since: try again
                    asked = ", ".join(f"{k}={v!r}" for k, v in kwargs.items() if k not in keys)
                    raise AlreadyExists(
                        f"update_or_create on {self.model.__name__}: an item with this primary key exists, but its "
                        f"fields differ from {asked}; nothing was written. Give only the primary-key fields "
                        "(and defaults=...) to update it.") from exc
            try:
                if defaults:
                    yield from obj._update_steps(None, dict(defaults))
                return obj, False
            except (StaleWrite, self.model.DoesNotExist):
                if attempt >= attempts - 1:
                    raise
        raise StaleWrite(f"update_or_create on {self.model.__name__} lost the race {attempts} times.")

    @_none_writes()
    def bulk_create(self, objs: Iterable[T], **policy: Any) -> list[T]:
        """Write many new items with BatchWriteItem (25 per request); see :func:`dynorm.batch.bulk_create_steps`.

        Replaces an item with the same key; during a key-version rollout (``Meta.read_versions``)
        its copies under older keys are deleted too, once its Put went in (one more write request,
        1 WCU, per item and older version).

        Args:
            objs: instances of this entity.
            **policy: ``max_attempts``, ``base_delay``, ``max_delay`` for unprocessed items.
        """
        from .batch import RetryPolicy, bulk_create

        return bulk_create(self.model, objs, RetryPolicy(**policy))  # type: ignore[return-value]

    @_none_writes()
    async def abulk_create(self, objs: Iterable[T], **policy: Any) -> list[T]:
        """:meth:`bulk_create` for asyncio (the same BatchWriteItem requests, retries and errors)."""
        from .batch import RetryPolicy, bulk_create_steps

        return await backend.adrive(bulk_create_steps(self.model, objs, RetryPolicy(**policy)))  # type: ignore

    @_none_writes(0)
    def bulk_delete(self, targets: Iterable[T | Mapping[str, Any]], **policy: Any) -> int:
        """Delete many items (instances or key dicts) with BatchWriteItem; see :func:`dynorm.batch.bulk_delete`."""
        from .batch import RetryPolicy, bulk_delete

        return bulk_delete(self.model, targets, RetryPolicy(**policy))  # type: ignore[arg-type]

    @_none_writes(0)
    async def abulk_delete(self, targets: Iterable[T | Mapping[str, Any]], **policy: Any) -> int:
        """:meth:`bulk_delete` for asyncio (the same BatchWriteItem requests, retries and errors)."""
        from .batch import RetryPolicy, bulk_delete_steps

        return await backend.adrive(bulk_delete_steps(self.model, targets, RetryPolicy(**policy)))  # type: ignore

    @_none_writes(0)
    def delete(self, **policy: Any) -> int:
        """Delete every matching item with BatchWriteItem (25 per request) and return how many.

        Reads the matches' primary keys first (the queryset's Query/Scan with a
        ProjectionExpression), then deletes them as :meth:`bulk_delete` does: unconditionally
        (no optimistic-locking check; use ``obj.delete()`` for that), UnprocessedItems retried.
        With ``Meta.read_versions``, each item's keys at the older versions are deleted too; a
        queryset naming one item by its full primary key finds it as :meth:`get` does (a
        consistent GetItem per version tried) and deletes it at every version in one
        TransactWriteItems.

        Args:
            **policy: ``max_attempts``, ``base_delay``, ``max_delay`` for unprocessed items.

        Returns:
            The number of items deleted.

        Raises:
            InvalidQuery: a sliced queryset or an item collection (before any request).
            BatchIncomplete: items still unprocessed after all retries (it lists them).
        """
        key_fields = self._delete_keys_query()
        # the instances, not their key fields: each is deleted under the key it was read at (an
        # item read through Meta.read_versions lives under an older key version), and at every
        # other read version too (bulk_delete), so get()'s fallback does not find it again
        if self._by_key_with_older_versions():
            try:
                objs = [self.consistent().get()]  # by key: the same fallback as get()
            except self.model.DoesNotExist:
                return 0
        else:
            objs = list(self.only(*key_fields).iterator())
        if not objs:
            return 0
        return self.bulk_delete(objs, **policy)

    delete.queryset_only = True  # type: ignore[attr-defined]

    @_none_writes(0)
    async def adelete(self, **policy: Any) -> int:
        """:meth:`delete` for asyncio: the same Query/Scan of the keys, then the same BatchWriteItem requests."""
        key_fields = self._delete_keys_query()
        if self._by_key_with_older_versions():
            try:
                objs = [await self.consistent().aget()]  # by key: the same fallback as aget()
            except self.model.DoesNotExist:
                return 0
        else:
            objs = [obj async for obj in self.only(*key_fields).aiterator()]  # each under the key it was read at
        if not objs:
            return 0
        return await self.abulk_delete(objs, **policy)

    adelete.queryset_only = True  # type: ignore[attr-defined]

    def _delete_keys_query(self) -> tuple[str, ...]:
        """Check :meth:`delete` may run here (no I/O) and return the primary-key fields it reads."""
        self._check_unsliced("delete")
        if self._state.collection:
            raise InvalidQuery("delete() on an item collection: delete per entity "
                               "(Entity.objects.filter(...).delete()).")
        return tuple(self.model._meta.key_fields)

    def _by_key_with_older_versions(self) -> bool:
        """True when this queryset names one item by its whole primary key and ``Meta.read_versions``
        lists older key versions: :meth:`delete` then finds the item as :meth:`get` does."""
        meta = self.model._meta
        return bool([v for v in meta.read_versions if v != meta.key_version]) and self._plan().operation == "GetItem"

    @_none_writes(0)
    def bulk_update(self, objs: Iterable[T], fields: Iterable[str], **options: Any) -> int:
        """Write ``fields`` of many instances: one Update per object, up to 100 actions per TransactWriteItems.

        See :func:`dynorm.transaction.bulk_update` (each chunk commits or fails whole; an item's sentinel
        actions go in its chunk;
        with ``fields.Version()`` every update is conditional on the version read).

        Returns:
            The number of items updated.
        """
        from .transaction import bulk_update

        return bulk_update(self.model, objs, fields, **options)

    @_none_writes(0)
    async def abulk_update(self, objs: Iterable[T], fields: Iterable[str], **options: Any) -> int:
        """:meth:`bulk_update` for asyncio (the same TransactWriteItems chunks, conditions and errors)."""
        from .transaction import bulk_update_steps

        return await backend.adrive(bulk_update_steps(self.model, objs, fields, **options))  # type: ignore
