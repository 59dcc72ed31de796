"""Stream records as typed entity changes (pure: no request is sent).

:func:`changes` turns a batch of DynamoDB Streams records into :class:`Change` objects: the entity
class resolved from the type attribute, the kind, the old and new instances, the changed fields,
the revision token and the record. Three rules make it fit for consumers that mirror a table:

- dynorm's own items (partition key or entity type starting ``dynorm#``: the migration ledger, its
  lock and key-version record, unique-constraint sentinels) are hidden unless asked for;
- an item whose type no model declares is an :class:`~dynorm.UnknownItem` change, and an item that
  cannot be decoded is a change carrying ``unreadable``: neither raises, so no batch is lost;
- a key-version move (``dynorm migrate``'s REMOVE at the old keys and INSERT at the new ones, which
  carry the same revision token) is one ``moved`` change, never a delete plus a create.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from .._codec import item_from_av
from ..exceptions import ConfigurationError, UnreadableItem
from ..fields import unreadable_item
from ..iterables import UnknownItem
from ..table_options import copied_from_attribute
from .records import INTERNAL_PREFIX, StreamRecord, binary_from_json, records_of, table_name_of

if TYPE_CHECKING:  # pragma: no cover
    from ..tables import Table

__all__ = ["Change", "changes", "KINDS", "MOVES"]

#: The kinds of change, as ``Change.kind`` spells them.
KINDS = ("created", "updated", "deleted", "moved")
#: What ``changes(moves=...)`` does with moves: report them as ``moved``, or leave them out.
MOVES = ("report", "hide")


@dataclass(frozen=True, eq=False)
class Change:
    """One change to one item, read from the table's stream.

    Attributes:
        entity: the entity class (:class:`~dynorm.UnknownItem` for a type no model declares, or when
            the record carries no image to tell the type: ``KEYS_ONLY``, a REMOVE under ``NEW_IMAGE``).
        kind: ``"created"``, ``"updated"``, ``"deleted"`` or ``"moved"`` (a key-version move by
            ``dynorm migrate`` or a ``read_versions`` rollout: the same item under new keys).
        old: the item before (an instance of ``entity``, an ``UnknownItem``), ``None`` when the view
            type leaves it out, for a create, for an item that could not be decoded, and for the
            new half of a move whose REMOVE is in another batch.
        new: the item after, ``None`` likewise (a delete; the old half of a move seen alone).
        changed_fields: field names whose value differs between ``old`` and ``new`` in declaration
            order (for a create: the fields set in ``new``; a delete: those set in ``old``; an
            ``UnknownItem`` or unreadable item: attribute names); ``()`` for a move seen by halves.
        revision: the item's revision token (``Table.Meta.revision_attribute``) after the change
            (before it, for a delete), ``None`` when the item has none.
        record: the stream record (for a move paired in one batch, the first of its two).
        records: every record the change stands for, in batch order (two for a paired move).
        expired: a deletion by DynamoDB's Time to Live.
        internal: one of dynorm's own items (only with ``include_internal=True``).
        unreadable: an :class:`~dynorm.UnreadableItem` per image that could not be decoded.
    """

    entity: type
    kind: str
    old: Any
    new: Any
    changed_fields: tuple[str, ...]
    revision: str | None
    record: Mapping[str, Any]
    records: tuple[Mapping[str, Any], ...] = ()
    expired: bool = False
    internal: bool = False
    unreadable: tuple[UnreadableItem, ...] = ()
    _positions: tuple[int, ...] = field(default=(), repr=False)

    @property
    def sequence_number(self) -> str | None:
        """The sequence number of the change's first record (``dynamodb.SequenceNumber``)."""
        return self.record.get("dynamodb", {}).get("SequenceNumber")

    @property
    def keys(self) -> dict[str, Any]:
        """The table key of the change's first record (DynamoDB JSON, ``{"PK": {"S": ...}, ...}``)."""
        return dict(self.record.get("dynamodb", {}).get("Keys") or {})

    def to_dict(self) -> dict[str, Any]:
        """The change as plain data (for JSON): kind, entity, entity type, keys, changed fields,
        revision, sequence number, and the old and new items' attributes (as stored, plain values)."""
        body = self.record.get("dynamodb", {})
        shown = self.new if self.new is not None else self.old
        return {"kind": self.kind, "entity": self.entity.__name__,
                "entity_type": getattr(shown, "entity_type", None) or getattr(getattr(self.entity, "_meta", None),
                                                                                "entity_type", None),
                "keys": item_from_av(binary_from_json(self.keys)), "changed_fields": list(self.changed_fields),
                "revision": self.revision, "sequence_number": self.sequence_number, "expired": self.expired,
                "old": item_from_av(binary_from_json(body["OldImage"]))
                if self.old is not None and "OldImage" in body else None,
                "new": item_from_av(binary_from_json(body["NewImage"]))
                if self.new is not None and "NewImage" in body else None}

    def __repr__(self) -> str:
        shown = self.new if self.new is not None else self.old
        what = shown if shown is not None else self.keys
        fields_ = f" {list(self.changed_fields)}" if self.changed_fields and self.kind == "updated" else ""
        return f"<Change {self.kind} {self.entity.__name__} {what!r}{fields_}>"


