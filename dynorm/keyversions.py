"""The key-version record: which key version of each rekeyed entity type a table holds (pure).

``dynorm migrate`` keeps one item per table in the ledger partition (``dynorm#migrations``, sort key
``keyversions``; a table without a sort key: partition key ``dynorm#migrations#keyversions``),
mapping entity type to its current key version, the migration that set it, and the versions it
has *retired*: versions whose items a recorded migration moved away (a move-mode
``RekeyEntity``) or deleted (``DeleteVersion``). Code still at a retired version is older than the
table: :mod:`dynorm.keyguard` refuses its entity's requests.

A version is retired only when its migration is recorded applied (or, for the newer version, when
a move-mode reversal is recorded done): while a migration is partial, both versions are live. A
copy-mode rekey retires nothing (the old items stay until ``DeleteVersion``).

This module only encodes the item and computes its transitions; :class:`~dynorm.migrations.ledger.Ledger`
writes it, :mod:`dynorm.keyguard` reads it.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from ._value import FrozenValue, Value

__all__ = ["LEDGER_PARTITION", "SORT_KEY", "ATTRIBUTE", "Retired", "Entry", "KeyVersionChange", "item_key",
           "decode", "encode", "applied", "reversal_started", "unrecorded"]

#: The reserved partition of the migration ledger (in the table itself).
LEDGER_PARTITION = "dynorm#migrations"
#: The sort key of the key-version record in that partition.
SORT_KEY = "keyversions"
#: The attribute holding the record (JSON text: ``{entity type: entry}``).
ATTRIBUTE = "entities"


class Retired(FrozenValue):
    """Why a key version is retired.

    Attributes:
        migration: the migration whose recording retired it.
        before: the migration before it (what ``dynorm migrate`` goes back to), if known.
        how: ``"moved"`` (a move-mode rekey moved its items to a newer version), ``"deleted"``
            (a ``DeleteVersion`` deleted them), ``"reversed"`` (reversing ``migration`` in move mode
            moved them back to the older version).
    """

    migration: str
    before: str | None
    how: str

    def __init__(self, migration: str, before: str | None = None, how: str = "moved") -> None:
        self.__dict__.update(migration=migration, before=before, how=how)


class Entry(Value):
    """One entity type in the record.

    Attributes:
        version: the key version the ledger has for it now.
        migration: the migration that last changed it.
        retired: key version -> :class:`Retired`.
    """

    version: str
    migration: str
    retired: dict[str, Retired]

    def __init__(self, version: str, migration: str, retired: dict[str, Retired] | None = None) -> None:
        self.version = version
        self.migration = migration
        self.retired = {} if retired is None else retired


class KeyVersionChange(FrozenValue):
    """What one migration operation does to an entity type's key versions.

    Attributes:
        table: the physical table name; pk_attribute, sk_attribute: its key attributes.
        entity_type: the stored type.
        old: the version the operation moves items away from (or deletes).
        new: the version it moves them to; ``None`` for a ``DeleteVersion`` of ``old``.
        retires: whether recording it applied retires ``old`` (a move, a deletion; not a copy).
            A move-mode reversal recorded done retires ``new`` by the same flag.
        before: the migration before this one, named in messages (``dynorm migrate <before>``).
    """

    table: str
    pk_attribute: str
    sk_attribute: str | None
    entity_type: str
    old: str
    new: str | None
    retires: bool
    before: str | None

    def __init__(self, table: str, pk_attribute: str, sk_attribute: str | None, entity_type: str, old: str,
                 new: str | None, retires: bool, before: str | None = None) -> None:
        self.__dict__.update(table=table, pk_attribute=pk_attribute, sk_attribute=sk_attribute,
                             entity_type=entity_type, old=old, new=new, retires=retires, before=before)


def item_key(pk_attribute: str, sk_attribute: str | None) -> dict[str, Any]:
    """The primary key of a table's key-version record, in DynamoDB JSON."""
    if sk_attribute:
        return {pk_attribute: {"S": LEDGER_PARTITION}, sk_attribute: {"S": SORT_KEY}}
    return {pk_attribute: {"S": f"{LEDGER_PARTITION}#{SORT_KEY}"}}


def decode(item: dict[str, Any] | None) -> dict[str, Entry]:
    """The entries of a stored record (``{}`` for no item or an unreadable one)."""
    if not item or ATTRIBUTE not in item:
        return {}
    try:
        raw = json.loads(item[ATTRIBUTE]["S"])
        return {str(t): Entry(str(e["version"]), str(e.get("migration", "")),
                              {str(v): Retired(str(r.get("migration", "")), r.get("before"), str(r.get("how", "moved")))
                               for v, r in (e.get("retired") or {}).items()})
                for t, e in raw.items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        return {}


def encode(entries: dict[str, Entry]) -> dict[str, Any]:
    """The record's attribute (beside its key) for ``entries``, in DynamoDB JSON."""
    raw = {t: {"version": e.version, "migration": e.migration,
               "retired": {v: {"migration": r.migration, "before": r.before, "how": r.how}
                           for v, r in sorted(e.retired.items())}}
           for t, e in sorted(entries.items())}
    return {ATTRIBUTE: {"S": json.dumps(raw, sort_keys=True)}}


def _entry(entries: dict[str, Entry], change: KeyVersionChange, migration: str) -> Entry:
    return entries.setdefault(change.entity_type, Entry(change.old, migration))


def _unretire(entry: Entry, version: str, migration: str) -> None:
    """Forget that ``migration`` (forwards) retired ``version``; a retirement by another one stays."""
    retired = entry.retired.get(version)
    if retired is not None and retired.migration == migration and retired.how != "reversed":
        del entry.retired[version]


def applied(entries: dict[str, Entry], changes: Iterable[KeyVersionChange], migration: str) -> dict[str, Entry]:
    """The record once ``migration`` is recorded applied (run, or ``--fake``); ``entries`` is updated."""
    for c in changes:
        if c.new == c.old:
            continue  # a layout change at the same version: nothing to tell apart
        e = _entry(entries, c, migration)
        if c.new is None:  # DeleteVersion: its items are gone
            e.retired[c.old] = Retired(migration, c.before, "deleted")
            e.migration = migration
            continue
        e.version, e.migration = c.new, migration
        e.retired.pop(c.new, None)  # back in use (applied again after a reversal)
        if c.retires:
            e.retired[c.old] = Retired(migration, c.before)
    return entries


def reversal_started(entries: dict[str, Entry], changes: Iterable[KeyVersionChange],
                     migration: str) -> dict[str, Entry]:
    """The record once a reversal of ``migration`` starts: the versions it retired are live again
    (its items are moving back); nothing is retired until the reversal is recorded done."""
    for c in reversed(list(changes)):
        if c.new != c.old and c.entity_type in entries:
            _unretire(entries[c.entity_type], c.old, migration)
    return entries


def unrecorded(entries: dict[str, Entry], changes: Iterable[KeyVersionChange], migration: str,
               reversed_done: bool) -> dict[str, Entry]:
    """The record once ``migration`` is no longer recorded.

    Args:
        reversed_done: True after a reversal ran to the end (a move-mode one retires the newer
            version: its items moved back); False for ``--fake`` (only the records go: nothing is
            known of where the items are, so only what ``migration`` retired is released).
    """
    for c in reversed(list(changes)):
        if c.new == c.old:
            continue
        e = _entry(entries, c, migration)
        _unretire(e, c.old, migration)
        if c.new is None:
            continue
        e.version, e.migration = c.old, migration
        if reversed_done and c.retires:
            e.retired[c.new] = Retired(migration, c.before, "reversed")
    return entries
