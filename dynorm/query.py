"""Lazy, chainable querysets (Django style) and item-collection querysets.

A :class:`QuerySet` is a description (:class:`~dynorm.plan.QueryState`); builder methods
return clones and send nothing. Evaluation (iteration, ``len()``, ``list()``, ``bool()``,
``get/first/last/count/exists/page``, slicing with a step, indexing) plans the request
with :func:`dynorm.plan.plan` and sends exactly that through the read pipeline
(:mod:`dynorm.iterables`), which decodes, applies the slice window, reads older key versions
and resolves ``prefetch()`` for every evaluation path. This module keeps the builders, the
evaluation entry points and the writes that start from a queryset.

The writes that start from a queryset (``create``, ``update``, ``get_or_create``, ``bulk_*``,
``delete``) are mixed in from :mod:`dynorm.query_writes`.

``none()`` sets one flag (``QueryState.empty``): the read pipeline sends nothing for it
(:func:`dynorm.iterables.evaluate`), and each write method declares what it returns on it
(:func:`dynorm.query_writes._none_writes`), so no public method sends a request on ``none()``.
"""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    TypeVar,
    overload,
)

from . import backend
from .exceptions import InvalidQuery, ScanRequired, UnreadableItem
from .expressions import Q, refuse_paths
from .iterables import (
    Count,
    Get,
    Keys,
    Page,
    PageRead,
    Rows,
    UnknownItem,
    Window,
    evaluate,
    settle_unreadable,
    versioned_reads,
)
from .plan import Plan, QueryState, plan
from .query_writes import QuerySetWrites

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["QuerySet", "Page", "UnknownItem"]

T = TypeVar("T", bound="EntityLike")


def _named_patterns(model: type[EntityLike]) -> list[str]:
    """The named access patterns a custom queryset class adds (``by_brand``, ...), for error messages."""
    qs_class = getattr(getattr(model, "objects", None), "_queryset_class", None)
    if qs_class is None:
        return []
    return sorted(n for n in dir(qs_class)
                  if not n.startswith("_") and not hasattr(QuerySet, n) and callable(getattr(qs_class, n)))


#: What to do instead of a document path where a queryset takes whole fields only (refuse_paths)
_READ_PATH = ("read the whole field ({field!r}) and take {path} from it in Python (only({field!r}) reads just "
              "that field); filter(...) and update(...) take paths.")
_ORDER_PATH = ("DynamoDB orders a Query by its sort key only, never by a value inside a map or list; sort in "
               "Python after reading, or keep that value in a field a sort-key template uses.")