def changes(event_or_records: Any, *, table: type[Table] | None = None, moves: str = "report",
            include_internal: bool = False) -> Iterator[Change]:
    """Yield the entity changes of a DynamoDB Streams batch, in the batch's order (no I/O).

    Args:
        event_or_records: the Lambda event (``{"Records": [...]}``), a GetRecords response, or a list
            of records (:class:`~dynorm.streams.reader.StreamReader` gives them).
        table: the ``Table`` class of the stream; by default each record's ``eventSourceARN`` names
            the physical table (Lambda's records carry it) and the declared table of that name is used.
        moves: ``"report"`` (default): a move is one ``moved`` change; ``"hide"``: moves are left out
            (a consumer keyed by entity fields, not by PK/SK, has nothing to do for them).
        include_internal: also yield dynorm's own items (``internal=True``, as ``UnknownItem``).

    A move is recognised in three ways: a REMOVE and an INSERT in one batch of the same entity type,
    the same revision token and the same primary-key field values are paired into one change (both
    ``old`` and ``new``); an INSERT whose item lists its own revision among the revisions it was
    copied from (``_dynorm_rev_src``, written by ``dynorm migrate``) is the new half (``old`` is
    ``None``); a REMOVE of an item stored at a key other than the one its model renders at the
    current key version is the old half (``new`` is ``None``; told by its key fields alone when the
    rest of its image no longer decodes); a MODIFY that keeps the revision token (an in-place rekey
    of index keys) is a move with both. dynorm's own deletes never leave such a REMOVE for a delete:
    during a ``read_versions`` rollout they move an item found at an older key first, then delete it
    at the current one. An INSERT that reads as a move's new half after a REMOVE of the same key and
    revision in the batch (an item put back as it was) is ``created``. A record that cannot be read
    at all is an ``UnknownItem`` change with ``unreadable`` set. See ``docs/streams.md`` for the limits.

    Raises:
        ConfigurationError: the batch is not a DynamoDB Streams batch, a record names no table and
            ``table`` is not given, or its table is not declared; ``moves`` is not one of
            :data:`MOVES`. Raised before any change is yielded.
    """
    if moves not in MOVES:
        raise ConfigurationError(f"dynorm.streams.changes: moves must be one of {', '.join(MOVES)}, got {moves!r}.")
    raws = records_of(event_or_records)
    records = [StreamRecord.read(raw, i) for i, raw in enumerate(raws)]
    tables = [table if table is not None else _table_of(r) for r in records]
    found = [_one_or_unreadable(r, t) for r, t in zip(records, tables)]
    for change in _pair_moves(found):
        if change.internal and not include_internal:
            continue
        if change.kind == "moved" and moves == "hide":
            continue
        yield change


# -- resolving the table -------------------------------------------------------------------------
def _table_of(record: StreamRecord) -> type[Table]:
    from ..tables import all_tables

    name = table_name_of(record.raw)
    if name is None:
        raise ConfigurationError(
            f"dynorm.streams: record {record.position} has no eventSourceARN naming its table (records read "
            "with GetRecords lack it); pass table=YourTable.")
    declared = {t.table_name(): t for t in all_tables()}
    if name not in declared:
        raise ConfigurationError(
            f"dynorm.streams: record {record.position} comes from table {name!r}, which no declared Table names "
            f"(declared: {', '.join(sorted(declared)) or 'none'}; check table_prefix and that the models "
            "are imported), or pass table=YourTable.")
    return declared[name]


# -- one record ------------------------------------------------------------------------------------
def _decode(table: type[Table], image: dict[str, Any] | None) -> tuple[type, Any, UnreadableItem | None]:
    """(entity class, instance or UnknownItem or None, why it could not be read)."""
    meta = table._meta
    if image is None:
        return UnknownItem, None, None
    t = (image.get(meta.type_attribute) or {}).get("S")
    cls = table._entities.get(t) if t is not None else None
    if cls is None:
        return UnknownItem, UnknownItem(image, meta.type_attribute), None
    try:
        return cls, cls.from_raw_data(image), None
    except Exception as exc:  # noqa: BLE001 - one bad item must not lose the batch
        return cls, None, unreadable_item(cls, image, exc, (meta.pk_attribute, meta.sk_attribute or ""))


