"""Per-instance bookkeeping of an entity (``obj._state``), like Django's ``ModelState``.

Only :meth:`dynorm.writes.WriteOp.applied` and the read path (decoding an item) change it, so
an instance reflects what the table holds: a write that failed leaves its instance as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ModelState"]


@dataclass
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
    """

    adding: bool = True
    partial: bool = False
    fallback: str | None = None
    fallback_revision: dict[str, Any] | None = None
    related: dict[str, Any] = field(default_factory=dict)
    deferred: tuple[frozenset[str], Any] | None = None
    unread: frozenset[str] = frozenset()
    read_as: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    unique_as: dict[str, Any] = field(default_factory=dict)