class QuerySet(QuerySetWrites[T]):
    """A lazy query on one entity (or an item collection).

    Build it from a manager (``Product.objects.filter(...)``); subclass it to add named
    access patterns and attach it with ``objects = MyQuerySet.as_manager()``.
    """

    def __init__(self, model: type[T], state: QueryState | None = None) -> None:
        self.model = model
        self._state = state or QueryState(model)
        self._window = Window()
        self._cache: list[Any] | None = None
        self.stats = backend.Stats()
        """Requests, items, scanned items and consumed capacity of this queryset's evaluations."""
        self._skip_unreadable = False
        self.unreadable: list[UnreadableItem] = []
        """Stored items the last evaluation could not decode (kept only with ``skip_unreadable()``)."""

    # -- cloning ---------------------------------------------------------------------
    def _clone(self, **changes: Any) -> QuerySet[T]:
        qs = self.__class__(self.model, self._state.with_(**changes) if changes else self._state)
        qs._window = Window(self._window.start, self._window.stop)
        qs._skip_unreadable = self._skip_unreadable
        return qs

    def skip_unreadable(self, on: bool = True) -> QuerySet[T]:
        """Read past stored items that cannot be decoded instead of raising. No I/O.

        By default an item another writer stored with a wrong attribute type (or an
        unparseable datetime) makes the read raise :class:`dynorm.UnreadableItems` once it is
        complete (the items that decoded are in its ``.items``). With ``skip_unreadable()`` the
        read returns the items that decoded and lists the others (each an
        :class:`dynorm.UnreadableItem` naming the table key and the attribute) in
        ``qs.unreadable`` and ``Page.unreadable``.
        """
        qs = self._clone()
        qs._skip_unreadable = on
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
        return self._clone(where=(*self._state.where,
                                  Q(*_expand_q(self.model, args), **_expand_pk(self.model, kwargs))))

    def exclude(self, *args: Q, **kwargs: Any) -> QuerySet[T]:
        """Drop items matching the conditions (a negated FilterExpression); no I/O."""
        self._check_unsliced("exclude")
        return self._clone(where=(*self._state.where,
                                  ~Q(*_expand_q(self.model, args), **_expand_pk(self.model, kwargs))))

    def using(self, access_path: str) -> QuerySet[T]:
        """Force an access path: a ``Meta.indexes`` name or ``"primary"``; no I/O.

        A forced secondary index is read as it is: only the items that are in it. DynamoDB
        leaves out of an index every item missing one of its key attributes (a sparse index),
        which the planner never does on its own (see :func:`dynorm.plan.sparse_fields`):
        ``using()`` is how to read such an index knowingly.

        Args:
            access_path: the access-path name.

        Returns:
            a new queryset.
        """
        return self._clone(using=access_path)

    def scan(self) -> QuerySet[T]:
        """Ask for a Scan (with a FilterExpression for any conditions); no I/O.

        A Scan reads the whole table (or index); use it only where no access path serves.
        """
        return self._clone(scan=True)

    def order_by(self, *keys: str) -> QuerySet[T]:
        """Order by the sort key: ``"sk"`` ascending, ``"-sk"`` descending (ScanIndexForward).

        A field may stand for ``sk`` when the access path's sort key orders by it
        (``order_by("-placed_at")`` on an LSI over ``placed_at``; a sort-key template's
        fields up to the first one not given); the planner then picks such an access path.
        Several fields are allowed when the access path's sort attributes order by them in
        that order: ``order_by("year", "title")`` (or ``"-year", "-title"``) on a multi-attribute
        GSI sorted by ``(year, title)``; fields pinned by an equality may appear anywhere. No I/O.

        A number field (``fields.Integer``, ``Number``, ``Decimal`` and their subclasses: any field
        whose ``ordered_key_text`` is true) orders like a string here: its key text sorts
        numerically (``P#{part}#R#{rank}`` with ``part`` given orders by ``rank``).

        Raises:
            InvalidQuery: ``"sk"`` with other keys, mixed directions, or an unknown field. When
                the queryset is evaluated or explained: no access path for its conditions orders
                by those fields (the error lists what it can order by), or the queryset is a Scan
                (no order, whatever the key: ``"sk"`` too). DynamoDB sorts by the sort key only, in
                one direction; dynorm never returns another order silently.
        """
        self._check_unsliced("order")
        if not keys:
            raise InvalidQuery("order_by needs a key: 'sk' or '-sk', or sort-key fields (DynamoDB sorts by the "
                               "sort key only).")
        directions = {k.startswith("-") for k in keys}
        if len(directions) > 1:
            raise InvalidQuery(f"order_by{keys!r}: DynamoDB returns a Query's items in one direction "
                               "(ScanIndexForward); give every key ascending or every key descending.")
        names: list[str] = []
        for key in keys:
            name = key.lstrip("-")
            if name == "pk":  # Django's alias: the primary key orders by its last field within a partition
                name = self.model._meta.key_fields[-1]
            refuse_paths(self.model._meta, [name], f"order_by({key!r})", _ORDER_PATH, InvalidQuery)
            if name != "sk" and name not in self.model._meta.fields:
                raise InvalidQuery(f"order_by({key!r}): {self.model.__name__} has no field {name!r}; use 'sk' or "
                                   "'-sk'.")
            if name == "sk" and len(keys) > 1:
                raise InvalidQuery(f"order_by{keys!r}: 'sk' is the whole sort key; give it alone.")
            names.append(name)
        first = None if names[0] == "sk" else names[0]
        return self._clone(descending=keys[0].startswith("-"), order_field=first, order_then=tuple(names[1:]),
                           ordered=True)

    def reverse(self) -> QuerySet[T]:
        """Reverse the order (toggles ScanIndexForward); no I/O."""
        self._check_unsliced("reverse")
        return self._clone(descending=not self._state.descending)

    def only(self, *fields: str) -> QuerySet[T]:
        """Read only these fields and the key fields (ProjectionExpression). No I/O.

        The other fields are *deferred*, as in Django: reading one on a result loads every
        deferred field of that item with one GetItem (seen by ``capture()``). An item read
        this way refuses ``save()`` until its deferred fields are loaded.
        """
        meta = self.model._meta
        fields = tuple(dict.fromkeys(k for f in fields for k in (meta.key_fields if f == "pk" else (f,))))
        refuse_paths(meta, fields, "only() (and values(), values_list())", _READ_PATH, InvalidQuery)
        for f in fields:
            if f not in meta.fields:
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

    def of(self, entity: type[EntityLike], **values: Any) -> QuerySet[Any]:
        """In a collection, keep only ``entity``'s items (begins_with on its sort-key prefix). No I/O."""
        if not self._state.collection:
            raise InvalidQuery("of() narrows an item collection; call collection(...) first.")
        if entity._meta.table is not self.model._meta.table:
            raise InvalidQuery(f"{entity.__name__} is not stored in table {self.model._meta.table.__name__}.")
        return self._clone(of=entity, of_values=tuple(values.items()))

    # -- planning --------------------------------------------------------------------
    def explain(self, *, count: bool = False) -> Plan:
        """Return the :class:`~dynorm.plan.Plan` of the first request, exactly as evaluation sends it. No I/O.

        Later pages of the same evaluation change only ``ExclusiveStartKey`` and ``Limit``.
        What each evaluation sends first: iteration, ``list()``, ``iterator()``: ``explain()``;
        ``first()``/``exists()``: ``qs[:1].explain()``; ``get(**kw)``: GetItem, or
        ``filter(**kw)[:2].explain()``; ``page(size)``: ``qs[:size + 1].explain()`` (one item
        more, to know whether there is a next page); ``count()``: ``explain(count=True)``.

        Args:
            count: the ``Select=COUNT`` request of :meth:`count` instead.

        Raises:
            ScanRequired, InvalidQuery, InvalidKeyValue, ValidationError: as evaluation would.
        """
        return self._count_source()[0] if count else self._plan()

    def _count_source(self) -> tuple[Plan, QuerySet[Any] | None]:
        """What :meth:`count` sends first, and the queryset whose items it counts (``None``: Select=COUNT).

        Through a version-blind multi-attribute GSI Select=COUNT would count every copy of an
        item under each key version: count() then counts what iteration returns, reading keys only.
        """
        p = self._plan(count=True)
        if p.operation == "GetItem" or not versioned_reads(self.model, p):
            return p, None
        reader = self if self._state.collection else self.only(*self.model._meta.key_fields)
        return reader._plan(), reader

    def _plan(self, *, limit: int | None = None, count: bool = False, window: bool = True) -> Plan:
        if window and not count and limit is None:
            limit = self._fetch_limit()
        try:
            return plan(self._state, limit=limit, count=count)
        except ScanRequired as exc:
            named = _named_patterns(self.model)
            if named:
                exc.args = (f"{exc} Named access patterns: {', '.join(named)}.",)
            raise

    def _fetch_limit(self) -> int | None:
        if self._window.stop is None:
            return None
        return max(self._window.stop, 0)

    # -- evaluation: each entry point runs one evaluation of dynorm.iterables ----------------
    def _fetch_all(self) -> list[Any]:
        if self._cache is None:
            backend.drive(self._fetch_all_steps())
        assert self._cache is not None
        return self._cache

    def _fetch_all_steps(self) -> backend.Steps:
        if self._cache is None:
            self.unreadable = []
            batches = yield from backend.collect(evaluate(Rows(self)))
            out = [obj for batch in batches for obj in batch]
            settle_unreadable(self, out)
            self._cache = out
        return self._cache

    async def __aiter__(self) -> AsyncIterator[T]:
        """``async for obj in qs``: the results, page by page as the responses arrive (asyncio).

        The same requests as ``for obj in qs``; a completed iteration fills the result cache.
        Leaving the loop early (``break``, a cancelled task) sends no further request.
        """
        if self._cache is not None:
            for obj in self._cache:
                yield obj
            return
        self.unreadable = []
        out: list[Any] = []
        pages = backend.astream(evaluate(Rows(self)))
        try:
            async for batch in pages:
                out += batch
                for obj in batch:
                    yield obj
        finally:
            await pages.aclose()  # type: ignore[attr-defined]
        settle_unreadable(self, [])  # every item that decoded was yielded first
        self._cache = out

    async def aiterator(self) -> AsyncIterator[T]:
        """:meth:`iterator` for asyncio: ``async for obj in qs.aiterator()`` (no result cache)."""
        self.unreadable = []
        pages = backend.astream(evaluate(Rows(self)))
        try:
            async for batch in pages:
                for obj in batch:
                    yield obj
        finally:
            await pages.aclose()  # type: ignore[attr-defined]
        settle_unreadable(self, [])

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
            qs._window = Window(start, stop)
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
        """Yield results page by page without caching them (bounded memory; Query/Scan pages).

        ``prefetch()`` is resolved page by page (one BatchGetItem per page of results).
        """
        self.unreadable = []
        for batch in backend.stream(evaluate(Rows(self))):
            yield from batch
        settle_unreadable(self, [])  # every item that decoded was yielded first

    def get(self, *args: Q, **kwargs: Any) -> T:
        """Return the one item matching the conditions.

        Issues GetItem when the whole primary key is given (and nothing else), else a Query
        reading at most two matches (``filter(...)[:2].explain()`` shows it). ``prefetch()``
        is honoured.

        Raises:
            Entity.DoesNotExist: nothing matches.
            Entity.MultipleObjectsReturned: more than one item matches.
            ScanRequired: no access path serves the conditions.
            UnreadableItems: a matching stored item cannot be decoded (names its key and attribute).
        """
        return backend.drive(self._get_steps(args, kwargs))  # type: ignore[no-any-return]

    async def aget(self, *args: Q, **kwargs: Any) -> T:
        """:meth:`get` for asyncio: ``await Product.objects.aget(product_id=...)`` (the same requests and errors)."""
        return await backend.adrive(self._get_steps(args, kwargs))  # type: ignore[no-any-return]

    def _get_steps(self, args: tuple[Q, ...], kwargs: dict[str, Any]) -> backend.Steps:
        kwargs = _expand_pk(self.model, kwargs)
        qs = self.filter(*args, **kwargs) if (args or kwargs) else self
        return (yield from evaluate(Get(qs, self, kwargs)))

    def first(self) -> T | None:
        """Return the first item in sort-key order, or ``None``.

        One Query with ``Limit`` 1 (``qs[:1].explain()``); behind a FilterExpression the
        following requests read ahead (8, 64, ... items), so a few requests find the first match.
        """
        return backend.drive(self._first_steps())  # type: ignore[no-any-return]

    async def afirst(self) -> T | None:
        """:meth:`first` for asyncio (the same request)."""
        return await backend.adrive(self._first_steps())  # type: ignore[no-any-return]

    def _first_steps(self) -> backend.Steps:
        if self._cache is not None:  # evaluated: the answer is in the cache, no request
            return self._cache[0] if self._cache else None
        qs = self[:1] if self._window.stop is None or self._window.stop > self._window.start + 1 else self
        assert isinstance(qs, QuerySet)
        items = yield from qs._fetch_all_steps()
        items = items if qs is not self else items[:1]
        return items[0] if items else None

    def last(self) -> T | None:
        """Return the last item in sort-key order, or ``None`` (a reversed Query with Limit 1)."""
        self._check_unsliced("take last() of")
        return self.reverse().first()

    async def alast(self) -> T | None:
        """:meth:`last` for asyncio (the same reversed Query, Limit 1)."""
        self._check_unsliced("take last() of")
        return await self.reverse().afirst()

    def exists(self) -> bool:
        """Return True when at least one item matches (the request of :meth:`first`)."""
        if self._cache is not None:
            return bool(self._cache)
        return self.first() is not None

    async def aexists(self) -> bool:
        """:meth:`exists` for asyncio (the request of :meth:`afirst`)."""
        if self._cache is not None:
            return bool(self._cache)
        return await self.afirst() is not None

    def count(self) -> int:
        """Count the matches: Select=COUNT over all pages (``explain(count=True)`` shows the request).

        A sliced queryset counts what the slice returns (reading it); a full primary key
        is one GetItem. On a multi-attribute GSI of an entity whose primary key holds
        ``{version}``, the copies of an item under several key versions are all in the index:
        the count is then what iteration returns (a Query reading the keys only, plus the
        BatchGetItem of iteration for older copies), at the read capacity of Select=COUNT.
        """
        return backend.drive(self._count_steps())  # type: ignore[no-any-return]

    async def acount(self) -> int:
        """:meth:`count` for asyncio (the same Select=COUNT requests)."""
        return await backend.adrive(self._count_steps())  # type: ignore[no-any-return]

    def _count_steps(self) -> backend.Steps:
        if self._cache is not None:
            return len(self._cache)
        if self._window.start or self._window.stop is not None:
            items = yield from self._fetch_all_steps()
            return len(items)
        return (yield from evaluate(Count(self)))

    def values(self, *fields: str) -> list[dict[str, Any]]:
        """Evaluate and return dicts of ``fields`` (all fields when none given).

        With fields given, only they are read (ProjectionExpression); with none given on an
        ``only()`` queryset, the fields it reads (never a GetItem per row for deferred fields).
        """
        qs, names = self._values_query(fields)
        return [{f: getattr(obj, f) for f in names} for obj in qs]

    async def avalues(self, *fields: str) -> list[dict[str, Any]]:
        """:meth:`values` for asyncio (the same Query/Scan and ProjectionExpression)."""
        qs, names = self._values_query(fields)
        return [{f: getattr(obj, f) for f in names} async for obj in qs]

    def _values_query(self, fields: tuple[str, ...]) -> tuple[QuerySet[T], tuple[str, ...]]:
        """The queryset :meth:`values` evaluates and the names of the fields it returns (no I/O)."""
        qs = self.only(*fields) if fields else self
        meta = self.model._meta
        if fields:
            names = fields
        elif self._state.projection is not None:  # the fields read, not a GetItem per row for the rest
            names = (*self._state.projection, *(f for f in meta.key_fields if f not in self._state.projection))
        else:
            names = tuple(meta.fields)
        return qs, names

    def grouped(self) -> dict[type, list[Any]]:
        """Evaluate a collection and return ``{EntityClass: [items]}`` (``UnknownItem`` for undeclared types)."""
        out: dict[type, list[Any]] = {}
        for obj in self:
            out.setdefault(type(obj), []).append(obj)
        return out

    async def agrouped(self) -> dict[type, list[Any]]:
        """:meth:`grouped` for asyncio (the same Query)."""
        out: dict[type, list[Any]] = {}
        async for obj in self:
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
            UnreadableItems: an item of the page cannot be decoded; ``.items`` holds the page's
                other items and ``.cursor`` the next page's cursor (or use ``skip_unreadable()``).
        """
        return backend.drive(self._page_steps(size, cursor))  # type: ignore[no-any-return]

    async def apage(self, size: int = 25, cursor: str | None = None) -> Page[T]:
        """:meth:`page` for asyncio: ``await qs.apage(25, cursor)`` (the same requests and cursors)."""
        return await backend.adrive(self._page_steps(size, cursor))  # type: ignore[no-any-return]

    def _page_steps(self, size: int, cursor: str | None) -> backend.Steps:
        if not isinstance(size, int) or not 1 <= size <= 1000:
            raise InvalidQuery(f"page size must be an int from 1 to 1000, got {size!r}.")
        self._check_unsliced("page")
        return (yield from evaluate(PageRead(self, size, cursor)))

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
        return backend.drive(self._in_bulk_steps(keys, policy))  # type: ignore[no-any-return]

    async def ain_bulk(self, keys: Iterable[Mapping[str, Any] | Any] | None = None, **policy: Any) -> dict[Any, T]:
        """:meth:`in_bulk` for asyncio (the same BatchGetItem requests)."""
        return await backend.adrive(self._in_bulk_steps(keys, policy))  # type: ignore[no-any-return]

    def _in_bulk_steps(self, keys: Iterable[Mapping[str, Any] | Any] | None, policy: dict[str, Any]) -> backend.Steps:
        if keys is None:
            objs = yield from self._fetch_all_steps()
            return {obj.pk: obj for obj in objs}
        return (yield from evaluate(Keys(self, keys, policy)))

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

    # -- Django habits: small methods on the public evaluation API ----------------------
    def none(self) -> QuerySet[T]:
        """Return a queryset that matches nothing and never sends a request (Django's ``none()``).

        It chains like any queryset (``qs.none().filter(...)`` is still empty); evaluating it,
        ``count()``, ``page()``, ``delete()`` and the rest return empty results without I/O.
        """
        return self._clone(empty=True)

    def values_list(self, *fields: str, flat: bool = False) -> list[Any]:
        """Evaluate and return tuples of ``fields`` (all fields when none given), as Django does.

        Only the named fields are read (ProjectionExpression). Issues the queryset's Query/Scan.

        Args:
            *fields: field names (``"pk"`` is the primary-key value, see ``Entity.pk``).
            flat: with exactly one field, return the bare values instead of 1-tuples.

        Raises:
            InvalidQuery: ``flat=True`` with more than one field, or an unknown field (before I/O).
        """
        qs, names = self._values_list_query(fields, flat)
        rows = [tuple(getattr(obj, n) for n in names) for obj in qs]
        return [r[0] for r in rows] if flat else rows

    async def avalues_list(self, *fields: str, flat: bool = False) -> list[Any]:
        """:meth:`values_list` for asyncio (the same Query/Scan and ProjectionExpression)."""
        qs, names = self._values_list_query(fields, flat)
        rows = [tuple(getattr(obj, n) for n in names) async for obj in qs]
        return [r[0] for r in rows] if flat else rows

    def _values_list_query(self, fields: tuple[str, ...], flat: bool) -> tuple[QuerySet[T], tuple[str, ...]]:
        """The queryset :meth:`values_list` evaluates and the names of its columns (no I/O)."""
        if flat and len(fields) != 1:
            raise InvalidQuery(f"values_list(flat=True) on {self.model.__name__} needs exactly one field, "
                               f"got {len(fields)}.")
        meta = self.model._meta
        names = fields or tuple(meta.fields)
        read = tuple(dict.fromkeys(f for n in names for f in (meta.key_fields if n == "pk" else (n,))))
        return (self.only(*read) if fields else self), names

    def latest(self, *fields: str) -> T:
        """Return the item with the greatest sort key (a reversed Query, Limit 1), as Django's ``latest()``.

        DynamoDB orders only by the sort key of the access path, so ``fields`` (optional) must
        order as that sort key does: one field ``order_by()`` accepts, or a prefix of the sort
        key's fields whose key text sorts like their values. A leading ``"-"`` reverses the
        direction, as in Django (``latest("-seq")`` is the smallest ``seq``).

        Raises:
            Entity.DoesNotExist: nothing matches.
            InvalidQuery: ``fields`` do not order as the access path's sort key, mixed signs, or
                the query is a Scan (no order); raised before any request.
        """
        qs, descending = self._ordered_by("latest", fields)
        obj = qs.first() if descending else qs.last()
        if obj is None:
            raise self.model.DoesNotExist(f"latest(): no {self.model.__name__} matches.")
        return obj

    async def alatest(self, *fields: str) -> T:
        """:meth:`latest` for asyncio (the same reversed Query, Limit 1, and errors)."""
        qs, descending = self._ordered_by("latest", fields)
        obj = await (qs.afirst() if descending else qs.alast())
        if obj is None:
            raise self.model.DoesNotExist(f"latest(): no {self.model.__name__} matches.")
        return obj

    def earliest(self, *fields: str) -> T:
        """Return the item with the smallest sort key (a Query, Limit 1), as Django's ``earliest()``.

        Raises:
            Entity.DoesNotExist: nothing matches.
            InvalidQuery: as :meth:`latest`.
        """
        qs, descending = self._ordered_by("earliest", fields)
        obj = qs.last() if descending else qs.first()
        if obj is None:
            raise self.model.DoesNotExist(f"earliest(): no {self.model.__name__} matches.")
        return obj

    async def aearliest(self, *fields: str) -> T:
        """:meth:`earliest` for asyncio (the same Query, Limit 1, and errors)."""
        qs, descending = self._ordered_by("earliest", fields)
        obj = await (qs.alast() if descending else qs.afirst())
        if obj is None:
            raise self.model.DoesNotExist(f"earliest(): no {self.model.__name__} matches.")
        return obj

    def _ordered_by(self, what: str, fields: tuple[str, ...]) -> tuple[QuerySet[T], bool]:
        """The queryset ordered ascending by ``fields`` and whether they asked for descending order.

        Validated against the plan (no I/O): InvalidQuery unless the access path's sort key
        orders exactly as ``fields`` do.
        """
        from .plan import _text_orders

        self._check_unsliced(f"take {what}() of")
        p = self.explain()
        if p.operation == "Scan":
            raise InvalidQuery(f"{what}() on {self.model.__name__}: a Scan has no order; filter on a partition "
                               "key so the query is a Query ordered by its sort key.")
        if not fields:
            return self, False
        signs = {f.startswith("-") for f in fields}
        names = [f.lstrip("-") for f in fields]
        refuse = (f"{what}({', '.join(map(repr, fields))}) on {self.model.__name__}: DynamoDB orders a Query by "
                  f"the sort key of its access path only ({p.index or 'the table'})")
        if len(signs) > 1:
            raise InvalidQuery(f"{refuse}, in one direction: give all fields with or all without '-'.")
        descending = signs == {True}
        if len(names) == 1:
            try:
                qs = self.order_by(names[0])
                qs.explain()
            except InvalidQuery as exc:
                raise InvalidQuery(f"{refuse}; {exc}") from None
            return qs, descending
        bound = p.bound
        sk = list(bound.sk.fields) if bound is not None and bound.sk is not None else []
        meta = self.model._meta
        if sk[:len(names)] != names or not all(_text_orders(meta, bound.sk, n) for n in names):  # type: ignore[union-attr]
            raise InvalidQuery(f"{refuse}: its sort-key fields are ({', '.join(sk) or 'none'}), and {what}() "
                               "needs a prefix of them whose key text sorts like the values; sort in Python "
                               "(max(qs, key=...)) or declare an Index sorted that way.")
        return self.order_by("sk"), descending

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


def _expand_q(model: Any, qs: tuple[Q, ...]) -> tuple[Q, ...]:
    """Rewrite the ``pk`` alias inside ``Q`` trees (``Q(pk=1) | Q(pk=2)``), keeping connectors and negation."""
    def walk(q: Q) -> Q:
        children: list[Any] = []
        for child in q.children:
            if isinstance(child, Q):
                children.append(walk(child))
            elif child[0] == "pk" or child[0].startswith("pk__"):
                children.append(Q(**_expand_pk(model, {child[0]: child[1]})))
            else:
                children.append(child)
        out = Q(_connector=q.connector, _negated=q.negated)
        out.children = children
        return out
    return tuple(walk(q) if isinstance(q, Q) else q for q in qs)


_DJANGO_ONLY = {
    "select_related": "DynamoDB has no joins: use prefetch(\"<reference field>\") (one BatchGetItem per 100 "
                      "referenced items) or obj.related(name)",
    "aggregate": "DynamoDB computes no aggregates: count() gives Select=COUNT; sum/min/max/avg in Python over "
                 "values_list(field, flat=True), or keep a counter item updated with F() in the same transaction",
    "annotate": "DynamoDB computes nothing per item: compute the value in Python, or store it as a field "
                "written with the item",
    "distinct": "DynamoDB returns each item once per Query/Scan: results are already distinct; for distinct "
                "values use set(values_list(field, flat=True))",
    "extra": "dynorm builds every request itself: use filter()/Q, or backend.call() for a raw request",
    "raw": "dynorm builds every request itself: use backend.call(\"Query\", params) for a raw request",
    "defer": "use only(<fields to read>): the other fields are deferred",
    "select_for_update": "DynamoDB has no row locks: use fields.Version() (optimistic locking) or "
                         "dynorm.transaction()",
    "union": "run the queries and combine them in Python (itertools.chain), or one filter(Q(...) | Q(...))",
    "intersection": "filter with both conditions (filter(a).filter(b))",
    "difference": "filter(...).exclude(...)",
    "dates": "values_list(\"<date field>\", flat=True) and group in Python",
    "datetimes": "values_list(\"<datetime field>\", flat=True) and group in Python",
    "alias": "compute the value in Python",
}


def _django_only(name: str) -> Callable[..., Any]:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise InvalidQuery(f"{self.model.__name__}.objects.{name}() is not in dynorm: {_DJANGO_ONLY[name]}.")
    refuse.__name__ = name
    refuse.__doc__ = f"Not in dynorm (raises InvalidQuery, no request): {_DJANGO_ONLY[name]}."
    return refuse


for _name in _DJANGO_ONLY:
    setattr(QuerySet, _name, _django_only(_name))