def _internal(table: type[Table], record: StreamRecord) -> bool:
    meta = table._meta
    image = record.image
    pk = (record.keys.get(meta.pk_attribute) or image.get(meta.pk_attribute) or {}).get("S")
    etype = (image.get(meta.type_attribute) or {}).get("S")
    return any(isinstance(v, str) and v.startswith(INTERNAL_PREFIX) for v in (pk, etype))


def _revision(table: type[Table], image: dict[str, Any] | None) -> str | None:
    return ((image or {}).get(table._meta.revision_attribute) or {}).get("S")


def _copied_here(table: type[Table], image: dict[str, Any] | None) -> bool:
    """Whether the item holds its own revision among those it was copied from (a migration's copy)."""
    rev = _revision(table, image)
    src = ((image or {}).get(copied_from_attribute(table._meta.revision_attribute)) or {}).get("SS") or []
    return rev is not None and rev in src


def _keys_only(table: type[Table], record: StreamRecord) -> bool:
    """Whether a MODIFY changed nothing but key attributes (and the copied-from record): a rekey in place.

    Another writer that keeps the revision token while changing a field or an undeclared attribute
    made an update, not a move.
    """
    old, new = record.old or {}, record.new or {}
    meta = table._meta
    # the key text dynorm renders (PK, SK, template GSIs' attributes); LSI sort keys and
    # multi-attribute GSI keys are fields' own values, whose change is an update
    keys = {*meta.key_attributes, copied_from_attribute(meta.revision_attribute)}
    return all(a in keys for a in {*old, *new} if old.get(a) != new.get(a))


def _at_older_version(cls: Any, obj: Any, keys: dict[str, Any]) -> bool:
    """Whether ``obj`` is stored under a key other than its model's at the current key version."""
    if cls is UnknownItem or obj is None:
        return False
    try:
        current = cls._meta.primary_key(obj.attribute_values)
    except Exception:  # noqa: BLE001 - a key that cannot be rendered now: not a move dynorm made
        return False
    return bool(current != {a: keys.get(a) for a in current})


def _key_part(cls: Any, image: dict[str, Any] | None) -> Any:
    """An instance of ``cls`` from the key fields of ``image`` alone (``None`` if they do not decode):
    the key of an item whose other attributes cannot be read."""
    try:
        names = {cls._meta.fields[f].attr_name for f in cls._meta.key_fields}
        return cls.from_raw_data({a: v for a, v in (image or {}).items() if a in names})
    except Exception:  # noqa: BLE001 - the key fields themselves cannot be read: not a move
        return None


def _one(record: StreamRecord, table: type[Table]) -> Change:
    """The change one record shows on its own (a move's halves are paired afterwards)."""
    old_cls, old, old_err = _decode(table, record.old)
    new_cls, new, new_err = _decode(table, record.new)
    if record.old is None and record.new is None:
        old_cls = new_cls = UnknownItem
        if record.event != "INSERT":
            old = UnknownItem(record.keys, table._meta.type_attribute)
        if record.event != "REMOVE":
            new = UnknownItem(record.keys, table._meta.type_attribute)
    entity = new_cls if record.new is not None else old_cls
    kind = {"INSERT": "created", "MODIFY": "updated", "REMOVE": "deleted"}[record.event]
    rev_old, rev_new = _revision(table, record.old), _revision(table, record.new)
    if record.event == "INSERT" and _copied_here(table, record.new):
        kind = "moved"
    elif record.event == "MODIFY" and rev_new is not None and rev_old == rev_new and _keys_only(table, record):
        kind = "moved"  # no dynorm write keeps the token: a rekey rewrote the index keys in place
    elif record.event == "REMOVE" and not record.expired and (
            _at_older_version(old_cls, old, record.keys)
            or (old is None and old_err is not None and _at_older_version(old_cls, _key_part(old_cls, record.old),
                                                                         record.keys))):
        kind = "moved"  # (an old image that no longer decodes: told by its key fields alone)
    internal = _internal(table, record)
    if internal:
        entity = UnknownItem
        old = UnknownItem(record.old, table._meta.type_attribute) if record.old is not None else None
        new = UnknownItem(record.new, table._meta.type_attribute) if record.new is not None else None
    return Change(entity=entity, kind=kind, old=old, new=new,
                  changed_fields=_changed(kind, old, new, record.old, record.new),
                  revision=rev_new if record.new is not None else rev_old, record=record.raw,
                  records=(record.raw,), expired=record.expired, internal=internal,
                  unreadable=tuple(e for e in (old_err, new_err) if e is not None), _positions=(record.position,))


