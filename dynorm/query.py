"""Lazy, chainable querysets (Django style) and item-collection querysets.

A :class:`QuerySet` is a description (:class:`~dynorm.plan.QueryState`); builder methods
return clones and send nothing. Evaluation (iteration, ``len()``, ``list()``, ``bool()``,
``get/first/last/count/exists/page``, slicing with a step, indexing) plans the request
with :func:`dynorm.plan.plan` and sends exactly that through one pipeline
(``QuerySet._run`` over :func:`dynorm.backend.paginate`), which decodes, applies the slice
window and resolves ``prefetch()`` for every evaluation path.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncIterator,
    Callable,
    Generic,
    Iterable,
    Iterator,
    Mapping,
    TypeVar,
    overload,
)

from . import _codec, backend, conf
from ._deferred import DeferredLoader
from .cursor import decode_cursor, encode_cursor, signing_secret
from .exceptions import (
    DynormError,
    InvalidCursor,
    InvalidQuery,
    ScanRequired,
    UnreadableItem,
    UnreadableItems,
)
from .expressions import Q
from .fields import unreadable_item, validate_values
from .keys import VERSION
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
    unreadable: list[UnreadableItem] = field(default_factory=list)
    """Items of this page that could not be decoded (only with ``skip_unreadable()``)."""

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class _Tail:
    """What the pipeline learnt past a page's end: the raw last item returned, and whether more match.

    For a GetItem, ``more`` says whether any item is stored under the key (whether or not it
    meets the plan's checks): ``get()`` falls back to older key versions only when none is.
    """

    last: dict[str, Any] | None = None
    more: bool = False


@dataclass
class _Window:
    start: int = 0
    stop: int | None = None


def _named_patterns(model: type[Entity]) -> list[str]:
    """The named access patterns a custom queryset class adds (``by_brand``, ...), for error messages."""
    qs_class = getattr(getattr(model, "objects", None), "_queryset_class", None)
    if qs_class is None:
        return []
    return sorted(n for n in dir(qs_class)
                  if not n.startswith("_") and not hasattr(QuerySet, n) and callable(getattr(qs_class, n)))


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
        self._skip_unreadable = False
        self.unreadable: list[UnreadableItem] = []
        """Stored items the last evaluation could not decode (kept only with ``skip_unreadable()``)."""

    # -- cloning ---------------------------------------------------------------------
    def _clone(self, **changes: Any) -> QuerySet[T]:
        qs = self.__class__(self.model, self._state.with_(**changes) if changes else self._state)
        qs._window = _Window(self._window.start, self._window.stop)
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

    def _settle_unreadable(self, items: list[Any], cursor: str | None = None) -> None:
        """Raise :class:`UnreadableItems` for the items the evaluation could not decode (unless skipping)."""
        if not self.unreadable or self._skip_unreadable:
            return
        errors = self.unreadable
        more = f" (and {len(errors) - 1} more, in .errors)" if len(errors) > 1 else ""
        raise UnreadableItems(
            f"{errors[0]}{more} The {len(items)} item(s) that decoded are in .items"
            f"{' and .cursor continues the pages' if cursor else ''}; use .skip_unreadable() to read past "
            "unreadable items, or repair them (.errors[i].raw).", errors, items, cursor)

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

    def of(self, entity: type[Entity], **values: Any) -> QuerySet[Any]:
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
        if p.operation == "GetItem" or not _versioned_reads(self.model, p):
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

    # -- execution: the one result pipeline --------------------------------------------
    def _decoder(self, p: Plan) -> Any:
        decode_full = self._decoder_full(p)
        if p.projection is None or self._state.projection is None:
            return decode_full
        meta = self.model._meta
        read = {*self._state.projection, *meta.key_fields}
        if meta.version_field:
            read.add(meta.version_field)
        consistent = self._state.consistent

        def partial(raw: dict[str, Any]) -> Any:
            obj = decode_full(raw)
            if obj is None or isinstance(obj, UnknownItem):
                return obj
            values = obj.attribute_values
            unread = frozenset(n for n in obj._meta.fields if n not in read)
            for name in unread:
                values.pop(name, None)  # never a default standing in for a value not read
                obj._state.read_as.pop(name, None)  # nor an attribute not projected taken as absent
            obj._state.partial = True  # saving it would drop the fields not read
            # a partial of a module function, not a lambda: the instance stays picklable
            obj._state.deferred = (unread, DeferredLoader(consistent))
            return obj

        return partial

    def _decoder_full(self, p: Plan) -> Any:
        table = self.model._meta.table
        type_attr = table._meta.type_attribute
        entities = table._entities
        wanted = p.entity_types
        of = self._state.of
        key_attrs = (table._meta.pk_attribute, table._meta.sk_attribute or "")
        unreadable = self.unreadable

        def read(cls: Any, raw: dict[str, Any]) -> Any:
            try:
                return cls.from_raw_data(raw)
            except Exception as exc:  # noqa: BLE001 - one bad item must not hide the others
                unreadable.append(unreadable_item(cls, raw, exc, key_attrs))
                return None

        def decode(raw: dict[str, Any]) -> Any:
            t = raw.get(type_attr, {}).get("S")
            cls = entities.get(t) if t is not None else None
            if wanted is not None:
                if t not in wanted:
                    return None
                assert cls is not None
                return read(cls, raw)
            if cls is None:
                return None if of is not None else UnknownItem(raw, type_attr)
            if of is not None and cls is not of:
                return None
            return read(cls, raw)

        return decode

    def _run(self, p: Plan, *, start: int = 0, stop: int | None = None, start_key: dict[str, Any] | None = None,
             tail: _Tail | None = None, prefetch: bool = True) -> Iterator[list[Any]]:
        """Drive :meth:`_run_steps` synchronously: one list of results per response."""
        return backend.stream(self._run_steps(p, start=start, stop=stop, start_key=start_key, tail=tail,
                                              prefetch=prefetch))

    def _run_steps(self, p: Plan, *, start: int = 0, stop: int | None = None,
                   start_key: dict[str, Any] | None = None, tail: _Tail | None = None,
                   prefetch: bool = True) -> backend.Steps:
        """The one result pipeline: send ``p`` page by page, decode, apply the window, prefetch.

        Written as steps (:mod:`dynorm.backend`: ``Send``/``Sleep``/``Emit``) so that the sync
        driver and the asyncio driver share every decision and differ only in the I/O call.

        Every evaluation goes through here (iteration, ``iterator()``, ``page()``, ``get()``,
        ``first()``, ``exists()``). Yields one list of results per response: the matches
        number ``start`` up to ``stop`` (exclusive), with ``prefetch()`` resolved. The first
        request is ``p.params`` exactly; later ones change only ``ExclusiveStartKey`` and
        ``Limit``: the matches still needed, or, when a FilterExpression (or a collection's
        narrowing, or a multi-attribute GSI holding other types) can drop items, a read-ahead growing
        eightfold per request (up to 1000),
        so ``first()`` behind a selective filter costs a few requests, not one per item.

        With ``tail``, one match more than ``stop`` is read to learn whether there is more;
        ``tail`` then holds the raw last returned item and whether more matches exist.

        Yields :class:`~dynorm.backend.Send`/``Sleep`` steps and an ``Emit`` of each list of results.
        """
        decode = self._decoder(p)
        if p.operation == "GetItem":
            resp = yield backend.Send("GetItem", p.params, self.stats, (self.model,))
            item = resp.get("Item")
            if tail is not None:  # get(): whether any item is stored under this key (checks aside)
                tail.more = item is not None
            obj = decode(item) if item and p.admits(item) else None
            objs = [obj] if obj is not None and start == 0 and (stop is None or stop > 0) else []
            if tail is not None:
                tail.last = item
            if prefetch:
                yield from self._prefetch_steps(objs)
            yield backend.Emit(objs)
            return
        if stop is not None and stop <= start:
            return  # qs[:0] reads nothing
        peek = 1 if tail is not None else 0
        first_limit = p.params.get("Limit")
        # a multi-attribute GSI holds every item with its attributes, of any type (one no model
        # declares, too), and iteration drops the foreign ones: read ahead as behind a filter
        read_ahead = ("FilterExpression" in p.params or p.entity_types is None
                      or (p.bound is not None and p.bound.is_multi))
        seen = 0  # matches so far, before the window

        def next_limit(sent: int) -> int | None:
            if first_limit is None or stop is None:
                return None
            need = stop + peek - seen
            return max(need, min(first_limit * 8 ** sent, 1000)) if read_ahead else need

        versions = _versioned_reads(self.model, p)
        if versions:
            read_ahead = True  # copies at other key versions are dropped after the read

        older = self._older_key_requests(p) if p.whole_key and not start_key else []
        fallback: str | None = None
        pager = backend.Pager(p.params, start_key, next_limit)
        while pager.request is not None:
            resp = yield backend.Send(p.operation, pager.request, self.stats, (self.model,))
            if older and pager.sent == 0 and not resp.get("ScannedCount") and not resp.get("LastEvaluatedKey"):
                # nothing at all under the current key (a Query on one whole key: conditions GetItem
                # cannot check): Meta.read_versions may hold the item, as get() finds it
                for version, request in older:
                    again = yield backend.Send(p.operation, {**pager.request, **request}, self.stats, (self.model,))
                    if again.get("ScannedCount"):
                        resp, fallback = again, version
                        break
            pager.got(resp)
            batch: list[Any] = []
            raws = resp.get("Items", ())
            decoded: list[tuple[Any, Any]] = [(raw, decode(raw)) for raw in raws]
            if versions:
                decoded = yield from _current_copies(self.model, decoded)
            for raw, obj in decoded:
                if obj is None:
                    continue
                if fallback is not None and hasattr(obj, "_state"):
                    obj._state.fallback = fallback  # a write moves it to the current key first
                if stop is not None and seen >= stop:  # a read-ahead or the peek went past the window
                    if tail is not None:
                        tail.more = True
                    break
                if seen >= start:
                    batch.append(obj)
                    if tail is not None:
                        tail.last = raw
                seen += 1
            if prefetch:
                yield from self._prefetch_steps(batch)
            if batch:
                yield backend.Emit(batch)
            if tail is not None and tail.more:
                return
            if stop is not None and seen >= stop and tail is None:
                return

    def _older_key_requests(self, p: Plan) -> list[tuple[str, dict[str, Any]]]:
        """The ``Meta.read_versions`` fallback of a Query on one whole primary key (``p.whole_key``).

        Returns ``(version, ExpressionAttributeValues)`` per older key version, in order: the same
        request with that version's key in the key condition (one more Query per version tried,
        sent only when nothing at all is stored under the current key).
        """
        meta = self.model._meta
        older = [v for v in meta.read_versions if v != meta.key_version]
        if not older or self._state.collection:
            return []
        values = {f: v for q in self._state.where for f, lookup, v in q.flatten_and()[0] if lookup == "exact"}
        if not all(f in values for f in meta.key_fields):
            return []
        values = {f: meta.fields[f].validate(v, meta.entity) if f in meta.key_fields else v
                  for f, v in values.items()}
        out = []
        for version in older:
            key = meta.primary_key(values, version)
            eav = dict(p.params.get("ExpressionAttributeValues", {}))
            for attr, placeholder in p.whole_key:
                eav[placeholder] = key[attr]
            out.append((version, {"ExpressionAttributeValues": eav}))
        return out

    def _fetch_all(self) -> list[Any]:
        if self._cache is None:
            backend.drive(self._fetch_all_steps())
        assert self._cache is not None
        return self._cache

    def _fetch_all_steps(self) -> backend.Steps:
        if self._cache is None:
            p = self._plan()
            self.unreadable = []
            batches = yield from backend.collect(self._run_steps(p, start=self._window.start, stop=self._window.stop))
            out = [obj for batch in batches for obj in batch]
            self._settle_unreadable(out)
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
        p = self._plan()
        self.unreadable = []
        out: list[Any] = []
        pages = backend.astream(self._run_steps(p, start=self._window.start, stop=self._window.stop))
        try:
            async for batch in pages:
                out += batch
                for obj in batch:
                    yield obj
        finally:
            await pages.aclose()  # type: ignore[attr-defined]
        self._settle_unreadable([])  # every item that decoded was yielded first
        self._cache = out

    async def aiterator(self) -> AsyncIterator[T]:
        """:meth:`iterator` for asyncio: ``async for obj in qs.aiterator()`` (no result cache)."""
        p = self._plan()
        self.unreadable = []
        pages = backend.astream(self._run_steps(p, start=self._window.start, stop=self._window.stop))
        try:
            async for batch in pages:
                for obj in batch:
                    yield obj
        finally:
            await pages.aclose()  # type: ignore[attr-defined]
        self._settle_unreadable([])

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
        """Yield results page by page without caching them (bounded memory; Query/Scan pages).

        ``prefetch()`` is resolved page by page (one BatchGetItem per page of results).
        """
        p = self._plan()
        self.unreadable = []
        for batch in self._run(p, start=self._window.start, stop=self._window.stop):
            yield from batch
        self._settle_unreadable([])  # every item that decoded was yielded first

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
        p = qs._plan(limit=None if qs._window.stop is not None else 2)
        items: list[Any] = []
        qs.unreadable = []
        if p.operation == "GetItem":
            stored = _Tail()
            items = yield from backend.first_emit(qs._run_steps(p, tail=stored), [])
            if not items and not stored.more:
                # nothing at all under the current key: Meta.read_versions may hold it. An item
                # that is there but fails the checks shadows every older copy (that copy is
                # not the item: iteration never returns it, and saving it would overwrite it)
                items = yield from qs._get_older_versions(p, kwargs)
        else:
            stop = qs._window.start + 2 if qs._window.stop is None else min(qs._window.stop, qs._window.start + 2)
            batches = yield from backend.collect(qs._run_steps(p, start=qs._window.start, stop=stop))
            items = [obj for batch in batches for obj in batch]
        self.stats = qs.stats
        self.unreadable = qs.unreadable
        items = _matching_keys(self.model, qs._state, items)
        self._settle_unreadable(items)
        if len(items) == 1:
            return items[0]  # type: ignore[no-any-return]
        described = ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "the given conditions"
        if not items:
            raise self.model.DoesNotExist(
                f"{self.model.__name__} matching {described} does not exist ({p.operation} on {p.table}"
                f"{' index ' + p.index if p.index else ''}).")
        raise self.model.MultipleObjectsReturned(
            f"get() matched more than one {self.model.__name__} for {described}; add conditions "
            "or use filter().")

    def _get_older_versions(self, p: Plan, given: dict[str, Any]) -> backend.Steps:
        """``Meta.read_versions`` fallback: GetItem under each older key version, in order.

        Costs one extra GetItem per older version tried, and, when none holds the item, one
        consistent GetItem of the current key again (a migration may have moved the item there
        between the reads). Any write on an instance found this way first moves its item to the
        current key version (:mod:`dynorm.fallback`).
        """
        meta = self.model._meta
        older = [v for v in meta.read_versions if v != meta.key_version]
        if not older:
            return []
        leaves = [lf for q in self._state.where for lf in q.flatten_and()[0]]
        values = {**{f: v for f, lookup, v in leaves if lookup == "exact"}, **given}
        rev = meta.table._meta.revision_attribute
        for version in older:
            key = meta.primary_key(values, version)
            stored = _Tail()
            found = yield from backend.first_emit(self._run_steps(replace(p, params={**p.params, "Key": key},
                                                                           key=key), tail=stored), [])
            if found:
                found[0]._state.fallback = version
                if p.projection is None:  # {}: read without a token; None (projected read): not known
                    raw = stored.last or {}
                    found[0]._state.fallback_revision = {rev: raw[rev]} if rev in raw else {}
                return found
            if stored.more:
                return []  # the item under this version fails the checks: it shadows older ones
        # a migration may have moved the item to the current key version between our reads:
        # one consistent re-read of the current key tells "moved meanwhile" from "does not exist"
        again = yield from backend.first_emit(self._run_steps(replace(p, params={**p.params, "ConsistentRead": True})),
                                              [])
        return again  # type: ignore[no-any-return]

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
        p, reader = self._count_source()
        if p.operation == "GetItem":
            batches = yield from backend.collect(self._run_steps(p, prefetch=False))
            return sum(len(batch) for batch in batches)
        if reader is not None:
            # Select=COUNT would count every copy of an item under each key version (and
            # versions this app does not read): count what iteration returns, reading keys only
            reader = reader._clone() if reader is self else reader
            reader.unreadable = []
            batches = yield from backend.collect(reader._run_steps(p, prefetch=False))
            self.stats = reader.stats
            return sum(len(batch) for batch in batches)
        responses = yield from backend.collect(backend.page_steps(p.operation, p.params, stats=self.stats,
                                                                  entities=(self.model,)))
        if p.whole_key and not any(resp.get("ScannedCount") for resp in responses):
            # nothing at all under the current key: the read_versions fallback, as iteration does
            for _version, request in self._older_key_requests(p):
                resp = yield backend.Send(p.operation, {**p.params, **request}, self.stats, (self.model,))
                if resp.get("ScannedCount"):
                    return int(resp.get("Count", 0))
        return sum(int(resp.get("Count", 0)) for resp in responses)

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
        # one item more than the page: a page that took the last item carries no cursor
        p = self._plan(limit=size + 1)
        self.unreadable = []
        if p.operation == "GetItem":
            if cursor is not None:
                raise InvalidCursor("this query reads one item (GetItem) and has no further pages.")
            found = yield from backend.first_emit(self._run_steps(p), [])
            self._settle_unreadable(found)
            return Page(found, None, list(self.unreadable))
        context, secret, key_attrs = self._cursor_context(p)
        start = decode_cursor(cursor, context, secret, key_attrs) if cursor is not None else None
        tail = _Tail()
        batches = yield from backend.collect(self._run_steps(p, stop=size, start_key=start, tail=tail))
        items: list[Any] = [obj for batch in batches for obj in batch]
        if not tail.more or tail.last is None:
            self._settle_unreadable(items)
            return Page(items, None, list(self.unreadable))
        # the cursor is the key of the last item returned (the attributes DynamoDB takes as
        # ExclusiveStartKey), not the LastEvaluatedKey, which may lie past the extra item read
        last_key = {a: tail.last[a] for a in key_attrs if a in tail.last}
        next_cursor = encode_cursor(last_key, context, secret)
        self._settle_unreadable(items, next_cursor)
        return Page(items, next_cursor, list(self.unreadable))

    def _cursor_context(self, p: Plan) -> tuple[dict[str, Any], str, set[str]]:
        meta = self.model._meta
        tmeta = meta.table._meta
        context = {"t": p.table, "e": meta.entity_type, "i": p.index or "", "kv": meta.key_version,
                   "q": p.fingerprint()}
        settings = conf.get_settings()
        secret = signing_secret(settings.cursor_secret, settings.endpoint, settings.is_local)
        key_attrs = {tmeta.pk_attribute}
        if tmeta.sk_attribute:
            key_attrs.add(tmeta.sk_attribute)
        if p.bound is not None:
            key_attrs |= set(p.bound.key_attrs)
        elif p.index:
            key_attrs |= {a for pair in tmeta.gsis.values() for a in pair if a}
            key_attrs |= {a for multi in tmeta.multi_gsis.values() for a in multi.attributes}
        return context, secret, key_attrs

    # -- writes that start from a queryset ------------------------------------------
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

    def update(self, *, condition: Q | None = None, **changes: Any) -> T:
        """Update the one item this queryset names (its full primary key) without reading it first.

        One UpdateItem (ReturnValues ALL_NEW, conditional on the item existing); see
        :meth:`Entity.update` for ``changes`` and ``condition``. On a versioned entity the
        version is incremented (no version check: nothing was read). When the item is not
        under the current key version and ``Meta.read_versions`` lists older ones, the same
        fallback as :meth:`get` finds it; it is moved to the current keys and updated there
        (see :mod:`dynorm.fallback`).

        Returns:
            the item as written.

        Raises:
            InvalidQuery: the queryset does not name one item by its primary key.
            DoesNotExist: there is no such item. ConditionFailed: ``condition`` did not hold.
        """
        return backend.drive(self._update_steps(condition, changes))  # type: ignore[no-any-return]

    async def aupdate(self, *, condition: Q | None = None, **changes: Any) -> T:
        """:meth:`update` for asyncio (the same UpdateItem and errors)."""
        return await backend.adrive(self._update_steps(condition, changes))  # type: ignore[no-any-return]

    def _update_steps(self, condition: Q | None, changes: dict[str, Any]) -> backend.Steps:
        from .sender import send_steps
        from .writes import prepare_update

        key = self._primary_key_filter("update")
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
            StaleWrite: every attempt lost its race, or botocore retried a request whose response
                was lost and the item changed since (``exc.maybe_applied`` is True: the change may
                have been applied once; fn is never run again after such an attempt).
                DoesNotExist: no such item.
            ModelError: the entity has no ``fields.Version()`` (without it a race cannot be detected).
        """
        return backend.drive(self._update_with_retry_steps(key, fn, attempts, base_delay))  # type: ignore

    async def aupdate_with_retry(self, key: Mapping[str, Any] | Entity, fn: Callable[[T], Any], attempts: int = 5,
                                 base_delay: float = 0.02) -> T:
        """:meth:`update_with_retry` for asyncio (``fn`` is a plain function; waits with ``asyncio.sleep``)."""
        return await backend.adrive(self._update_with_retry_steps(key, fn, attempts, base_delay))  # type: ignore

    def _update_with_retry_steps(self, key: Mapping[str, Any] | Entity, fn: Callable[[T], Any], attempts: int,
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

    def get_or_create(self, defaults: Mapping[str, Any] | None = None, **kwargs: Any) -> tuple[T, bool]:
        """Return ``(obj, created)``: the item with this primary key, created from ``kwargs`` + ``defaults`` if missing.

        Race-safe: the create is conditional (``attribute_not_exists``); a concurrent creator
        wins and this call returns its item (read consistently). ``kwargs`` must hold the
        primary-key fields.

        Requests: GetItem, then PutItem if missing (then GetItem if another caller won).
        """
        return backend.drive(self._get_or_create_steps(defaults, kwargs))  # type: ignore[no-any-return]

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

    async def abulk_create(self, objs: Iterable[T], **policy: Any) -> list[T]:
        """:meth:`bulk_create` for asyncio (the same BatchWriteItem requests, retries and errors)."""
        from .batch import RetryPolicy, bulk_create_steps

        return await backend.adrive(bulk_create_steps(self.model, objs, RetryPolicy(**policy)))  # type: ignore

    def bulk_delete(self, targets: Iterable[T | Mapping[str, Any]], **policy: Any) -> int:
        """Delete many items (instances or key dicts) with BatchWriteItem; see :func:`dynorm.batch.bulk_delete`."""
        from .batch import RetryPolicy, bulk_delete

        return bulk_delete(self.model, targets, RetryPolicy(**policy))  # type: ignore[arg-type]

    async def abulk_delete(self, targets: Iterable[T | Mapping[str, Any]], **policy: Any) -> int:
        """:meth:`bulk_delete` for asyncio (the same BatchWriteItem requests, retries and errors)."""
        from .batch import RetryPolicy, bulk_delete_steps

        return await backend.adrive(bulk_delete_steps(self.model, targets, RetryPolicy(**policy)))  # type: ignore

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
        from .batch import RetryPolicy, batch_get_steps
        from .writes import primary_key_of

        fields = self.model._meta.key_fields
        if keys is None:
            objs = yield from self._fetch_all_steps()
            return {obj.pk: obj for obj in objs}
        if self._state.where or self._state.collection or self._window.start or self._window.stop is not None:
            # BatchGetItem takes no condition: the filter would be silently ignored
            raise InvalidQuery(
                f"in_bulk(ids) on a filtered {self.model.__name__} queryset: BatchGetItem cannot apply the "
                f"filter; call {self.model.__name__}.objects.in_bulk(ids) and filter the found items in Python.")
        pairs = []
        wanted: list[Mapping[str, Any]] = []
        lossy = bool(self.model._meta.primary.pk.lossy_fields or (
            self.model._meta.primary.sk is not None and self.model._meta.primary.sk.lossy_fields))
        for k in keys:
            if isinstance(k, tuple) and len(k) == len(fields) and len(fields) > 1:
                k = dict(zip(fields, k))
            kd = k if isinstance(k, Mapping) else ({fields[0]: k} if len(fields) == 1 else None)
            if kd is None:
                raise InvalidQuery(f"in_bulk on {self.model.__name__}: give key dicts of {', '.join(fields)}.")
            pairs.append((self.model, primary_key_of(self.model, kd)))
            wanted.append(kd)
        self.unreadable = []
        found = yield from batch_get_steps(pairs, consistent=self._state.consistent, policy=RetryPolicy(**policy),
                                           unreadable=self.unreadable if self._skip_unreadable else None)
        meta = self.model._meta
        # a key through a lossy spec ({name:.3}, {day:%Y-%m-%d}) is shared by different values:
        # keep only the items whose key fields hold a value that was asked for
        asked = {tuple(meta.fields[f].validate(kd[f], meta.entity) for f in fields)
                 for kd in wanted} if lossy else set()
        out: dict[Any, T] = {}
        for obj in found:
            kv = tuple(getattr(obj, f) for f in fields)
            if lossy and kv not in asked:
                continue
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

    def _prefetch_steps(self, objs: list[Any]) -> backend.Steps:
        if not self._state.prefetch or not objs:
            return
        from .batch import batch_get_steps
        from .writes import primary_key_of

        wanted: list[tuple[Any, str, Any, dict[str, Any]]] = []
        for name in self._state.prefetch:
            field = self.model._meta.fields[name]
            target = field.target  # type: ignore[attr-defined]
            for obj in objs:
                value = getattr(obj, name, None)
                if value:
                    wanted.append((obj, name, target, primary_key_of(target, value)))
        found = yield from batch_get_steps([(t, k) for _, _, t, k in wanted], consistent=self._state.consistent,
                                           unreadable=self.unreadable if self._skip_unreadable else None)
        index = {(type(o), tuple(o._primary_key_av()[a]["S"] for a in o._primary_key_av())): o for o in found}
        for obj, name, target, key in wanted:
            hit = index.get((target, tuple(v["S"] for v in key.values())))
            obj._state.related[name] = hit

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

    def bulk_update(self, objs: Iterable[T], fields: Iterable[str], **options: Any) -> int:
        """Write ``fields`` of many instances: one UpdateItem per object, 100 per TransactWriteItems.

        See :func:`dynorm.transaction.bulk_update` (each chunk of 100 commits or fails whole;
        with ``fields.Version()`` every update is conditional on the version read).

        Returns:
            The number of items updated.
        """
        from .transaction import bulk_update

        return bulk_update(self.model, objs, fields, **options)

    async def abulk_update(self, objs: Iterable[T], fields: Iterable[str], **options: Any) -> int:
        """:meth:`bulk_update` for asyncio (the same TransactWriteItems chunks, conditions and errors)."""
        from .transaction import bulk_update_steps

        return await backend.adrive(bulk_update_steps(self.model, objs, fields, **options))  # type: ignore


def _versioned_reads(model: Any, p: Plan) -> bool:
    """True when ``p`` reads an index whose partition key does not carry the key version.

    A multi-attribute GSI's keys are the fields' own attributes, and a template index whose
    partition-key template leaves out ``{version}`` (``pk="M#{maker}"``) renders the same key
    text at every version: the copies of one item under two key versions (a copy-mode rekey, the
    expand step of a rollout) are both in one partition of it, and items under a version this
    app does not read are there too. An index whose partition key starts with ``{version}#...``
    (or carries it anywhere) holds each version in its own partition and needs none of this.
    """
    bound = p.bound
    if bound is None or bound.index_name is None:
        return False
    if not bound.is_multi and VERSION in bound.pk.placeholders:
        return False
    # a collection reads every entity type of the table: any of them may hold such copies
    models = model._meta.table._entities.values() if p.entity_types is None else (model,)
    return any(_versioned_primary(m) for m in models)


def _versioned_primary(model: Any) -> bool:
    prim = model._meta.primary
    return VERSION in prim.pk.placeholders or (prim.sk is not None and VERSION in prim.sk.placeholders)


def _current_copies(model: Any, decoded: list[tuple[Any, Any]]) -> backend.Steps:
    """Keep, of the items read through a version-blind index, each logical item once, as ``get()`` would.

    An item stored under the current key version is kept. One under an older version of
    ``Meta.read_versions`` is kept only when no item exists under the current keys (one
    BatchGetItem per page for such items), and is marked as read at that version, so a write
    on it first moves it to the current keys (:mod:`dynorm.fallback`). One under any other
    version (a copy this app does not read) is dropped. In a collection the same holds for every
    declared entity of the table whose primary key carries ``{version}``; other items pass unchanged.

    Yields BatchGetItem steps; returns the ``(raw, obj)`` pairs kept, in order.
    """
    from .batch import batch_get_steps
    from .writes import stored_key

    tmeta = model._meta.table._meta
    attrs = [tmeta.pk_attribute] + ([tmeta.sk_attribute] if tmeta.sk_attribute else [])
    # (position, entity class, current key) of items read at older versions
    older: list[tuple[int, Any, dict[str, Any]]] = []
    keep: list[tuple[Any, Any]] = []
    for raw, obj in decoded:
        # the entity read, or (a collection) any declared entity of the table whose keys carry the version
        if not (isinstance(obj, model) or (type(obj) in _table_entities(model) and _versioned_primary(type(obj)))):
            keep.append((raw, obj))
            continue
        meta = type(obj)._meta
        stored = {a: raw.get(a) for a in attrs}
        version = None
        for v in (meta.key_version, *meta.read_versions):
            try:
                if meta.primary_key(obj.attribute_values, v) == stored:
                    version = v
                    break
            except DynormError:
                break  # a key value the current templates cannot render: not an item this app reads
        if version is None:
            continue  # a copy under a key version this app does not read
        if version != meta.key_version:
            obj._state.fallback = version
            older.append((len(keep), type(obj), meta.primary_key(obj.attribute_values)))
        keep.append((raw, obj))
    if not older:
        return keep
    # an item under the current keys exists (readable or not): it is the item, the older copy is
    # not. A current copy in this page answers without a read (a copy-mode rekey puts both copies
    # side by side in the index); the others are looked up, 0.5 RCU each (as get()'s fallback)
    current = {_key_ident({a: v["S"] for a, v in stored_key(o).items()}) for _, o in keep
               if hasattr(o, "_state") and not o._state.fallback}
    ask = [(cls, key) for _, cls, key in older if _key_ident({a: v["S"] for a, v in key.items()}) not in current]
    if ask:
        unreadable: list[Any] = []
        found = yield from batch_get_steps(ask, unreadable=unreadable)
        current |= {_key_ident({a: v["S"] for a, v in stored_key(o).items()}) for o in found}
        current |= {_key_ident(bad.key) for bad in unreadable}
    shadowed = {pos for pos, _, key in older if _key_ident({a: v["S"] for a, v in key.items()}) in current}
    return [pair for i, pair in enumerate(keep) if i not in shadowed]


def _table_entities(model: Any) -> set[Any]:
    """The entity classes declared on ``model``'s table."""
    return set(model._meta.table._entities.values())


def _key_ident(key: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((a, str(v)) for a, v in key.items()))


def _matching_keys(model: Any, state: QueryState, items: list[Any]) -> list[Any]:
    """Drop the items whose key fields differ from the equalities asked (``get()``).

    A key text names one value under this version's encoding, but an item written by another
    writer (the legacy percent encoding keys ``"a#x"`` as ``"K#a%23x"``, this one reads that
    text as the value ``"a%23x"``) can sit under it: the value read back decides.
    """
    meta = model._meta
    asked: dict[str, Any] = {}
    for q in state.where:
        for fname, lookup, value in q.flatten_and()[0]:
            if lookup == "exact" and fname in meta.key_fields and value is not None:
                asked[fname] = meta.fields[fname].validate(value, meta.entity)
    if not asked:
        return items
    missing = object()
    return [o for o in items if not isinstance(o, model)
            or all(getattr(o, f, missing) == v for f, v in asked.items())]


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

    # the asyncio twins: no I/O either
    async def __aiter__(self) -> AsyncIterator[Any]:
        return
        yield  # an async generator that yields nothing

    async def aiterator(self) -> AsyncIterator[Any]:
        return
        yield

    async def acount(self) -> int:
        return 0

    async def aexists(self) -> bool:
        return False

    async def afirst(self) -> None:
        return None

    async def alast(self) -> None:
        return None

    async def aget(self, *args: Any, **kwargs: Any) -> Any:
        return self.get(*args, **kwargs)

    async def apage(self, size: int = 25, cursor: str | None = None) -> Page[Any]:
        return Page([], None)

    async def ain_bulk(self, keys: Any = None, **policy: Any) -> dict[Any, Any]:
        return {}

    async def avalues(self, *fields: str) -> list[dict[str, Any]]:
        return []

    async def avalues_list(self, *fields: str, flat: bool = False) -> list[Any]:
        return []

    async def agrouped(self) -> dict[type, list[Any]]:
        return {}

    async def adelete(self, **policy: Any) -> int:
        return 0

    # writes: none() matches nothing, so nothing is written and nothing is sent (Django returns 0)
    def update(self, *args: Any, **kwargs: Any) -> None:
        return None

    def update_with_retry(self, *args: Any, **kwargs: Any) -> None:
        return None

    def bulk_update(self, objs: Any, fields: Any, **options: Any) -> int:
        list(objs)
        return 0

    def bulk_delete(self, targets: Any, **policy: Any) -> int:
        return 0

    def _refuse_write(self, what: str) -> Any:
        raise InvalidQuery(f"{self.model.__name__}.objects.none().{what}(): none() matches nothing and never "
                           f"writes; call {self.model.__name__}.objects.{what}() instead.")

    def create(self, **fields: Any) -> Any:
        return self._refuse_write("create")

    def bulk_create(self, objs: Any, **policy: Any) -> Any:
        return self._refuse_write("bulk_create")

    def get_or_create(self, *args: Any, **kwargs: Any) -> Any:
        return self._refuse_write("get_or_create")

    def update_or_create(self, *args: Any, **kwargs: Any) -> Any:
        return self._refuse_write("update_or_create")

    # the asyncio twins of the writes: nothing sent either
    async def aupdate(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def aupdate_with_retry(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def abulk_update(self, objs: Any, fields: Any, **options: Any) -> int:
        list(objs)
        return 0

    async def abulk_delete(self, targets: Any, **policy: Any) -> int:
        return 0

    async def acreate(self, **fields: Any) -> Any:
        return self._refuse_write("create")

    async def abulk_create(self, objs: Any, **policy: Any) -> Any:
        return self._refuse_write("bulk_create")

    async def aget_or_create(self, *args: Any, **kwargs: Any) -> Any:
        return self._refuse_write("get_or_create")

    async def aupdate_or_create(self, *args: Any, **kwargs: Any) -> Any:
        return self._refuse_write("update_or_create")
