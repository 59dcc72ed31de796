"""Per-instance bookkeeping of an entity (``obj._state``), like Django's ``ModelState``.

Only :meth:`dynorm.writes.WriteOp.applied` and the read path (decoding an item) change it, so
an instance reflects what the table holds: a write that failed leaves its instance as it was.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

__all__ = ["ModelState"]

_NO_RELATED: dict[str, Any] = {}
D = TypeVar("D", bound=dict)  # type: ignore[type-arg]


class _OnFirstUse(Generic[D]):
    """A dict attribute of :class:`ModelState` made on first use, kept in the slot of its name with a
    leading ``_`` (``None`` until then): most instances never need one, and an empty dict per
    instance is garbage the collector counts (a ``bulk_create`` of 1,000 new instances made 2,000,
    issue 24)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = owner.__dict__["_" + name]  # the slot's member descriptor

    def __get__(self, obj: Any, owner: Any = None) -> D:
        if obj is None:
            return self  # type: ignore[return-value]
        value = self._slot.__get__(obj)
        if value is None:
            value = {}
            self._slot.__set__(obj, value)
        return value  # type: ignore[no-any-return]

    def __set__(self, obj: Any, value: D) -> None:
        self._slot.__set__(obj, value)


class ModelState:
    """What dynorm knows about one instance besides its field values.

    Attributes:
        adding: True until the instance was read from the table or written to it.
        partial: read with ``only()``/``values()``: saving it whole would drop the fields not read.
        fallback: the older key version it was read under (``Meta.read_versions``), else ``None``.
        fallback_revision: with ``fallback``, ``{revision attribute: token}`` of the item read there
            (``{}``: it had no token; ``None``: not known, a projected read); a write moves that
            item only while it is still this revision (:mod:`dynorm.fallback`).
        related: ``fields.Reference`` targets resolved by ``prefetch()``/``related()`` (name -> instance).
        deferred: the fields whose stored value the instance does not hold and the loader that
            reads them on first access (``(names, loader)``), else ``None``: the fields an ``only()``
            read left out, and the fields a write changed with an ``F()`` expression whose result
            did not come back (a transaction returns no values; see :mod:`dynorm._deferred`).
        read_as: for each field an index key depends on (``Options.pinned_attributes``), the value
            read and the attribute as it was stored (DynamoDB JSON, ``None`` when absent): a write
            that pins the field while it still holds that value pins the stored attribute itself (an
            absent one whatever the default, a date stored as ``...T12:00:00Z``), so the pin holds.
        unread: fields whose stored value a written instance never read (``save(update_fields=...)``
            of an instance built without a read writes only those fields): a key built from one
            of them cannot be rewritten until the item is read (``refresh_from_db()``).
        unique_as: the stored value of each unique field (``dynorm.constraints``) known to be stored:
            a write that changes one swaps the sentinel of this value; a field not listed is read
            first (one GetItem).

    One is made per instance that needs one (``__slots__``, ``related`` made on first use): a query
    result whose entity pins no field gets none until something asks (``Entity._state``), since an
    object, a dict and a state per item made garbage collection a quarter of decoding a page.
    """

    __slots__ = ("adding", "partial", "fallback", "fallback_revision", "_related", "deferred", "unread", "_read_as",
                 "_unique_as")

    def __init__(self, adding: bool = True, partial: bool = False, fallback: str | None = None,
                 fallback_revision: dict[str, Any] | None = None, related: dict[str, Any] | None = None,
                 deferred: tuple[frozenset[str], Any] | None = None, unread: frozenset[str] = frozenset(),
                 read_as: dict[str, tuple[Any, Any]] | None = None, unique_as: dict[str, Any] | None = None) -> None:
        self.adding = adding
        self.partial = partial
        self.fallback = fallback
        self.fallback_revision = fallback_revision
        self._related = related
        self.deferred = deferred
        self.unread = unread
        self._read_as = read_as
        self._unique_as = unique_as

    #: ``fields.Reference`` targets resolved so far (name -> instance)
    related: _OnFirstUse[dict[str, Any]] = _OnFirstUse()
    #: how each pinned field was stored (see the class docs)
    read_as: _OnFirstUse[dict[str, tuple[Any, Any]]] = _OnFirstUse()
    #: the stored value of each unique field known (see the class docs)
    unique_as: _OnFirstUse[dict[str, Any]] = _OnFirstUse()

    def _fields(self) -> tuple[Any, ...]:
        return (self.adding, self.partial, self.fallback, self.fallback_revision, self._related or _NO_RELATED,
                self.deferred, self.unread, self._read_as or _NO_RELATED, self._unique_as or _NO_RELATED)

    def __eq__(self, other: object) -> bool:
        if type(other) is not ModelState:
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it replaced

    def __repr__(self) -> str:
        names = ("adding", "partial", "fallback", "fallback_revision", "related", "deferred", "unread", "read_as",
                 "unique_as")
        return f"ModelState({', '.join(f'{n}={v!r}' for n, v in zip(names, self._fields()))})"