def _one_or_unreadable(record: StreamRecord, table: type[Table]) -> Change:
    """:func:`_one`, or, for a record whose images are malformed (an image that is not a map, an
    attribute value of no DynamoDB type, a revision that is not ``{"S": ...}``), an ``UnknownItem``
    change of the record's kind with ``old`` and ``new`` ``None`` and one ``unreadable`` entry: one
    bad record never loses the batch."""
    try:
        return _one(record, table)
    except Exception as exc:  # noqa: BLE001 - one bad record must not lose the batch
        try:
            key = item_from_av(record.keys)
        except Exception:  # noqa: BLE001
            key = {}
        image = record.new if record.new is not None else record.old
        error = UnreadableItem(f"stream record {record.position} ({record.event}) cannot be read: "
                               f"{type(exc).__name__}: {exc}", entity="?", key=key, attribute=None,
                               stored=None, raw=image if isinstance(image, Mapping) else {})
        kind = {"INSERT": "created", "MODIFY": "updated", "REMOVE": "deleted"}[record.event]
        return Change(entity=UnknownItem, kind=kind, old=None, new=None, changed_fields=(), revision=None,
                      record=record.raw, records=(record.raw,), expired=record.expired, internal=False,
                      unreadable=(error,), _positions=(record.position,))


def _changed(kind: str, old: Any, new: Any, old_raw: dict[str, Any] | None,
             new_raw: dict[str, Any] | None) -> tuple[str, ...]:
    """The changed fields (declaration order), or attribute names for items read as ``UnknownItem``."""
    if kind == "moved" and (old is None or new is None):
        return ()
    sample = new if new is not None else old
    if sample is None or isinstance(sample, UnknownItem) or (old is None) != (old_raw is None) \
            or (new is None) != (new_raw is None):
        before, after = old_raw or {}, new_raw or {}
        return tuple(sorted(a for a in {*before, *after} if before.get(a) != after.get(a)))
    before_v = old.attribute_values if old is not None else {}
    after_v = new.attribute_values if new is not None else {}
    return tuple(f for f in type(sample)._meta.fields if before_v.get(f) != after_v.get(f))


# -- pairing the two records of a move ---------------------------------------------------------------
def _move_key(change: Change, side: str) -> tuple[Any, ...] | None:
    obj = getattr(change, side)
    if change.entity is UnknownItem or obj is None or change.revision is None or change.expired:
        return None
    return change.entity, change.revision, tuple(sorted(obj.key.items(), key=lambda kv: kv[0]))


def _pair_moves(found: list[Change]) -> list[Change]:
    """Merge each REMOVE with the INSERT of the same entity, revision and key fields into one ``moved``.

    The merged change takes the place of the earlier of the two records; the later one is dropped.
    """
    removes: dict[tuple[Any, ...], int] = {}
    inserts: dict[tuple[Any, ...], int] = {}
    for i, c in enumerate(found):
        event = c.record.get("eventName")
        if event == "REMOVE" and (k := _move_key(c, "old")) is not None:
            removes.setdefault(k, i)
        elif event == "INSERT" and (k := _move_key(c, "new")) is not None:
            inserts.setdefault(k, i)
    out: list[Change | None] = list(found)
    for k, r in removes.items():
        n = inserts.get(k)
        if n is None or found[r].keys == found[n].keys:
            continue
        gone, came = found[r], found[n]
        first, second = sorted((r, n))
        out[first] = replace(came, kind="moved", old=gone.old, record=found[first].record,
                             records=(found[first].record, found[second].record),
                             changed_fields=_changed("moved", gone.old, came.new,
                                                     gone.record["dynamodb"].get("OldImage"),
                                                     came.record["dynamodb"].get("NewImage")),
                             unreadable=gone.unreadable + came.unreadable,
                             _positions=(found[first]._positions[0], found[second]._positions[0]))
        out[second] = None
    # an INSERT read as a move's new half, after a REMOVE of the same key and revision in this batch:
    # the item deleted, then put back as it was (a restore from a backup): a create, not a move
    gone_at: dict[tuple[Any, ...], int] = {}
    for i, one in enumerate(out):
        if one is None or len(one.records) != 1:
            continue
        event = one.record.get("eventName")
        here = (repr(sorted(one.keys.items())), one.revision)
        if event == "REMOVE" and one.kind == "deleted":
            gone_at[here] = i
        elif event == "INSERT" and one.kind == "moved" and here in gone_at:
            out[i] = replace(one, kind="created", changed_fields=_changed(
                "created", None, one.new, None, one.record["dynamodb"].get("NewImage")))
    return [c for c in out if c is not None]
