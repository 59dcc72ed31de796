"""The read pipeline: how an evaluated queryset becomes requests and results (Django's iterable classes).

:mod:`dynorm.query` builds querysets and holds the evaluation entry points (iteration, ``get``,
``first``, ``count``, ``page``, ``in_bulk``, their async twins); each runs one *evaluation* from
here (:class:`Rows`, :class:`Get`, :class:`Count`, :class:`PageRead`, :class:`Keys`) through
:func:`evaluate`, the one place that reads the flag of ``none()`` (``QueryState.empty``): an empty
queryset is never planned and sends nothing, and each evaluation returns what it returns for no
items (Django's ``EmptyResultSet``).

Everything is written as :mod:`dynorm.backend` steps (``Send``/``Sleep``/``Emit``), so the sync
driver and the asyncio driver share every decision and differ only in the I/O call. :func:`rows`
is the one loop over the pages of a read; each policy it applies is a small named step:

- :func:`decoder`: raw item -> instance (projections, collections, unknown types, unreadable items);
- :func:`get_item`: the GetItem branch (one item by key, its checks, the tail ``get()`` reads);
- :class:`Take`: the slice window, the peek one match past it for pages (:class:`Tail`), and the
  ``Limit`` of each later request (the matches still needed, or read-ahead behind a filter);
- :func:`older_key_requests`/:func:`ask_older_keys`: the Query per older key version (``Meta.read_versions``);
- :func:`get_older_versions`: the GetItem per older key version of ``get()``;
- :func:`current_copies`: the BatchGetItem of current copies behind a version-blind index;
- :func:`prefetch`: the BatchGetItem of ``fields.Reference`` targets.

It sits beside the senders (:mod:`dynorm.batch`), below :mod:`dynorm.query`, typed against
:mod:`dynorm._protocols`: it never imports ``query``, ``models`` or ``tables``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, Mapping, Protocol, TypeVar

from . import _codec, backend, conf
from ._deferred import DeferredLoader
from ._value import Value
from .constraints import OWNER_KEY_ATTRIBUTE, SENTINEL_TYPE
from .cursor import decode_cursor, decode_shard_cursor, encode_cursor, encode_shard_cursor, signing_secret
from .exceptions import DynormError, InvalidCursor, InvalidQuery, UnreadableItem, UnreadableItems
from .fields import unreadable_item
from .keys import VERSION
from .plan import Plan, QueryState
from .shard_merge import ShardMerge
from .write_keys import primary_key_of, stored_key

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["Count", "Get", "Keys", "Page", "PageRead", "Rows", "Tail", "UnknownItem", "Window", "decoder",
           "evaluate", "rows", "settle_unreadable"]

T = TypeVar("T")


# -- results -----------------------------------------------------------------------------------
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


class Tail(Value):
    """What the pipeline learnt past a page's end: the raw last item returned, and whether more match.

    For a GetItem, ``more`` says whether any item is stored under the key (whether or not it
    meets the plan's checks): ``get()`` falls back to older key versions only when none is.
    """

    last: dict[str, Any] | None
    more: bool

    def __init__(self, last: dict[str, Any] | None = None, more: bool = False) -> None:
        self.last = last
        self.more = more


class Window(Value):
    """The slice of a queryset: matches number ``start`` up to ``stop`` (exclusive; ``None``: all)."""

    start: int
    stop: int | None

    def __init__(self, start: int = 0, stop: int | None = None) -> None:
        self.start = start
        self.stop = stop


# -- what the pipeline reads of a queryset ------------------------------------------------------
class Source(Protocol):
    """What the pipeline reads of a queryset (:class:`dynorm.query.QuerySet` is one)."""

    stats: backend.Stats
    unreadable: list[UnreadableItem]
    _state: QueryState
    _window: Window
    _skip_unreadable: bool

    @property
    def model(self) -> type[EntityLike]: ...

    def _plan(self, *, limit: int | None = None, count: bool = False, window: bool = True) -> Plan: ...

    def _count_source(self) -> tuple[Plan, Source | None]: ...

    def _clone(self) -> Any: ...


def settle_unreadable(qs: Source, items: list[Any], cursor: str | None = None) -> None:
    """Raise :class:`UnreadableItems` for the items ``qs``'s evaluation could not decode (unless skipping).

    Args:
        qs: the queryset evaluated (``qs.unreadable`` lists what its decoder could not read).
        items: the results that did decode (the error's ``.items``).
        cursor: for ``page()``, the next page's cursor (the error's ``.cursor``).

    Raises:
        UnreadableItems: ``qs.unreadable`` is not empty and ``skip_unreadable()`` is off.
    """
    if not qs.unreadable or qs._skip_unreadable:
        return
    errors = qs.unreadable
    more = f" (and {len(errors) - 1} more, in .errors)" if len(errors) > 1 else ""
    raise UnreadableItems(
        f"{errors[0]}{more} The {len(items)} item(s) that decoded are in .items"
        f"{' and .cursor continues the pages' if cursor else ''}; use .skip_unreadable() to read past "
        "unreadable items, or repair them (.errors[i].raw).", errors, items, cursor)


# -- decoding ----------------------------------------------------------------------------------
def decoder(qs: Source, p: Plan) -> Callable[[dict[str, Any]], Any]:
    """The function turning one raw item of ``p``'s responses into a result, or ``None`` to drop it.

    Dispatches on the type attribute (a collection yields each entity as its own class, an
    undeclared type as :class:`UnknownItem`); an item that cannot be decoded is appended to
    ``qs.unreadable`` and dropped. After ``only()``, the fields not read are deferred. No I/O.

    Args:
        qs: the queryset evaluated. p: its plan (the entity types it reads, its projection).

    Returns:
        ``decode(raw: dict in DynamoDB JSON) -> instance | UnknownItem | None``.
    """
    decode_full = _full_decoder(qs, p)
    if p.projection is None or qs._state.projection is None:
        return decode_full
    meta = qs.model._meta
    read = {*qs._state.projection, *meta.key_fields}
    if meta.version_field:
        read.add(meta.version_field)
    loader = DeferredLoader(qs._state.consistent)

    def partial(raw: dict[str, Any]) -> Any:
        obj = decode_full(raw)
        if obj is None or isinstance(obj, UnknownItem):
            return obj
        values = obj.attribute_values
        unread = frozenset(n for n in obj._meta.fields if n not in read)
        for name in unread:
            values.pop(name, None)  # never a default standing in for a value not read
            obj._state.read_as.pop(name, None)  # nor an attribute not projected taken as absent
            obj._state.unique_as.pop(name, None)  # nor a unique value not read taken as None
        obj._state.partial = True  # saving it would drop the fields not read
        # a module-level loader, not a lambda: the instance stays picklable
        obj._state.deferred = (unread, loader)
        return obj

    return partial


def _full_decoder(qs: Source, p: Plan) -> Callable[[dict[str, Any]], Any]:
    table = qs.model._meta.table
    type_attr = table._meta.type_attribute
    entities = table._entities
    wanted = p.entity_types
    of = qs._state.of
    key_attrs = (table._meta.pk_attribute, table._meta.sk_attribute or "")
    unreadable = qs.unreadable

    def read(cls: Any, raw: dict[str, Any]) -> Any:
        try:
            return cls._from_item(raw)  # the class of its entity type, found here: not looked up again
        except Exception as exc:  # noqa: BLE001 - one bad item must not hide the others
            unreadable.append(unreadable_item(cls, raw, exc, key_attrs))
            return None

    def decode(raw: dict[str, Any]) -> Any:
        t = raw.get(type_attr, {}).get("S")
        if t == SENTINEL_TYPE:
            return None  # a unique-constraint sentinel is no item of the collection (dynorm.constraints)
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


# -- the one loop over the pages of a read -------------------------------------------------------
def rows(qs: Source, p: Plan, *, start: int = 0, stop: int | None = None, start_key: dict[str, Any] | None = None,
         tail: Tail | None = None, prefetch_refs: bool = True, where: ShardPositions | None = None) -> backend.Steps:
    """Send ``p`` page by page, decode, keep the window, prefetch: one ``Emit`` of results per response.

    Every read of a queryset goes through here (iteration, ``iterator()``, ``page()``, ``get()``,
    ``first()``, ``exists()``, ``count()`` of a key or through a version-blind index). The first
    request is ``p.params`` exactly; later ones change only ``ExclusiveStartKey`` and ``Limit``
    (:class:`Take`). With ``tail``, one match more than ``stop`` is read to learn whether there is
    more; ``tail`` then holds the raw last returned item and whether more matches exist.

    Args:
        qs: the queryset evaluated (its model, state, stats, unreadable list, services).
        p: its plan (GetItem, Query or Scan).
        start, stop: the matches kept, number ``start`` up to ``stop`` (exclusive).
        start_key: the ExclusiveStartKey of the first request (a page's cursor).
        tail: filled in as described above.
        prefetch_refs: resolve ``prefetch()`` (BatchGetItem) after each response.
        where: for a fan-out over the buckets of a write-sharded index (``p.fanout``), where each
            bucket starts, filled in with where each stands after the last result (a page's cursor).

    Yields:
        :class:`~dynorm.backend.Send`/``Sleep``/``SendAll`` steps and an ``Emit`` of each list of results.
    """
    decode = decoder(qs, p)
    if p.operation == "GetItem":
        yield from get_item(qs, p, decode, start=start, stop=stop, tail=tail, prefetch_refs=prefetch_refs)
        return
    if stop is not None and stop <= start:
        return  # qs[:0] reads nothing
    if p.fanout:
        yield from sharded_rows(qs, p, decode, start=start, stop=stop, tail=tail, prefetch_refs=prefetch_refs,
                                where=where)
        return
    versions = versioned_reads(qs.model, p)
    take = Take(start, stop, tail, p.params.get("Limit"), reads_ahead(p) or versions)
    older = older_key_requests(qs, p) if p.whole_key and not start_key else []
    fallback: str | None = None
    pager = backend.Pager(p.params, start_key, take.next_limit)
    while pager.request is not None:
        resp = yield backend.Send(p.operation, pager.request, qs.stats, (qs.model,))
        if older and pager.sent == 0 and not resp.get("ScannedCount") and not resp.get("LastEvaluatedKey"):
            # nothing at all under the current key (a Query on one whole key: conditions GetItem
            # cannot check): Meta.read_versions may hold the item, as get() finds it
            found = yield from ask_older_keys(p.operation, pager.request, older, qs.stats, (qs.model,))
            if found is not None:
                fallback, resp = found
        pager.got(resp)
        decoded: list[tuple[Any, Any]] = [(raw, decode(raw)) for raw in resp.get("Items", ())]
        if versions:
            decoded = yield from current_copies(qs, decoded)
        if fallback is not None:
            mark_read_at(decoded, fallback)
        batch = take.take(decoded)
        if prefetch_refs:
            yield from prefetch(qs, batch)
        if batch:
            yield backend.Emit(batch)
        if take.done():
            return


class ShardPositions(Value):
    """Where each bucket of a fan-out stands (a page's cursor), in bucket order.

    Attributes:
        starts: where each bucket resumes: ``None`` (its beginning) or the key of the last item
            the merge used from it (from the cursor given).
        last: after the read, per bucket, the raw last item the merge used up to the last result
            (``None``: none since ``starts``).
    """

    starts: list[dict[str, Any] | None]
    last: list[dict[str, Any] | None]

    def __init__(self, starts: list[dict[str, Any] | None], last: list[dict[str, Any] | None] | None = None) -> None:
        self.starts = starts
        self.last = [] if last is None else last

    def cursor_positions(self, key_attrs: set[str]) -> list[dict[str, Any] | None]:
        """Each bucket's position for the next page's cursor (:func:`dynorm.cursor.encode_shard_cursor`).

        An exhausted bucket keeps its position, not a "done" mark: the next page reads it again
        from there, as one Query resumed from its last key would find items written since.
        """
        out: list[dict[str, Any] | None] = []
        for b, start in enumerate(self.starts):
            raw = self.last[b] if b < len(self.last) else None
            out.append({a: raw[a] for a in key_attrs if a in raw} if raw is not None else start)
        return out


def sharded_rows(qs: Source, p: Plan, decode: Callable[[dict[str, Any]], Any], *, start: int = 0,
                 stop: int | None = None, tail: Tail | None = None, prefetch_refs: bool = True,
                 where: ShardPositions | None = None) -> backend.Steps:
    """The fan-out branch of :func:`rows`: every bucket's Query merged in sort-key order (:class:`ShardMerge`).

    The window, read-ahead, current copies and prefetch apply to the merged items as to one Query's.
    Each bucket's requests carry the ``Limit`` of the matches still needed (or the read-ahead), so
    a slice reads each bucket only as far as the merge needs.
    """
    versions = versioned_reads(qs.model, p)
    take = Take(start, stop, tail, p.params.get("Limit"), reads_ahead(p) or versions)
    starts = where.starts if where is not None else None
    merge = ShardMerge(p.fanout, p.bound.sk_attr if p.bound is not None else None, starts=starts,
                       stats=qs.stats, entities=(qs.model,), next_limit=take.next_limit)
    last: list[dict[str, Any] | None] = [None] * len(p.fanout)
    passed: list[tuple[int, dict[str, Any]]] = []  # merged since the last result
    run = merge.steps()
    value: Any = None
    error: BaseException | None = None
    try:
        while not take.done():
            try:
                step = run.send(value) if error is None else run.throw(error)
            except StopIteration:
                break
            value, error = None, None
            if not isinstance(step, backend.Emit):
                try:
                    value = yield step
                except Exception as exc:  # noqa: BLE001 - handed on to the merge's steps
                    error = exc
                continue
            pairs: list[tuple[int, dict[str, Any]]] = step.value
            decoded = [(raw, decode(raw)) for _, raw in pairs]
            if versions:
                decoded = yield from current_copies(qs, decoded)
            kept = {id(raw): obj for raw, obj in decoded}
            batch: list[Any] = []
            for b, raw in pairs:
                passed.append((b, raw))
                got = take.take([(raw, kept.get(id(raw)))])
                if got:
                    batch += got
                    for pb, praw in passed:
                        last[pb] = praw
                    passed = []
                if take.done():
                    break
            if prefetch_refs:
                yield from prefetch(qs, batch)
            if batch:
                yield backend.Emit(batch)
    finally:
        run.close()
    if where is not None:
        where.last = last


def get_item(qs: Source, p: Plan, decode: Callable[[dict[str, Any]], Any], *, start: int = 0,
             stop: int | None = None, tail: Tail | None = None, prefetch_refs: bool = True) -> backend.Steps:
    """The GetItem branch of :func:`rows`: one GetItem, the item kept when it meets the plan's checks.

    Args:
        qs, p, decode: the queryset, its GetItem plan and its :func:`decoder`.
        start, stop: the window (the item is kept only when number 0 is in it).
        tail: when given, ``tail.more`` tells whether any item is stored under the key (checks
            aside) and ``tail.last`` holds it raw.
        prefetch_refs: resolve ``prefetch()`` (BatchGetItem) for the item.

    Yields:
        the GetItem step, then one ``Emit`` of a list: the item, or nothing.
    """
    resp = yield backend.Send("GetItem", p.params, qs.stats, (qs.model,))
    item = resp.get("Item")
    if p.through_unique is not None and item is not None:  # the sentinel: now the item it names
        item = yield from _owner_item(qs, p, item)
    if tail is not None:  # get(): whether any item is stored under this key (checks aside)
        tail.more = item is not None
        tail.last = item
    obj = decode(item) if item and p.admits(item) else None
    objs = [obj] if obj is not None and start == 0 and (stop is None or stop > 0) else []
    if prefetch_refs:
        yield from prefetch(qs, objs)
    yield backend.Emit(objs)


def _owner_item(qs: Source, p: Plan, sentinel: dict[str, Any]) -> backend.Steps:
    """The second GetItem of ``get(email=...)`` through a sentinel: the item under its owner's key."""
    meta = qs.model._meta
    owner = sentinel.get(OWNER_KEY_ATTRIBUTE, {}).get("M", {})
    values = {}
    for n in meta.key_fields:
        f = meta.fields[n]
        av = owner.get(n)
        if not av or f.attr_type not in av:
            return None  # not a sentinel dynorm wrote: no item
        values[n] = f.deserialize(av[f.attr_type])  # type: ignore[attr-defined]
    assert p.through_unique is not None
    params = {**p.through_unique[1], "Key": meta.primary_key(values)}
    resp = yield backend.Send("GetItem", params, qs.stats, (qs.model,))
    return resp.get("Item")


def reads_ahead(p: Plan) -> bool:
    """True when the items of ``p``'s responses may be dropped after the read, so later requests read ahead.

    A FilterExpression, a collection's narrowing, or a multi-attribute GSI (it holds every item
    with its attributes, of any type, one no model declares too) can drop items.
    """
    return bool("FilterExpression" in p.params or p.entity_types is None
                or (p.bound is not None and p.bound.is_multi))


class Take:
    """The slice window over the matches of a read, and the ``Limit`` of its next request.

    Keeps matches number ``start`` up to ``stop``; with a ``tail``, reads one match more to learn
    whether there is more. The next request asks for the matches still needed, or, when items can
    be dropped after the read (``read_ahead``), a read-ahead growing eightfold per request (up to
    1000), so ``first()`` behind a selective filter costs a few requests, not one per item.

    Args:
        start, stop: the window (match numbers, ``stop`` exclusive; ``None``: no end).
        tail: a page's :class:`Tail` (one match more is read), or ``None``.
        first_limit: the ``Limit`` of the first request (``None``: no Limit, none later either).
        read_ahead: items may be dropped after the read (:func:`reads_ahead`).
    """

    def __init__(self, start: int, stop: int | None, tail: Tail | None, first_limit: int | None,
                 read_ahead: bool) -> None:
        self.start, self.stop, self.tail = start, stop, tail
        self.first_limit, self.read_ahead = first_limit, read_ahead
        self.seen = 0  # matches so far, before the window

    def next_limit(self, sent: int) -> int | None:
        """The ``Limit`` of request number ``sent + 1`` (``None``: no Limit)."""
        if self.first_limit is None or self.stop is None:
            return None
        need = self.stop + (1 if self.tail is not None else 0) - self.seen
        return max(need, min(self.first_limit * 8 ** sent, 1000)) if self.read_ahead else need

    def take(self, decoded: list[tuple[Any, Any]]) -> list[Any]:
        """The results of one response inside the window (``decoded``: ``(raw, result or None)`` pairs)."""
        batch: list[Any] = []
        tail = self.tail
        for raw, obj in decoded:
            if obj is None:
                continue
            if self.stop is not None and self.seen >= self.stop:  # a read-ahead or the peek went past the window
                if tail is not None:
                    tail.more = True
                break
            if self.seen >= self.start:
                batch.append(obj)
                if tail is not None:
                    tail.last = raw
            self.seen += 1
        return batch

    def done(self) -> bool:
        """True when no further request is needed."""
        if self.tail is not None:
            return self.tail.more
        return self.stop is not None and self.seen >= self.stop


# -- key-version rollouts: older key versions, current copies ------------------------------------
def older_key_requests(qs: Source, p: Plan) -> list[tuple[str, dict[str, Any]]]:
    """The ``Meta.read_versions`` fallback of a Query on one whole primary key (``p.whole_key``).

    Returns ``(version, ExpressionAttributeValues)`` per older key version, in order: the same
    request with that version's key in the key condition (one more Query per version tried,
    sent only when nothing at all is stored under the current key).
    """
    meta = qs.model._meta
    older = [v for v in meta.read_versions if v != meta.key_version]
    if not older or qs._state.collection:
        return []
    values = {f: v for q in qs._state.where for f, lookup, v in q.flatten_and()[0] if lookup == "exact"}
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


def ask_older_keys(operation: str, request: dict[str, Any], older: list[tuple[str, dict[str, Any]]],
                   stats: backend.Stats, entities: tuple[Any, ...] = ()) -> backend.Steps:
    """Send ``request`` (a Query, or its Select=COUNT) under each older key version in turn until one
    finds a stored item.

    Args:
        operation: ``"Query"``. request: the request sent under the current key version.
        older: :func:`older_key_requests`. stats: the queryset's :class:`~dynorm.backend.Stats`.
        entities: the entity classes the requests are for (:attr:`dynorm.backend.Send.entities`).

    Returns:
        ``(version, response)`` of the first version holding an item, or ``None`` (one Query per
        version tried).
    """
    for version, changes in older:
        resp = yield backend.Send(operation, {**request, **changes}, stats, entities)
        if resp.get("ScannedCount"):
            return version, resp
    return None


def mark_read_at(decoded: list[tuple[Any, Any]], version: str) -> None:
    """Mark results read under an older key version: a write on one moves it to the current key first."""
    for _raw, obj in decoded:
        if obj is not None and hasattr(obj, "_state"):
            obj._state.fallback = version


def get_older_versions(qs: Source, p: Plan, given: dict[str, Any]) -> backend.Steps:
    """``Meta.read_versions`` fallback of ``get()``: GetItem under each older key version, in order.

    Costs one extra GetItem per older version tried, and, when none holds the item, one
    consistent GetItem of the current key again (a migration may have moved the item there
    between the reads). Any write on an instance found this way first moves its item to the
    current key version (:mod:`dynorm.fallback`). Returns the items found (at most one).
    """
    meta = qs.model._meta
    older = [v for v in meta.read_versions if v != meta.key_version]
    if not older or p.through_unique is not None:  # through a sentinel: its owner's key is read as current
        return []
    leaves = [lf for q in qs._state.where for lf in q.flatten_and()[0]]
    values = {**{f: v for f, lookup, v in leaves if lookup == "exact"}, **given}
    rev = meta.table._meta.revision_attribute
    for version in older:
        key = meta.primary_key(values, version)
        stored = Tail()
        found = yield from backend.first_emit(rows(qs, replace(p, params={**p.params, "Key": key}, key=key),
                                                   tail=stored), [])
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
    again = yield from backend.first_emit(rows(qs, replace(p, params={**p.params, "ConsistentRead": True})), [])
    return again


def versioned_reads(model: Any, p: Plan) -> bool:
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


def _read_version(raw: dict[str, Any], obj: Any, attrs: list[str]) -> str | None:
    """The key version ``obj`` was stored under (current or one of ``Meta.read_versions``), else ``None``."""
    meta = type(obj)._meta
    stored = {a: raw.get(a) for a in attrs}
    for v in (meta.key_version, *meta.read_versions):
        try:
            if meta.primary_key(obj.attribute_values, v) == stored:
                return v  # type: ignore[no-any-return]
        except DynormError:
            return None  # a key value the current templates cannot render: not an item this app reads
    return None


def current_copies(qs: Source, decoded: list[tuple[Any, Any]]) -> backend.Steps:
    """Keep, of the items read through a version-blind index, each logical item once, as ``get()`` would.

    An item stored under the current key version is kept. One under an older version of
    ``Meta.read_versions`` is kept only when no item exists under the current keys (one
    BatchGetItem per page for such items), and is marked as read at that version, so a write
    on it first moves it to the current keys (:mod:`dynorm.fallback`). One under any other
    version (a copy this app does not read) is dropped. In a collection the same holds for every
    declared entity of the table whose primary key carries ``{version}``; other items pass unchanged.

    Yields BatchGetItem steps; returns the ``(raw, obj)`` pairs kept, in order.
    """
    model = qs.model
    tmeta = model._meta.table._meta
    attrs = [tmeta.pk_attribute] + ([tmeta.sk_attribute] if tmeta.sk_attribute else [])
    entities = set(model._meta.table._entities.values())
    # (position, entity class, current key) of items read at older versions
    older: list[tuple[int, Any, dict[str, Any]]] = []
    keep: list[tuple[Any, Any]] = []
    for raw, obj in decoded:
        # the entity read, or (a collection) any declared entity of the table whose keys carry the version
        if not (isinstance(obj, model) or (type(obj) in entities and _versioned_primary(type(obj)))):
            keep.append((raw, obj))
            continue
        version = _read_version(raw, obj, attrs)
        if version is None:
            continue  # a copy under a key version this app does not read
        if version != type(obj)._meta.key_version:
            obj._state.fallback = version
            older.append((len(keep), type(obj), type(obj)._meta.primary_key(obj.attribute_values)))
        keep.append((raw, obj))
    if not older:
        return keep
    # an item under the current keys exists (readable or not): it is the item, the older copy is
    # not. A current copy in this page answers without a read (a copy-mode rekey puts both copies
    # side by side in the index); the others are looked up, 0.5 RCU each (as get()'s fallback)
    current = {_key_ident(stored_key(o)) for _, o in keep if hasattr(o, "_state") and not o._state.fallback}
    ask = [(cls, key) for _, cls, key in older if _key_ident(key) not in current]
    if ask:
        unreadable: list[UnreadableItem] = []
        from .batch import batch_get_steps  # BatchGetItem, imported on first use: `import dynorm` stays lean

        found = yield from batch_get_steps(ask, unreadable=unreadable)
        current |= {_key_ident(stored_key(o)) for o in found}
        current |= {_plain_ident(bad.key) for bad in unreadable}
    shadowed = {pos for pos, _, key in older if _key_ident(key) in current}
    return [pair for i, pair in enumerate(keep) if i not in shadowed]


def _key_ident(key: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A key in DynamoDB JSON (string attributes) as a hashable identity."""
    return _plain_ident({a: v["S"] for a, v in key.items()})


def _plain_ident(key: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((a, str(v)) for a, v in key.items()))


# -- prefetch -------------------------------------------------------------------------------------
def prefetch(qs: Source, objs: list[Any]) -> backend.Steps:
    """Resolve ``prefetch()``'s ``fields.Reference`` fields of ``objs``: one BatchGetItem per 100 targets.

    ``obj.related(name)`` then returns the target (``None`` when it is not stored) without a request.
    """
    if not qs._state.prefetch or not objs:
        return
    wanted: list[tuple[Any, str, Any, dict[str, Any]]] = []
    for name in qs._state.prefetch:
        target = qs.model._meta.fields[name].target  # type: ignore[attr-defined]
        for obj in objs:
            value = getattr(obj, name, None)
            if value:
                wanted.append((obj, name, target, primary_key_of(target, value)))
    from .batch import batch_get_steps  # BatchGetItem, imported on first use: `import dynorm` stays lean

    found = yield from batch_get_steps([(t, k) for _, _, t, k in wanted], consistent=qs._state.consistent,
                                       unreadable=qs.unreadable if qs._skip_unreadable else None)
    index = {(type(o), tuple(o._primary_key_av()[a]["S"] for a in o._primary_key_av())): o for o in found}
    for obj, name, target, key in wanted:
        obj._state.related[name] = index.get((target, tuple(v["S"] for v in key.values())))


# -- evaluations: one per way of evaluating a queryset (Django's iterable classes) ------------------
class Evaluation:
    """One way of evaluating a queryset: its plan (no I/O), its requests, its result.

    Run by :func:`evaluate`. ``result`` gets what ``read`` returned, or ``[]`` when the queryset is
    empty (``none()``): each evaluation's answer for no items falls out of its own arithmetic.
    """

    def __init__(self, qs: Source) -> None:
        self.qs = qs
        self.planned: Any = None

    def plan(self) -> Any:
        """What the evaluation sends: its :class:`~dynorm.plan.Plan` (for :class:`Keys`, the keys).

        Pure: may raise ScanRequired, InvalidQuery, InvalidCursor... before any request.
        """
        return self.qs._plan()

    def read(self, p: Any) -> backend.Steps:  # pragma: no cover - every evaluation has its own
        """Send the requests of ``p`` (what :meth:`plan` returned); return what was read (a list)."""
        raise NotImplementedError

    def result(self, got: list[Any]) -> Any:
        """The evaluation's answer for what was read."""
        return got


def evaluate(ev: Evaluation) -> backend.Steps:
    """Run one evaluation: plan it, send its requests, return its result.

    The one place the flag of ``none()`` is read: an empty queryset is not planned and sends
    nothing; its result is the evaluation's result for no items (``[]``, 0, ``None``, an empty
    :class:`Page`, ``DoesNotExist``).

    Yields:
        the evaluation's steps (``Send``/``Sleep``, and for :class:`Rows` an ``Emit`` per response).

    Returns:
        the evaluation's result. Raises what its plan and its requests raise.
    """
    if ev.qs._state.empty:
        return ev.result([])
    ev.planned = ev.plan()
    got = yield from ev.read(ev.planned)
    return ev.result(got)


class Rows(Evaluation):
    """Iteration, ``list()``, ``iterator()``, ``async for``: the Query/Scan pages (or the GetItem) of the
    queryset's plan; emits each response's results inside its slice window."""

    def read(self, p: Plan) -> backend.Steps:
        window = self.qs._window
        yield from rows(self.qs, p, start=window.start, stop=window.stop)
        return []


class Get(Evaluation):
    """``get()``: GetItem (then GetItem per older key version) or a Query of at most two matches.

    Its result is the one item, else it raises ``DoesNotExist`` / ``MultipleObjectsReturned``
    (or :class:`UnreadableItems`).

    Args:
        qs: the queryset narrowed by ``get()``'s conditions.
        outer: the queryset ``get()`` was called on (it receives the stats and unreadable items).
        given: the conditions given to ``get()`` (for the older key versions and the messages).
    """

    def __init__(self, qs: Source, outer: Source, given: dict[str, Any]) -> None:
        super().__init__(qs)
        self.outer, self.given = outer, given

    def plan(self) -> Plan:
        return self.qs._plan(limit=None if self.qs._window.stop is not None else 2)

    def read(self, p: Plan) -> backend.Steps:
        qs = self.qs
        qs.unreadable = []
        if p.operation == "GetItem":
            stored = Tail()
            items = yield from backend.first_emit(rows(qs, p, tail=stored), [])
            if not items and not stored.more:
                # nothing at all under the current key: Meta.read_versions may hold it. An item
                # that is there but fails the checks shadows every older copy (that copy is
                # not the item: iteration never returns it, and saving it would overwrite it)
                items = yield from get_older_versions(qs, p, self.given)
            return items
        start, stop = qs._window.start, qs._window.stop
        stop = start + 2 if stop is None else min(stop, start + 2)
        batches = yield from backend.collect(rows(qs, p, start=start, stop=stop))
        return [obj for batch in batches for obj in batch]

    def result(self, got: list[Any]) -> Any:
        outer, model, p = self.outer, self.outer.model, self.planned
        outer.stats, outer.unreadable = self.qs.stats, self.qs.unreadable
        items = matching_keys(model, self.qs._state, got)
        settle_unreadable(outer, items)
        if len(items) == 1:
            return items[0]
        described = ", ".join(f"{k}={v!r}" for k, v in self.given.items()) or "the given conditions"
        if not items:
            where = "none() matches nothing" if p is None else \
                f"{p.operation} on {p.table}{' index ' + p.index if p.index else ''}"
            raise model.DoesNotExist(f"{model.__name__} matching {described} does not exist ({where}).")
        raise model.MultipleObjectsReturned(
            f"get() matched more than one {model.__name__} for {described}; add conditions "
            "or use filter().")


def read_back(field: Any, value: Any) -> Any:
    """``value`` as an instance that read it back holds it (:meth:`~dynorm.fields.Field.key_reader`),
    to compare with a value read: ``Decimal("0.1")`` asked is the float 0.1 read, ``1e23`` the int 10**23."""
    reader = field.key_reader()
    return value if reader is None else reader(value)


def matching_keys(model: Any, state: Any, items: list[Any]) -> list[Any]:
    """Drop the items whose key fields differ from the equalities asked (``get()``); returns the others.

    A key text names one value under this version's encoding, but an item written by another
    writer (the legacy percent encoding keys ``"a#x"`` as ``"K#a%23x"``, this one reads that
    text as the value ``"a%23x"``) can sit under it: the value read back decides.
    """
    meta = model._meta
    asked: dict[str, Any] = {}
    for q in state.where:
        for fname, lookup, value in q.flatten_and()[0]:
            if lookup == "exact" and fname in meta.key_fields and value is not None:
                asked[fname] = read_back(meta.fields[fname], meta.fields[fname].validate(value, meta.entity))
    if not asked:
        return items
    missing = object()
    return [o for o in items if not isinstance(o, model)
            or all(getattr(o, f, missing) == v for f, v in asked.items())]


class Count(Evaluation):
    """``count()`` of an unsliced queryset: Select=COUNT over all pages, or a read where it would miscount.

    A whole primary key is one GetItem; through a version-blind index, what iteration returns is
    counted (a Query reading the keys only); a Query on one whole key asks the older key versions
    when nothing is stored under the current one, as iteration does.
    """

    def plan(self) -> Plan:
        p, self.reader = self.qs._count_source()
        return p

    def read(self, p: Plan) -> backend.Steps:
        qs = self.qs
        if p.operation == "GetItem":
            batches = yield from backend.collect(rows(qs, p, prefetch_refs=False))
            return [len(batch) for batch in batches]
        if self.reader is not None:
            # Select=COUNT would count every copy of an item under each key version (and
            # versions this app does not read): count what iteration returns, reading keys only
            reader = self.reader._clone() if self.reader is qs else self.reader
            reader.unreadable = []
            batches = yield from backend.collect(rows(reader, p, prefetch_refs=False))
            qs.stats = reader.stats
            return [len(batch) for batch in batches]
        if p.fanout:  # Select=COUNT in every bucket, all pages, sent together round by round
            merge = ShardMerge(p.fanout, None, stats=qs.stats, entities=(qs.model,))
            yield from backend.collect(merge.steps())
            return merge.counts
        responses = yield from backend.collect(backend.page_steps(p.operation, p.params, stats=qs.stats,
                                                                      entities=(qs.model,)))
        if p.whole_key and not any(resp.get("ScannedCount") for resp in responses):
            # nothing at all under the current key: the read_versions fallback, as iteration does
            found = yield from ask_older_keys(p.operation, p.params, older_key_requests(qs, p), qs.stats,
                                             (qs.model,))
            if found is not None:
                return [int(found[1].get("Count", 0))]
        return [int(resp.get("Count", 0)) for resp in responses]

    def result(self, got: list[Any]) -> int:
        return sum(got)


class PageRead(Evaluation):
    """``page(size, cursor)``: at most ``size`` items and the cursor of the next page.

    Reads one match more than the page (``qs[:size + 1].explain()``): a page that took the last
    item carries no cursor. The cursor is the key of the last item returned, signed with the query.
    """

    def __init__(self, qs: Source, size: int, cursor: str | None) -> None:
        super().__init__(qs)
        self.size, self.cursor = size, cursor
        self.tail = Tail()
        self.context: tuple[dict[str, Any], str, set[str]] | None = None
        self.where: ShardPositions | None = None  # a fan-out's bucket positions

    def plan(self) -> Plan:
        p = self.qs._plan(limit=self.size + 1)
        if p.operation == "GetItem":
            if self.cursor is not None:
                raise InvalidCursor("this query reads one item (GetItem) and has no further pages.")
            return p
        self.context = cursor_context(self.qs, p)
        if p.fanout:
            starts = decode_shard_cursor(self.cursor, *self.context, len(p.fanout)) if self.cursor is not None \
                else [None] * len(p.fanout)
            self.where = ShardPositions(starts)
            self.start_key = None
            return p
        self.where = None
        self.start_key = decode_cursor(self.cursor, *self.context) if self.cursor is not None else None
        return p

    def read(self, p: Plan) -> backend.Steps:
        self.qs.unreadable = []
        if p.operation == "GetItem":
            found = yield from backend.first_emit(rows(self.qs, p), [])
            return found  # type: ignore[no-any-return]
        batches = yield from backend.collect(rows(self.qs, p, stop=self.size, start_key=self.start_key,
                                                  tail=self.tail, where=self.where))
        return [obj for batch in batches for obj in batch]

    def result(self, got: list[Any]) -> Page[Any]:
        last = self.tail.last
        if self.context is None or not self.tail.more or last is None:
            settle_unreadable(self.qs, got)
            return Page(got, None, list(self.qs.unreadable))
        # the cursor is the key of the last item returned (the attributes DynamoDB takes as
        # ExclusiveStartKey), not the LastEvaluatedKey, which may lie past the extra item read
        context, secret, key_attrs = self.context
        if self.where is not None:  # a fan-out: where each bucket stands
            next_cursor = encode_shard_cursor(self.where.cursor_positions(key_attrs), context, secret)
        else:
            next_cursor = encode_cursor({a: last[a] for a in key_attrs if a in last}, context, secret)
        settle_unreadable(self.qs, got, next_cursor)
        return Page(got, next_cursor, list(self.qs.unreadable))


def cursor_context(qs: Source, p: Plan) -> tuple[dict[str, Any], str, set[str]]:
    """What a cursor of ``p`` is bound to (table, entity, index, key version, query), the signing
    secret, and the key attributes it carries: ``(context, secret, key attributes)``. No I/O."""
    meta = qs.model._meta
    tmeta = meta.table._meta
    context: dict[str, Any] = {"t": p.table, "e": meta.entity_type, "i": p.index or "", "kv": meta.key_version,
                               "q": p.fingerprint()}
    if p.fanout:
        context["n"] = len(p.fanout)  # another shard count makes every bucket's key another
        if p.bound is not None and p.bound.shard_by != meta.primary.fields:
            # so does another shard_by; the default (every primary-key field) is left out, so the
            # cursors of the versions that bound only the count keep resuming
            context["sb"] = list(p.bound.shard_by)
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


class Keys(Evaluation):
    """``in_bulk(keys)``: BatchGetItem of the given primary keys (100 per request, UnprocessedKeys retried).

    Args:
        keys: key dicts, bare values for a one-field primary key, or tuples of the key fields.
        policy: ``max_attempts``, ``base_delay``, ``max_delay`` of :class:`dynorm.backend.RetryPolicy`
            for unprocessed keys.
    """

    def __init__(self, qs: Source, keys: Any, policy: Mapping[str, Any]) -> None:
        super().__init__(qs)
        self.keys, self.policy = keys, policy
        self.wanted: list[Mapping[str, Any]] = []

    def plan(self) -> list[tuple[type[EntityLike], dict[str, Any]]]:
        qs, model = self.qs, self.qs.model
        fields = model._meta.key_fields
        if qs._state.where or qs._state.collection or qs._window.start or qs._window.stop is not None:
            # BatchGetItem takes no condition: the filter would be silently ignored
            raise InvalidQuery(
                f"in_bulk(ids) on a filtered {model.__name__} queryset: BatchGetItem cannot apply the "
                f"filter; call {model.__name__}.objects.in_bulk(ids) and filter the found items in Python.")
        pairs: list[tuple[type[EntityLike], dict[str, Any]]] = []
        wanted: list[Mapping[str, Any]] = []
        for k in self.keys:
            if isinstance(k, tuple) and len(k) == len(fields) and len(fields) > 1:
                k = dict(zip(fields, k))
            kd = k if isinstance(k, Mapping) else ({fields[0]: k} if len(fields) == 1 else None)
            if kd is None:
                raise InvalidQuery(f"in_bulk on {model.__name__}: give key dicts of {', '.join(fields)}.")
            pairs.append((model, primary_key_of(model, kd)))
            wanted.append(kd)
        self.wanted = wanted
        return pairs

    def read(self, p: list[tuple[type[EntityLike], dict[str, Any]]]) -> backend.Steps:
        qs = self.qs
        qs.unreadable = []
        policy = backend.RetryPolicy(**self.policy)
        from .batch import batch_get_steps  # BatchGetItem, imported on first use: `import dynorm` stays lean

        found = yield from batch_get_steps(p, consistent=qs._state.consistent, policy=policy,
                                           unreadable=qs.unreadable if qs._skip_unreadable else None)
        return found  # type: ignore[no-any-return]

    def result(self, got: list[Any]) -> dict[Any, Any]:
        meta = self.qs.model._meta
        fields = meta.key_fields
        # a key through a lossy spec ({name:.3}, {day:%Y-%m-%d}) is shared by different values:
        # keep only the items whose key fields hold a value that was asked for
        lossy = bool(meta.primary.pk.lossy_fields or (meta.primary.sk is not None and meta.primary.sk.lossy_fields))
        asked = {tuple(read_back(meta.fields[f], meta.fields[f].validate(kd[f], meta.entity)) for f in fields)
                 for kd in self.wanted} if lossy else set()
        out: dict[Any, Any] = {}
        for obj in got:
            kv = tuple(getattr(obj, f) for f in fields)
            if lossy and kv not in asked:
                continue
            out[kv[0] if len(kv) == 1 else kv] = obj
        return out
