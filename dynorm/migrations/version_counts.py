"""What ``migrate --verify`` counts for a rekey: its entity's items at the old and at the new key version.

Counts come from a parallel Scan with ``Select=COUNT`` that uses the same filter as the rekey
(entity type and old or new partition-key prefix), or one Query when the partition key is
constant. When the key version is outside the partition key's constant prefix, both versions
share one read, which returns the key attributes, and each item's version is told from its key.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from .. import backend, conf
from .rekey import Counts, Rekeyer, keyed_at
from .reports import VerifyRow

if TYPE_CHECKING:  # pragma: no cover
    from .operations.base import VerifyContext

__all__ = ["count_versions"]


def _count(operation: str, params: dict[str, Any]) -> int:
    params = {k: v for k, v in params.items() if k != "Limit"}
    params["Select"] = "COUNT"
    return sum(int(resp.get("Count", 0)) for resp in backend.paginate(operation, params))


def _call(job: Any) -> Any:
    return job()


def projecting(params: dict[str, Any], attrs: list[str]) -> dict[str, Any]:
    """A copy of a migration read's Scan/Query ``params`` that returns only ``attrs`` (a
    ProjectionExpression of ``#v<n>`` names beside the filter's own) and every page whole (no
    ``Limit``, no capacity report): the reads of ``--verify`` that look at each item's keys."""
    params = {k: v for k, v in params.items() if k not in ("Limit", "ReturnConsumedCapacity")}
    names = dict(params.get("ExpressionAttributeNames", {}))
    projected = []
    for n, attr in enumerate(attrs):
        names[f"#v{n}"] = attr
        projected.append(f"#v{n}")
    params.update(ProjectionExpression=", ".join(projected), ExpressionAttributeNames=names)
    return params


def _classify(op: Any, table: Any, attrs: list[str], operation: str,
              params: dict[str, Any]) -> tuple[int, int]:
    """Read the key attributes of every item the read finds; return (at the old version, at the new one)."""
    params = projecting(params, attrs)
    old = new = 0
    for resp in backend.paginate(operation, params):
        for raw in resp.get("Items", []):
            # new first: an item whose primary key the operation does not change is already there
            if keyed_at(op.new, table, raw, op.to_version, op.entity_type):
                new += 1
            elif keyed_at(op.old, table, raw, op.from_version, op.entity_type):
                old += 1
    return old, new


def count_versions(op: Any, ctx: VerifyContext) -> VerifyRow:
    """Count the items of a RekeyEntity ``op``'s entity at its old and at its new key version.

    Args:
        op: the :class:`~dynorm.migrations.operations.RekeyEntity`; ctx: the migration, mode, segments,
            consistency and thread pool of the check.

    Returns:
        One :class:`VerifyRow`; ``ok`` follows ``ctx.mode`` (move: none left at the old version; copy:
        at least as many at the new version as at the old one).

    DynamoDB: per version ``ctx.segments`` parallel Scans with ``Select=COUNT`` (one Query for a
    constant partition key); when the version is outside the partition-key prefix, ``ctx.segments``
    parallel Scans projecting the key attributes instead.
    """
    prefix = conf.get_settings().table_prefix
    pool = ctx.pool
    table = ctx.final_state.tables[op.table]
    reader = Rekeyer(op, table, prefix + op.table, "move", Counts(), consistent=ctx.consistent)
    new_pk = op.new.keys["primary"][table.pk_attribute]
    counts, reads = [], []
    for version, template in ((op.from_version, op.old.keys["primary"][table.pk_attribute]),
                              (op.to_version, new_pk)):
        operation, _ = reader._read_params(op.entity_type, template, version, 0, 1)
        total = ctx.segments if operation == "Scan" else 1
        jobs = [reader._read_params(op.entity_type, template, version, s, total) for s in range(total)]
        reads.append(jobs)
        counts.append(sum(pool.map(lambda job: _count(*job), jobs)))
    old, new = counts
    note = ""
    if reads[0] == reads[1]:
        # the same partition-key prefix (the version is in the sort key, or after a variable):
        # read the keys and tell each item's version from its key
        note = "version outside the partition-key prefix: items read and classified by key"
        old, new = 0, 0
        attrs = sorted({*op.old.keys["primary"], *op.new.keys["primary"],
                        *(a for a, _ in op.old.fields.values()), *(a for a, _ in op.new.fields.values())})
        classify = [functools.partial(_classify, op, table, attrs, *job) for job in reads[0]]
        for o, n in pool.map(_call, classify):
            old, new = old + o, new + n
    ok = old == 0 if ctx.mode == "move" else new >= old
    return VerifyRow(ctx.migration, prefix + op.table, op.entity_type, op.from_version, op.to_version,
                     old, new, ok, note)
