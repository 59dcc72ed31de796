"""What ``migrate --verify`` checks for a rekey that keeps its key version: every item's index keys.

A RekeyEntity whose key version does not change rewrites index keys in place (a new ``shards`` or
``shard_by`` of a write-sharded GSI, a newly sharded index, an index added to or changed on the
entity). Counting items by key version cannot tell its items apart: an old process still writing
after ``migrate`` writes the same version. dynorm's rule is that an item's keys always equal the
keys rendered from its stored fields, so this check reads every item of the entity (a parallel
Scan, strongly consistent, projecting the key attributes and the fields the new templates use; the
rekey's own filter) and renders its index keys under the migration's new frozen layout with the
rekey's own rendering (:meth:`~dynorm.migrations.rekey.Rekeyer.new_keys`, buckets included).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import _codec, backend, conf
from .rekey import Counts, Rekeyer
from .version_counts import projecting

if TYPE_CHECKING:  # pragma: no cover
    from .operations.base import VerifyContext

__all__ = ["IndexCheck", "check_index_keys", "EXAMPLES"]

#: the primary keys of at most this many items with stale index keys are reported
EXAMPLES = 10


@dataclass
class IndexCheck:
    """What :func:`check_index_keys` found.

    Attributes:
        checked: the entity's items read; stale: those whose stored index keys differ from the ones
            the new layout renders from their fields; examples: the primary keys (attribute -> plain
            value) of the first :data:`EXAMPLES` of them.
    """

    checked: int = 0
    stale: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, checked: int, stale: list[dict[str, Any]]) -> None:
        """Add one page's figures (thread-safe)."""
        with self._lock:
            self.checked += checked
            self.stale += len(stale)
            self.examples.extend(stale[:EXAMPLES - len(self.examples)])


def _read(reader: Rekeyer, attrs: list[str], operation: str, params: dict[str, Any], found: IndexCheck) -> None:
    for resp in backend.paginate(operation, projecting(params, attrs)):
        items = resp.get("Items", [])
        stale = [_codec.item_from_av(reader._key_of(raw)) for raw in items if reader.stale_index_keys(raw)]
        found.add(len(items), stale)


def check_index_keys(op: Any, ctx: VerifyContext) -> IndexCheck:
    """Count the items of RekeyEntity ``op``'s entity whose stored index keys differ from the new layout's.

    Args:
        op: a :class:`~dynorm.migrations.operations.RekeyEntity` (meant for one that keeps its key
            version); ctx: the check's segments, consistency and thread pool.

    Returns:
        An :class:`IndexCheck`. A difference is a wrong value (another bucket, a stale sort key), a
        missing value (no keys for an index the new layout writes) or a value the new layout has
        none for (:meth:`~dynorm.migrations.rekey.Rekeyer.stale_index_keys`).

    DynamoDB: ``ctx.segments`` parallel Scans (one Query for a constant partition key) with the
    rekey's filter (entity type, new partition-key prefix), projecting the primary and index key
    attributes and the fields the new templates use; nothing is written.
    """
    table = ctx.final_state.tables[op.table]
    physical = conf.get_settings().table_prefix + op.table
    reader = Rekeyer(op, table, physical, "move", Counts(), consistent=ctx.consistent)
    pk_template = op.new.keys["primary"][table.pk_attribute]
    primary = [a for a in (table.pk_attribute, table.sk_attribute) if a]
    attrs = sorted({*primary, *reader.index_attributes(), *(a for a, _ in op.new.fields.values())})
    operation, _ = reader._read_params(op.entity_type, pk_template, op.to_version, 0, 1)
    total = ctx.segments if operation == "Scan" else 1
    found = IndexCheck()
    jobs = [reader._read_params(op.entity_type, pk_template, op.to_version, s, total) for s in range(total)]
    list(ctx.pool.map(lambda job: _read(reader, attrs, job[0], job[1], found), jobs))
    return found
