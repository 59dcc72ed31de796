"""Lazy, chainable querysets (Django style) and item-collection querysets.

A :class:`QuerySet` is a description (:class:`~dynorm.plan.QueryState`); builder methods
return clones and send nothing. Evaluation (iteration, ``len()``, ``list()``, ``bool()``,
``get/first/last/count/exists/page``, slicing with a step, indexing) plans the request
with :func:`dynorm.plan.plan` and sends exactly that through the backend, paging on
LastEvaluatedKey.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, Iterator, Mapping, TypeVar, overload

from . import _codec, backend, conf
from .cursor import decode_cursor, encode_cursor
from .exceptions import InvalidCursor, InvalidQuery
from .expressions import Q
from .plan import Plan, QueryState, plan

if TYPE_CHECKING:  # pragma: no cover
    from .models import Entity

__all__ = ["QuerySet", "Page", "UnknownItem"]

T = TypeVar("T", bound="Entity")


class UnknownItem:
    """An item whose entity type no model declares (returned, never an error).

    Attributes:
        entity_type: the stored type attribute value (``None`` when absent).
        attributes: the item as plain Python values.
        raw: the item in DynamoDB JSON.
    """

    def __init__(self, raw: dict[str, Any], type_attribute: str) -> None:
        self.raw = raw
        self.attributes = _codec.item_from_av(raw)
        self.entity_type = self.attributes.get(type_attribute)

    def __repr__(self) -> str:
        return f"<UnknownItem entity_type={self.entity_type!r} {self.attributes!r}>"


@dataclass
class Page(Generic[T]):
    """One page of results.

    Attributes:
        items: the items of this page (at most the requested size).
        cursor: opaque string for the next page, or ``None`` when there is none.
    """

    items: list[T]
    cursor: str | None = None

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class _Window:
    start: int = 0
    stop: int | None = None


class QuerySet(Generic[T]):
    """A lazy query on one entity (or an item collection).

    Build it from a manager (``Product.objects.filter(...)``); subclass it to add named
    access patterns and attach it with ``objects = MyQuerySet.as_manager()``.
    """

    def __init__(self, model: type[T], state: QueryState | None = None) -> None:
        self.model = model
        self._state = state or QueryState(model)
        self._window = _Window()
        self._cache: list[Any] | None = None
        self.stats = backend.Stats()
        """Requests, items, scanned items and consumed capacity of this queryset's evaluations."""

    # -- cloning ---------------------------------------------------------------------
    def _clone(self, **changes: Any) -> QuerySet[T]:
        qs = self.__class__(self.model, self._state.with_(**changes) if changes else self._state)
        qs._window = _Window(self._window.start, self._window.stop)
        return qs

    def _check_unsliced(self, what: str) -> None:
        if self._window.start or self._window.stop is not None:
            raise InvalidQuery(f"cannot {what} a sliced queryset; {what} first, then slice.")

    @classmethod
    def as_manager(cls) -> Any:
        """Return a manager whose methods include this queryset class's methods (Django idiom)."""
        from .manager import Manager

        return Manager.from_queryset(cls)()

    # -- builders (lazy) -------------------------------------------------------------
    def all(self) -> QuerySet[T]:
        """Return a copy of this queryset (no I/O)."""
        return self._clone()

    def filter(self, *args: Q, **kwargs: Any) -> QuerySet[T]:
        """Narrow by ``Q`` objects and ``field__lookup=value`` pairs (AND-ed); no I/O.

        The planner picks the access path whose partition key is fully given and whose
        sort-key prefix uses the most given fields; the rest becomes a FilterExpression.
        """
        self._check_unsliced("filter")
        return self._clone(where=(*self._state.where, Q(*args, **_expand_pk(self.model, kwargs))))

    def exclude(self, *args: Q, **kwargs: Any) -> QuerySet[T]:
        """Drop items matching the conditions (a negated FilterExpression); no I/O."""
        self._check_unsliced("exclude")
        return self._clone(where=(*self._state.where, ~Q(*args, **_expand_pk(self.model, kwargs))))

    def using(self, access_path: str) -> QuerySet[T]:
        """Force an access path: a ``Meta.indexes`` name or ``"primary"``; no I/O."""
        return self._clone(using=access_path)

    def scan(self) -> QuerySet[T]:
        """Ask for a Scan (with a FilterExpression for any conditions); no I/O.

        A Scan reads the whole table (or index); use it only where no access path serves.
        """
        return self._clone(scan=True)

    def order_by(self, *keys: str) -> QuerySet[T]:
        """Order by the sort key: ``"sk"`` ascending, ``"-sk"`` descending (ScanIndexForward).

        A field of the chosen index's sort-key template may stand for ``sk``
        (``order_by("-created_at")``). No I/O.
        """
        self._check_unsliced("order")
        if len(keys) != 1:
            raise InvalidQuery("order_by takes one key: 'sk' or '-sk' (DynamoDB sorts by the sort key only).")
        key = keys[0]
        name = key.lstrip("-")
        if name != "sk" and name not in self.model._meta.fields:
            raise InvalidQuery(f"order_by({key!r}): {self.model.__name__} has no field {name!r}; use 'sk' or '-sk'.")
        return self._clone(descending=key.startswith("-"))

    def reverse(self) -> QuerySet[T]:
        """Reverse the order (toggles ScanIndexForward); no I/O."""
        self._check_unsliced("reverse")
        return self._clone(descending=not self._state.descending)

    def only(self, *fields: str) -> QuerySet[T]:
        """Read only these fields (ProjectionExpression); other fields stay ``None``. No I/O."""
        for f in fields:
            if f not in self.model._meta.fields:
                raise InvalidQuery(f"only({f!r}): {self.model.__name__} has no field {f!r}.")
        return self._clone(projection=tuple(fields))

    def consistent(self, on: bool = True) -> QuerySet[T]:
        """Use strongly consistent reads (ConsistentRead; not possible on a GSI). No I/O."""
        return self._clone(consistent=on)

    def collection(self, *, using: str | None = None, **key: Any) -> QuerySet[Any]:
        """Query a whole item collection: every entity type sharing this partition.

        Args:
            using: an access path of this entity whose partition to read (default: the table).
            **key: the partition-key fields of that access path.

        Returns:
            a queryset yielding each item as its own entity class (dispatch on the type
            attribute), or :class:`UnknownItem` for undeclared types. No I/O yet.
        """
        return self._clone(collection=True, using=using or "primary", where=(*self._state.where, Q(**key)))

    def of(self, entity: type[Entity], **values: Any) -> QuerySet[Any]:
        """In a collection, keep only ``entity``'s items (begins_with on its sort-key prefix). No I/O."""
        if not self._state.collection:
            raise InvalidQuery("of() narrows an item collection; call collection(...) first.")
        if entity._meta.table is not self.model._meta.table:
            raise InvalidQuery(f"{entity.__name__} is not stored in table {self.model._meta.table.__name__}.")
        return self._clone(of=entity, of_values=tuple(values.items()))

    # -- planning --------------------------------------------------------------------
    def explain(self) -> Plan:
        """Return the :class:`~dynorm.plan.Plan` (operation, index, expressions, exact params) without I/O."""
        p = plan(self._state)
        limit = self._fetch_limit()
        if limit is not None and p.operation != "GetItem":
            p.params["Limit"] = limit
        return p

    def _fetch_limit(self) -> int | None:
        if self._window.stop is None:
            return None
        return max(self._window.stop, 0)

    # -- execution -------------------------------------------------------------------
    def _decoder(self, p: Plan) -> Any:
        if p.projection is not None:
            decode_full = self._decoder_full(p)

            def partial(raw: dict[str, Any]) -> Any:
                obj = decode_full(raw)
                if obj is not None and not isinstance(obj, UnknownItem):
                    obj._dynorm_partial = True  # saving it would drop the fields not read
                return obj

            return partial
        return self._decoder_full(p)

    def _decoder_full(self, p: Plan) -> Any:
        table = self.model._meta.table
        type_attr = table._meta.type_attribute
        entities = table._entities
        wanted = p.entity_types
        of = self._state.of

        def decode(raw: dict[str, Any]) -> Any:
            t = raw.get(type_attr, {}).get("S")
            cls = entities.get(t) if t is not None else None
            if wanted is not None:
                if t not in wanted:
                    return None
                assert cls is not None
                return cls.from_raw_data(raw)
            if cls is None:
                return None if of is not None else UnknownItem(raw, type_attr)
            if of is not None and cls is not of:
                return None
            return cls.from_raw_data(raw)

        return decode

    def _pages(self, p: Plan, *, limit: int | None = None, start_key: dict[str, Any] | None = None,
               page_size: int | None = None) -> Iterator[tuple[list[Any], dict[str, Any] | None]]:
        """Yield (decoded items, LastEvaluatedKey) per request, stopping at ``limit`` items."""
        decode = self._decoder(p)
        if p.operation == "GetItem":
            resp = backend.call("GetItem", p.params, stats=self.stats)
            item = resp.get("Item")
            obj = decode(item) if item else None
            yield ([obj] if obj is not None else []), None
            return
        got = 0
        key = start_key
        while True:
            params = dict(p.params)
            want = None
            if limit is not None:
                want = limit - got
            if page_size is not None:
                want = page_size if want is None else min(want, page_size)
            if want is not None:
                params["Limit"] = max(want, 1)
            if key:
                params["ExclusiveStartKey"] = key
            resp = backend.call(p.operation, params, stats=self.stats)
            items = [obj for obj in map(decode, resp.get("Items", ())) if obj is not None]
            got += len(items)
            key = resp.get("LastEvaluatedKey")
            yield items, key
            if not key or (limit is not None and got >= limit):
                return

    def _fetch_all(self) -> list[Any]:
        if self._cache is None:
            p = self.explain()
            out: list[Any] = []
            for items, _ in self._pages(p, limit=self._fetch_limit()):
                out += items
            self._cache = out[self._window.start:self._window.stop]
            self._resolve_prefetch(self._cache)
        return self._cache

    def __iter__(self) -> Iterator[T]:
        return iter(self._fetch_all())

    def __len__(self) -> int:
        return len(self._fetch_all())

    def __bool__(self) -> bool:
        return bool(self._fetch_all())

    def __repr__(self) -> str:
        """Show up to 20 results, as Django does (evaluates the first 21 items when not cached)."""
        from .exceptions import DynormError

        try:
            items = list(self._cache[:21]) if self._cache is not None else list(self[:21])
        except DynormError as exc:
            return f"<{type(self).__name__} {self.model.__name__}: {type(exc).__name__}: {exc}>"
        more = ", ...(remaining elements truncated)" if len(items) > 20 else ""
        return f"<{type(self).__name__} [{', '.join(repr(i) for i in items[:20])}{more}]>"

    @overload
    def __getitem__(self, k: int) -> T: ...

    @overload
    def __getitem__(self, k: slice) -> QuerySet[T] | list[T]: ...

    def __getitem__(self, k: int | slice) -> Any:
        """Slice lazily (``qs[:10]`` sets Limit, paging past filtered-out items) or index.

        ``qs[a:b]`` reads ``b`` items and drops the first ``a`` (DynamoDB has no offset).
        A step evaluates the queryset. Negative indexes are not supported.
        """
        if self._cache is not None:
            return self._cache[k]
        if isinstance(k, slice):
            if (k.start is not None and k.start < 0) or (k.stop is not None and k.stop < 0):
                raise InvalidQuery("negative slicing is not supported; use reverse() instead.")
            start = self._window.start + (k.start or 0)
            stop = self._window.start + k.stop if k.stop is not None else self._window.stop
            if self._window.stop is not None and stop is not None:
                stop = min(stop, self._window.stop)
            qs = self._clone()
            qs._window = _Window(start, stop)
            if k.step is not None:
                return list(qs)[:: k.step]
            return qs
        if not isinstance(k, int) or k < 0:
            raise InvalidQuery("index a queryset with a non-negative int or a slice.")
        items = list(self[k:k + 1])
        if not items:
            raise IndexError("queryset index out of range")
        return items[0]

    def iterator(self) -> Iterator[T]:
        """Yield results page by page without caching them (bounded memory)."""
        p = self.explain()
        skipped = 0
        yielded = 0
        for items, _ in self._pages(p, limit=self._fetch_limit()):
            for obj in items:
                if skipped < self._window.start:
                    skipped += 1
                    continue
                if self._window.stop is not None and skipped + yielded >= self._window.stop:
                    return
                yielded += 1
                yield obj

    def get(self, *args: Q, **kwargs: Any) -> T:
        """Return the one item matching the conditions.

        Issues GetItem when the whole primary key is given (and nothing else), else a Query
        reading at most two matches.

        Raises:
            Entity.DoesNotExist: nothing matches.
            Entity.MultipleObjectsReturned: more than one item matches.
            ScanRequired: no access path serves the conditions.
        """
        kwargs = _expand_pk(self.model, kwargs)
        p = None if args else self._exact_key_plan(kwargs)
        if p is not None:
            qs = self
        else:
            qs = self.filter(*args, **kwargs) if (args or kwargs) else self
            p = qs.explain()
        if p.operation == "GetItem":
            items = next(qs._pages(p))[0]
            if not items:
                items = qs._get_older_versions(p, kwargs)
        else:
            items = []
            for page, _ in qs._pages(p, limit=2):
                items += page
        self.stats = qs.stats
        if len(items) == 1:
            return items[0]
        described = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "the given conditions"
        if not items:
            raise self.model.DoesNotExist(
                f"{self.model.__name__} matching {described} does not exist ({p.operation} on {p.table}"
                f"{' index ' + p.index if p.index else ''}).")
        raise self.model.MultipleObjectsReturned(
            f"get() matched more than one {self.model.__name__} for {described}; add conditions "
            "or use filter().")

    def _exact_key_plan(self, kwargs: dict[str, Any]) -> Plan | None:
        """The GetItem plan for ``get(**primary key)`` on a plain queryset, built without the planner.

        The hot path of key-value reads: the same request :func:`dynorm.plan.plan` makes
        (a test pins that), at a fraction of the CPU. ``None`` when anything else is asked.
        """
        st = self._state
        meta = self.model._meta
        if (st.where or st.using or st.scan or st.projection is not None or st.collection or st.descending
                or self._window.start or self._window.stop is not None or set(kwargs) != set(meta.key_fields)):
            return None
        values = {}
        for name, value in kwargs.items():
            if value is None:
                return None  # let the planner word the error
            values[name] = meta.fields[name].validate(value, meta.entity)
        key = meta.primary_key(values)
        table = meta.table.table_name()
        params: dict[str, Any] = {"TableName": table, "Key": key}
        if st.consistent:
            params["ConsistentRead"] = True
        params["ReturnConsumedCapacity"] = "TOTAL"
        return Plan("GetItem", table, None, "primary", None, None, None, {}, {}, params, key=key,
                    entity_types=frozenset({meta.entity_type}), bound=meta.primary)

    def _get_older_versions(self, p: Plan, given: dict[str, Any]) -> list[Any]:
        """``Meta.read_versions`` fallback: GetItem under each older key version, in order.

        Costs one extra GetItem per older version tried. An item found this way is saved
        under the current key version (the old item stays until ``DeleteVersion``).
        """
        meta = self.model._meta
        older = [v for v in meta.read_versions if v != meta.key_version]
        if not older:
            return []
        leaves = [lf for q in self._state.where for lf in q.flatten_and()[0]]
        values = {**{f: v for f, lookup, v in leaves if lookup == "exact"}, **given}
        for version in older:
            key = meta.primary_key(values, version)
            found = list(self._pages(replace(p, params={**p.params, "Key": key}, key=key)))[0][0]
            if found:
                found[0]._dynorm_fallback = version
                return found
        return []

    def first(self) -> T | None:
        """Return the first item in sort-key order, or ``None`` (a Query with Limit 1, paging past filtered items)."""
        items = list(self[:1]) if self._window.stop is None else list(self)[:1]
        return items[0] if items else None

    def last(self) -> T | None:
        """Return the last item in sort-key order, or ``None`` (a reversed Query with Limit 1)."""
        self._check_unsliced("take last() of")
        items = list(self.reverse()[:1])
        return items[0] if items else None

    def exists(self) -> bool:
        """Return True when at least one item matches (reads at most one match)."""
        if self._cache is not None:
            return bool(self._cache)
        return self.first() is not None

    def count(self) -> int:
        """Count the matches (Select=COUNT over all pages; GetItem for a full primary key)."""
        if self._cache is not None:
            return len(self._cache)
        p = self.explain()
        if p.operation == "GetItem" or self._window.start or self._window.stop is not None:
            return len(self._fetch_all())
        params = dict(p.params)
        params.pop("ProjectionExpression", None)
        if "ProjectionExpression" in p.params:
            used = set()
            for text in (params.get("KeyConditionExpression"), params.get("FilterExpression")):
                used |= {ph for ph in p.names if text and ph in text}
            params["ExpressionAttributeNames"] = {k: v for k, v in p.names.items() if k in used}
            if not params["ExpressionAttributeNames"]:
                del params["ExpressionAttributeNames"]
        params["Select"] = "COUNT"
        total = 0
        key = None
        while True:
            if key:
                params["ExclusiveStartKey"] = key
            resp = backend.call(p.operation, params, stats=self.stats)
            total += int(resp.get("Count", 0))
            key = resp.get("LastEvaluatedKey")
            if not key:
                return total

    def values(self, *fields: str) -> list[dict[str, Any]]:
        """Evaluate and return dicts of ``fields`` (all fields when none given).

        With fields given, only they are read (ProjectionExpression).
        """
        qs = self.only(*fields) if fields else self
        names = fields or tuple(self.model._meta.fields)
        return [{f: getattr(obj, f) for f in names} for obj in qs]

    def grouped(self) -> dict[type, list[Any]]:
        """Evaluate a collection and return ``{EntityClass: [items]}`` (``UnknownItem`` for undeclared types)."""
        out: dict[type, list[Any]] = {}
        for obj in self:
            out.setdefault(type(obj), []).append(obj)
        return out

    def page(self, size: int = 25, cursor: str | None = None) -> Page[T]:
        """Return one page of at most ``size`` items and the cursor for the next one.

        Args:
            size: items per page (1..1000).
            cursor: ``Page.cursor`` from the previous page, or ``None`` for the first page.

        Returns:
            :class:`Page` (``cursor`` is ``None`` when there are no more items).

        Raises:
            InvalidCursor: the cursor was altered, made for another query or is stale.
        """
        if not isinstance(size, int) or not 1 <= size <= 1000:
            raise InvalidQuery(f"page size must be an int from 1 to 1000, got {size!r}.")
        self._check_unsliced("page")
        p = self.explain()
        if p.operation == "GetItem":
            if cursor is not None:
                raise InvalidCursor("this query reads one item (GetItem) and has no further pages.")
            return Page(next(self._pages(p))[0], None)
        context, secret, key_attrs = self._cursor_context(p)
        start = decode_cursor(cursor, context, secret, key_attrs) if cursor is not None else None
        items: list[Any] = []
        last: dict[str, Any] | None = None
        for batch, lek in self._pages(p, limit=size, start_key=start):
            items += batch
            last = lek
        return Page(items, encode_cursor(last, context, secret) if last else None)

    def _cursor_context(self, p: Plan) -> tuple[dict[str, Any], str, set[str]]:
        meta = self.model._meta
        tmeta = meta.table._meta
        context = {"t": p.table, "e": meta.entity_type, "i": p.index or "", "kv": meta.key_version,
                   "q": p.fingerprint()}
        secret = conf.get_settings().cursor_secret or f"dynorm-cursor:{p.table}"
        key_attrs = {tmeta.pk_attribute}
        if tmeta.sk_attribute:
            key_attrs.add(tmeta.sk_attribute)
        if p.bound is not None:
            key_attrs.add(p.bound.pk_attr)
            if p.bound.sk_attr:
                key_attrs.add(p.bound.sk_attr)
        elif p.index:
            key_attrs |= {a for pair in tmeta.gsis.values() for a in pair if a}
        return context, secret, key_attrs

    # -- writes that start from a queryset ------------------------------------------
    def create(self, **fields: Any) -> T:
        """Create and return a new item; refuses to overwrite.

        Issues PutItem with ``attribute_not_exists(PK)``.

        Raises:
            AlreadyExists: an item with the same primary key exists (nothing is overwritten).
            ValidationError, InvalidKeyValue: bad values (before any request).
        """
        obj = self.model(**fields)
        obj.save(_create=True)
        return obj

    def _primary_key_filter(self, what: str) -> dict[str, Any]:
        """The primary-key fields of a queryset that names exactly one item (else InvalidQuery)."""
        p = self.explain()
        if p.operation != "GetItem":
            raise InvalidQuery(
                f"{self.model.__name__}.objects.filter(...).{what}() needs exactly the primary-key fields "
                f"({', '.join(self.model._meta.key_fields)}) and nothing else.")
        leaves = [lf for q in self._state.where for lf in q.flatten_and()[0]]
        return {f: v for f, lookup, v in leaves if lookup == "exact"}

    def update(self, *, condition: Q | None = None, **changes: Any) -> T:
        """Update the one item this queryset names (its full primary key) without reading it first.

        One UpdateItem (ReturnValues ALL_NEW, conditional on the item existing); see
        :meth:`Entity.update` for ``changes`` and ``condition``. On a versioned entity the
        version is incremented (no version check: nothing was read).

        Returns:
            the item as written.

        Raises:
            InvalidQuery: the queryset does not name one item by its primary key.
            DoesNotExist: there is no such item. ConditionFailed: ``condition`` did not hold.
        """
        from .models import execute
        from .writes import prepare_update

        key = self._primary_key_filter("update")
        return execute(prepare_update(self.model, key=key, changes=changes, condition=condition))  # type: ignore

    def update_with_retry(self, key: Mapping[str, Any] | Entity, fn: Callable[[T], Any], attempts: int = 5,
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
            StaleWrite: every attempt lost its race. DoesNotExist: no such item.
            ModelError: the entity has no ``fields.Version()`` (without it a race cannot be detected).
        """
        import random
        import time

        from .exceptions import ModelError, StaleWrite

        if not self.model._meta.version_field:
            raise ModelError(f"{self.model.__name__} has no fields.Version(); update_with_retry needs optimistic "
                             "locking to detect lost races.")
        keydict = key.key if hasattr(key, "key") and not isinstance(key, Mapping) else dict(key)
        for attempt in range(max(attempts, 1)):
            obj = self.model.objects.get_queryset().consistent().get(**keydict)
            fn(obj)
            try:
                obj.save()
                return obj  # type: ignore[no-any-return]
            except StaleWrite:
                if attempt >= attempts - 1:
                    raise
                time.sleep(random.uniform(0, base_delay * 2 ** (attempt + 1)))
        raise AssertionError("unreachable")  # pragma: no cover

    def get_or_create(self, defaults: Mapping[str, Any] | None = None, **kwargs: Any) -> tuple[T, bool]:
        """Return ``(obj, created)``: the item with this primary key, created from ``kwargs`` + ``defaults`` if missing.

        Race-safe: the create is conditional (``attribute_not_exists``); a concurrent creator
        wins and this call returns its item (read consistently). ``kwargs`` must hold the
        primary-key fields.

        Requests: GetItem, then PutItem if missing (then GetItem if another caller won).
        """
        from .exceptions import AlreadyExists

        missing = [f for f in self.model._meta.key_fields if f not in kwargs]
        if missing:
            raise InvalidQuery(f"get_or_create on {self.model.__name__} needs the primary-key field(s) "
                               f"{', '.join(missing)}: only a conditional write on one key is race-safe.")
        try:
            return self.get(**kwargs), False
        except self.model.DoesNotExist:
            pass
        try:
            return self.create(**{**(defaults or {}), **kwargs}), True
        except AlreadyExists:
            return self.consistent().get(**kwargs), False

    def update_or_create(self, defaults: Mapping[str, Any] | None = None, attempts: int = 5,
                         **kwargs: Any) -> tuple[T, bool]:
        """Return ``(obj, created)``: update the item with this primary key with ``defaults``, or create it.

        Race-safe through conditional writes: a lost race (someone created or changed the
        item first) re-reads and tries again, up to ``attempts`` times.

        Requests: GetItem (ConsistentRead), then UpdateItem or PutItem.
        """
        from .exceptions import AlreadyExists, StaleWrite

        missing = [f for f in self.model._meta.key_fields if f not in kwargs]
        if missing:
            raise InvalidQuery(f"update_or_create on {self.model.__name__} needs the primary-key field(s) "
                               f"{', '.join(missing)}.")
        for attempt in range(max(attempts, 1)):
            try:
                obj = self.consistent().get(**kwargs)
            except self.model.DoesNotExist:
                try:
                    return self.create(**{**(defaults or {}), **kwargs}), True
                except AlreadyExists:
                    continue
            try:
                if defaults:
                    obj.update(**defaults)
                return obj, False
            except (StaleWrite, self.model.DoesNotExist):
                if attempt >= attempts - 1:
                    raise
        raise StaleWrite(f"update_or_create on {self.model.__name__} lost the race {attempts} times.")

    def bulk_create(self, objs: Iterable[T], **policy: Any) -> list[T]:
        """Write many new items with BatchWriteItem (25 per request); see :func:`dynorm.batch.bulk_create`.

        Args:
            objs: instances of this entity.
            **policy: ``max_attempts``, ``base_delay``, ``max_delay`` for unprocessed items.
        """
        from .batch import RetryPolicy, bulk_create

        return bulk_create(self.model, objs, RetryPolicy(**policy))  # type: ignore[return-value]

    def bulk_delete(self, targets: Iterable[T | Mapping[str, Any]], **policy: Any) -> int:
        """Delete many items (instances or key dicts) with BatchWriteItem; see :func:`dynorm.batch.bulk_delete`."""
        from .batch import RetryPolicy, bulk_delete

        return bulk_delete(self.model, targets, RetryPolicy(**policy))  # type: ignore[arg-type]

    def in_bulk(self, keys: Iterable[Mapping[str, Any] | Any] | None = None, **policy: Any) -> dict[Any, T]:
        """Read items by primary key with BatchGetItem (100 keys per request; UnprocessedKeys retried).

        Args:
            keys: key dicts, bare values when the primary key has one field, or tuples of the
                key fields in order (the ``pk`` of an instance). ``None`` (Django's
                ``in_bulk()``): evaluate this queryset instead (its Query) and key its items.

        Returns:
            ``{pk: obj}`` for the items found; the key is the bare value for one-field
            primary keys, else a tuple of the key fields in order (``obj.pk``).
        """
        from .batch import RetryPolicy, batch_get
        from .writes import primary_key_of

        fields = self.model._meta.key_fields
        if keys is None:
            return {obj.pk: obj for obj in self}  # type: ignore[attr-defined]
        pairs = []
        for k in keys:
            if isinstance(k, tuple) and len(k) == len(fields) and len(fields) > 1:
                k = dict(zip(fields, k))
            kd = k if isinstance(k, Mapping) else ({fields[0]: k} if len(fields) == 1 else None)
            if kd is None:
                raise InvalidQuery(f"in_bulk on {self.model.__name__}: give key dicts of {', '.join(fields)}.")
            pairs.append((self.model, primary_key_of(self.model, kd)))
        found = batch_get(self.model, pairs, consistent=self._state.consistent, policy=RetryPolicy(**policy))
        out: dict[Any, T] = {}
        for obj in found:
            kv = tuple(getattr(obj, f) for f in fields)
            out[kv[0] if len(kv) == 1 else kv] = obj
        return out

    def prefetch(self, *names: str) -> QuerySet[T]:
        """Resolve ``fields.Reference`` fields of the results with BatchGetItem (100 keys per request).

        After evaluation, ``obj.related(name)`` returns the referenced instance without a
        request (no N+1). No I/O now.
        """
        from .fields import Reference

        for n in names:
            if not isinstance(self.model._meta.fields.get(n), Reference):
                raise InvalidQuery(f"prefetch({n!r}): {self.model.__name__}.{n} is not a fields.Reference.")
        return self._clone(prefetch=(*self._state.prefetch, *names))

    def _resolve_prefetch(self, objs: list[Any]) -> None:
        if not self._state.prefetch or not objs:
            return
        from .batch import batch_get
        from .writes import primary_key_of

        wanted: list[tuple[Any, str, Any, dict[str, Any]]] = []
        for name in self._state.prefetch:
            field = self.model._meta.fields[name]
            target = field.target  # type: ignore[attr-defined]
            for obj in objs:
                value = getattr(obj, name, None)
                if value:
                    wanted.append((obj, name, target, primary_key_of(target, value)))
        found = batch_get(None, [(t, k) for _, _, t, k in wanted], consistent=self._state.consistent)
        index = {(type(o), tuple(o._primary_key_av()[a]["S"] for a in o._primary_key_av())): o for o in found}
        for obj, name, target, key in wanted:
            hit = index.get((target, tuple(v["S"] for v in key.values())))
            obj.__dict__.setdefault("_dynorm_related", {})[name] = hit

    # -- Django habits: small methods on the public evaluation API ----------------------
    def none(self) -> QuerySet[T]:
        """Return a queryset that matches nothing and never sends a request (Django's ``none()``).

        It chains like any queryset (``qs.none().filter(...)`` is still empty); evaluating it,
        ``count()``, ``page()``, ``delete()`` and the rest return empty results without I/O.
        """
        qs: QuerySet[T] = _empty_class(type(self))(self.model, self._state)
        qs._window = _Window(self._window.start, self._window.stop)
        return qs

    def values_list(self, *fields: str, flat: bool = False) -> list[Any]:
        """Evaluate and return tuples of ``fields`` (all fields when none given), as Django does.

        Only the named fields are read (ProjectionExpression). Issues the queryset's Query/Scan.

        Args:
            *fields: field names (``"pk"`` is the primary-key value, see ``Entity.pk``).
            flat: with exactly one field, return the bare values instead of 1-tuples.

        Raises:
            InvalidQuery: ``flat=True`` with more than one field, or an unknown field (before I/O).
        """
        if flat and len(fields) != 1:
            raise InvalidQuery(f"values_list(flat=True) on {self.model.__name__} needs exactly one field, "
                               f"got {len(fields)}.")
        meta = self.model._meta
        names = fields or tuple(meta.fields)
        read = tuple(dict.fromkeys(f for n in names for f in (meta.key_fields if n == "pk" else (n,))))
        rows = [tuple(getattr(obj, n) for n in names) for obj in (self.only(*read) if fields else self)]
        return [r[0] for r in rows] if flat else rows

    def latest(self, *fields: str) -> T:
        """Return the item with the greatest sort key (a reversed Query, Limit 1), as Django's ``latest()``.

        DynamoDB orders only by the sort key of the access path, so ``fields`` (optional) must
        be fields of that sort key; ``latest()`` with none is the usual call.

        Raises:
            Entity.DoesNotExist: nothing matches.
            InvalidQuery: ``fields`` are not the access path's sort key, or the query is a Scan
                (no order); raised before any request.
        """
        self._check_order("latest", fields)
        obj = self.last()
        if obj is None:
            raise self.model.DoesNotExist(f"latest(): no {self.model.__name__} matches.")
        return obj

    def earliest(self, *fields: str) -> T:
        """Return the item with the smallest sort key (a Query, Limit 1), as Django's ``earliest()``.

        Raises:
            Entity.DoesNotExist: nothing matches.
            InvalidQuery: as :meth:`latest`.
        """
        self._check_order("earliest", fields)
        obj = self.first()
        if obj is None:
            raise self.model.DoesNotExist(f"earliest(): no {self.model.__name__} matches.")
        return obj

    def _check_order(self, what: str, fields: tuple[str, ...]) -> None:
        p = self.explain()
        if p.operation == "Scan":
            raise InvalidQuery(f"{what}() on {self.model.__name__}: a Scan has no order; filter on a partition "
                               "key so the query is a Query ordered by its sort key.")
        if not fields:
            return
        bound = next((b for b in self.model._meta.all_indexes if b.index_name == p.index), None)
        sort = list(bound.sk.fields) if bound is not None and bound.sk is not None else (
            [bound.sort_field] if bound is not None and bound.sort_field else [])
        wrong = [f.lstrip("-") for f in fields if f.lstrip("-") not in sort]
        if wrong:
            raise InvalidQuery(
                f"{what}({', '.join(map(repr, fields))}) on {self.model.__name__}: DynamoDB orders by the sort key "
                f"of the access path ({p.index or 'the table'}: {', '.join(sort) or 'none'}), not by "
                f"{', '.join(wrong)}; call {what}() without fields, or use an index sorted on that field.")

    def delete(self, **policy: Any) -> int:
        """Delete every matching item with BatchWriteItem (25 per request) and return how many.

        Reads the matches' primary keys first (the queryset's Query/Scan with a
        ProjectionExpression), then deletes them as :meth:`bulk_delete` does: unconditionally
        (no optimistic-locking check; use ``obj.delete()`` for that), UnprocessedItems retried.

        Args:
            **policy: ``max_attempts``, ``base_delay``, ``max_delay`` for unprocessed items.

        Returns:
            The number of items deleted.

        Raises:
            InvalidQuery: a sliced queryset or an item collection (before any request).
            BatchIncomplete: items still unprocessed after all retries (it lists them).
        """
        self._check_unsliced("delete")
        if self._state.collection:
            raise InvalidQuery("delete() on an item collection: delete per entity "
                               "(Entity.objects.filter(...).delete()).")
        key_fields = self.model._meta.key_fields
        keys = [{f: getattr(obj, f) for f in key_fields} for obj in self.only(*key_fields).iterator()]
        if not keys:
            return 0
        return self.bulk_delete(keys, **policy)

    delete.queryset_only = True  # type: ignore[attr-defined]

    def bulk_update(self, objs: Iterable[T], fields: Iterable[str], **options: Any) -> int:
        """Write ``fields`` of many instances: one UpdateItem per object, 100 per TransactWriteItems.

        See :func:`dynorm.transaction.bulk_update` (each chunk of 100 commits or fails whole;
        with ``fields.Version()`` every update is conditional on the version read).

        Returns:
            The number of items updated.
        """
        from .transaction import bulk_update

        return bulk_update(self.model, objs, fields, **options)


def _expand_pk(model: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Rewrite Django's ``pk`` alias (``pk=``, ``pk__in=``...) into the primary-key fields."""
    if not any(k == "pk" or k.startswith("pk__") for k in kwargs):
        return kwargs
    fields = model._meta.key_fields
    out: dict[str, Any] = {}
    for k, v in kwargs.items():
        if k != "pk" and not k.startswith("pk__"):
            out[k] = v
            continue
        lookup = k[2:]
        if len(fields) == 1:
            out[fields[0] + lookup] = v
        elif lookup == "" and isinstance(v, (tuple, list)) and len(v) == len(fields):
            out.update(zip(fields, v))
        else:
            raise InvalidQuery(f"{model.__name__}.pk is ({', '.join(fields)}): give pk=(...) with "
                               f"{len(fields)} values, or filter on the fields.")
    return out


_EMPTY_CLASSES: dict[type, type] = {}


def _empty_class(cls: type) -> type:
    """The :meth:`QuerySet.none` variant of a queryset class (keeps its named access patterns)."""
    found = _EMPTY_CLASSES.get(cls)
    if found is None:
        found = _EMPTY_CLASSES[cls] = type(cls.__name__, (_Empty, cls), {"__module__": cls.__module__})
    return found


class _Empty:
    """Evaluation without I/O for :meth:`QuerySet.none`; builders still chain (``_clone`` keeps the class)."""

    model: Any

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return self
        raise IndexError("queryset index out of range")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} []>"

    def iterator(self) -> Iterator[Any]:
        return iter(())

    def count(self) -> int:
        return 0

    def exists(self) -> bool:
        return False

    def first(self) -> None:
        return None

    def last(self) -> None:
        return None

    def get(self, *args: Any, **kwargs: Any) -> Any:
        raise self.model.DoesNotExist(f"{self.model.__name__}: get() on none() matches nothing.")

    def page(self, size: int = 25, cursor: str | None = None) -> Page[Any]:
        return Page([], None)

    def values(self, *fields: str) -> list[dict[str, Any]]:
        return []

    def values_list(self, *fields: str, flat: bool = False) -> list[Any]:
        return []

    def grouped(self) -> dict[type, list[Any]]:
        return {}

    def in_bulk(self, keys: Any = None, **policy: Any) -> dict[Any, Any]:
        return {}

    def delete(self, **policy: Any) -> int:
        return 0
