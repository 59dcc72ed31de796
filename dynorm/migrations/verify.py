"""``dynorm migrate --verify NAME``: count the items of each rekeyed entity at the old and new key version.

After a move, no item of the entity should be left at the old version. After a copy, every old
item should have a copy, so the new version must hold at least as many items as the old one.
The counts come from a parallel Scan with ``Select=COUNT`` that uses the same filter as the rekey
(entity type and old or new partition-key prefix), or one Query when the partition key is
constant. No item is transferred to the client, except when the key version is outside the
partition key's constant prefix (in the sort key, or after a variable): then both versions share
one read, which returns the key attributes, and each item's version is told from its key.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .. import backend, conf
from .executor import Executor
from .operations import MigrationError, RekeyEntity
from .rekey import Counts, Rekeyer, keyed_at

__all__ = ["VerifyRow", "verify"]


@dataclass
class VerifyRow:
    """What ``--verify`` found for one RekeyEntity.

    Attributes:
        migration, table, entity_type, from_version, to_version: the operation.
        old, new: items of the entity at the old and at the new key version.
        ok: the counts match the mode: move: ``old == 0``; copy: ``new >= old``.
        note: how the counts were taken when not by ``Select=COUNT`` (the version is outside the
            partition-key prefix, so the keys were read and each item's version told from its key), else "".
    """

    migration: str
    table: str
    entity_type: str
    from_version: str
    to_version: str
    old: int
    new: int
    ok: bool
    note: str = ""


def _count(operation: str, params: dict[str, Any]) -> int:
    params = {k: v for k, v in params.items() if k != "Limit"}
    params["Select"] = "COUNT"
    return sum(int(resp.get("Count", 0)) for resp in backend.paginate(operation, params))


def _call(job: Any) -> Any:
    return job()


def _classify(op: RekeyEntity, table: Any, attrs: list[str], operation: str,
              params: dict[str, Any]) -> tuple[int, int]:
    """Read the key attributes of every item the read finds; return (at the old version, at the new one)."""
    params = {k: v for k, v in params.items() if k not in ("Limit", "ReturnConsumedCapacity")}
    names = dict(params.get("ExpressionAttributeNames", {}))
    projected = []
    for n, attr in enumerate(attrs):
        names[f"#v{n}"] = attr
        projected.append(f"#v{n}")
    params.update(ProjectionExpression=", ".join(projected), ExpressionAttributeNames=names)
    old = new = 0
    for resp in backend.paginate(operation, params):
        for raw in resp.get("Items", []):
            # new first: an item whose primary key the operation does not change is already there
            if keyed_at(op.new, table, raw, op.to_version, op.entity_type):
                new += 1
            elif keyed_at(op.old, table, raw, op.from_version, op.entity_type):
                old += 1
    return old, new


def verify(executor: Executor, name: str, mode: str = "move", segments: int = 4,
           consistent: bool = True) -> tuple[bool, list[VerifyRow]]:
    """Count the items of each RekeyEntity of migration ``name`` at its old and new key version.

    Args:
        executor: the project's executor (loaded migrations); name: a migration name or unique prefix.
        mode: ``"move"`` (no item may be left at the old version) or ``"copy"`` (at least as many at
            the new version as at the old one).
        segments: parallel Scan segments per count (threads).
        consistent: strongly consistent counts (default; an eventually consistent Scan may still see
            items moved a moment ago).

    Returns:
        ``(ok, rows)``: ``ok`` is False when the migration is not applied or any row does not match.

    Raises:
        MigrationError: no migration ``name``, or a bad ``mode``/``segments``.

    DynamoDB: Query on the ledger (applied migrations), then per RekeyEntity and version
    ``segments`` parallel Scans with ``Select=COUNT`` (one Query for a constant partition key); when
    the version is outside the partition-key prefix, ``segments`` parallel Scans projecting the key
    attributes instead.
    """
    if mode not in ("move", "copy"):
        raise MigrationError(f"--mode must be move or copy, not {mode!r}.")
    if segments < 1:
        raise MigrationError(f"--segments must be >= 1, not {segments}.")
    resolved = executor._resolve(name)
    migration = next((m for m in executor.migrations if m.name == resolved), None)
    if migration is None:
        raise MigrationError(f"no migration {name!r}.")
    applied = migration.name in executor.applied()
    rows: list[VerifyRow] = []
    prefix = conf.get_settings().table_prefix
    with ThreadPoolExecutor(max_workers=segments) as pool:
        for op in migration.operations:
            if not isinstance(op, RekeyEntity):
                continue
            table = executor.final_state.tables[op.table]
            reader = Rekeyer(op, table, prefix + op.table, "move", Counts(), consistent=consistent)
            new_pk = op.new.keys["primary"][table.pk_attribute]
            counts, reads = [], []
            for version, template in ((op.from_version, op.old.keys["primary"][table.pk_attribute]),
                                      (op.to_version, new_pk)):
                operation, _ = reader._read_params(op.entity_type, template, version, 0, 1)
                total = segments if operation == "Scan" else 1
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
            ok = old == 0 if mode == "move" else new >= old
            rows.append(VerifyRow(migration.name, prefix + op.table, op.entity_type, op.from_version, op.to_version,
                                  old, new, ok, note))
    return applied and all(r.ok for r in rows), rows
