"""AddConstraint and RemoveConstraint: a unique constraint added to (or removed from) an entity with items.

``makemigrations`` writes them when ``unique=True`` or ``Meta.constraints`` changes on an entity the
migrations already record (an entity recorded for the first time carries its constraints in its
``CreateEntity``: it has no items to backfill). See :mod:`dynorm.migrations.sentinels` for the scans.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from ... import conf
from ..errors import MigrationError
from ..rekey import Counts
from ..sentinels import SentinelDeleter, SentinelWriter, audit_sentinels, repair_sentinels
from ..state import ProjectState
from .base import Operation, RunContext, VerifyContext, require_table

if TYPE_CHECKING:  # pragma: no cover
    from ..reports import VerifyRow

__all__ = ["AddConstraint", "RemoveConstraint", "SETTLE_PASSES"]

#: consistent checks (and repairs) of the invariant after a backfill before it is left partial
SETTLE_PASSES = 3
#: what ``migrate`` says about an AddConstraint left partial by duplicate values
PARTIAL_HINT = ("Items share a value of the new unique constraint (listed above): change or delete the extra "
                "items (a write of an item whose value another item holds releases nothing), then run `dynorm "
                "migrate` again: it retries them and checks every item's sentinel before recording it applied.")


class AddConstraint(Operation):
    """Record a unique constraint and backfill the sentinel of every item's values.

    The backfill is a segmented Scan of the entity's items (every key version), resumable from
    per-segment checkpoints and paced by ``--max-wcu``/``--max-rcu`` like a rekey, with one
    TransactWriteItems per item (about 4 WCU): the sentinel's conditional Put and a ConditionCheck that
    the item still holds the value read (an item changed or deleted since is read again). Items sharing a
    value leave the migration partial, listing each duplicate value and the item that holds it; what was
    written stays valid, so after fixing the duplicates ``dynorm migrate`` again finishes it. It is
    recorded applied only once the invariant is checked (:meth:`database_forwards`).

    Args:
        table, entity_type: the entity; name: the constraint's name.
        fields: field name -> ``[attribute, kind]`` of the constrained fields, in the constraint's order.
        owner: primary-key field name -> attribute (stored in each sentinel as its owner).
    """

    needs_scan = True
    resumable = True

    def __init__(self, table: str, entity_type: str, name: str, fields: dict[str, list[str]],
                 owner: dict[str, str]) -> None:
        self.table = table
        self.entity_type = entity_type
        self.name = name
        self.fields = {k: list(v) for k, v in fields.items()}
        self.owner = dict(owner)

    def state_forwards(self, state: ProjectState) -> None:
        require_table(state, self.table, "AddConstraint")
        entity = state.entities.get((self.table, self.entity_type))
        if entity is None:
            raise MigrationError(f"AddConstraint: entity type {self.entity_type!r} is unknown in table {self.table!r}.")
        entity.constraints[self.name] = list(self.fields)
        for n, spec in self.fields.items():
            entity.fields.setdefault(n, copy.copy(spec))

    def describe(self) -> str:
        return (f"add unique constraint {self.name} ({', '.join(self.fields)}) to {self.entity_type} in {self.table}: "
                "write the sentinel of every item")

    def deconstruct(self) -> dict[str, Any]:
        return {"table": self.table, "entity_type": self.entity_type, "name": self.name, "fields": self.fields,
                "owner": self.owner}

    def inverse(self) -> Operation | None:
        return RemoveConstraint(self.table, self.entity_type, self.name, self.fields, self.owner)

    def tables(self) -> list[str]:
        return [self.table]

    def name_hint(self) -> str | None:
        return f"{self.entity_type.lower()}_{self.name}"

    def database_forwards(self, ctx: RunContext) -> str:
        """Scan the entity's items and put each one's sentinel (see the class), then check the invariant.

        Whatever a run did before (an interrupted or partial one, writes of application processes that
        lack the constraint), the migration is recorded applied only once a consistent read of the
        constraint's sentinels and of the entity's items finds every item's value held by a sentinel
        naming it and no orphan sentinel: orphans are deleted (conditional: still the one read) and
        missing sentinels claimed, up to :data:`SETTLE_PASSES` times.

        DynamoDB: the backfill (above); per settling pass two consistent Scans (sentinels, items), one
        conditional DeleteItem per orphan and one TransactWriteItems per missing sentinel.
        """
        status = ctx.scan(self, catch_up=False)
        if status == "partial":
            ctx.report.hint = PARTIAL_HINT
        if status != "done" or ctx.dry_run:
            return status
        writer = SentinelWriter(self, ctx.final_state.tables[self.table], ctx.physical(self.table), Counts())
        for _ in range(SETTLE_PASSES):
            found = audit_sentinels(writer)
            if found.ok:
                ctx.report.counts["verified"] = found.items
                return "done"
            if ctx.stop.is_set():
                return "interrupted"
            left = repair_sentinels(writer, found)
            ctx.report.counts["repaired"] = ctx.report.counts.get("repaired", 0) + writer.counts.rewritten
            writer.counts.rewritten = 0
            if left:
                ctx.report.hint = PARTIAL_HINT
                ctx.report.status = f"partial: {len(left)} item(s) hold a value another item holds"
                ctx.report.errors = left[:20]
                return "partial"
        ctx.report.status = "partial: sentinels keep going missing or orphaned"
        ctx.report.errors = [*found.problems(19), (
            f"after {SETTLE_PASSES} passes the sentinels of {self.name} still do not match the items: a process "
            f"without the constraint is still writing {self.entity_type} items. Deploy the models with the "
            "constraint everywhere, then run `dynorm migrate` again (docs/constraints.md, deploy order)")]
        return "partial"

    def verify(self, ctx: VerifyContext) -> list[VerifyRow]:
        """Check the invariant (``migrate --verify``): items holding a value, sentinels, missing ones, orphans.

        DynamoDB: two consistent Scans (the constraint's sentinels, the entity's items); nothing is written.
        """
        from ..reports import VerifyRow

        physical = conf.get_settings().table_prefix + self.table
        found = audit_sentinels(SentinelWriter(self, ctx.final_state.tables[self.table], physical, Counts(), True))
        return [VerifyRow(ctx.migration, physical, self.entity_type, "", "", found.items, found.sentinels, found.ok,
                          constraint=self.name, problems=found.problems())]

    def make_worker(self, job: Any, counts: Any, pacer: Any) -> SentinelWriter:
        """The :class:`~dynorm.migrations.sentinels.SentinelWriter` of a scan ``job``."""
        return SentinelWriter(self, job.table, job.physical, counts, job.options.dry_run, pacer, job.consistent)


class RemoveConstraint(Operation):
    """Forget a unique constraint and delete its sentinels (a Scan of them, one DeleteItem each, resumable).

    Args:
        as :class:`AddConstraint` (``fields`` and ``owner`` let it be reversed).
    """

    needs_scan = True
    resumable = True

    def __init__(self, table: str, entity_type: str, name: str, fields: dict[str, list[str]] | None = None,
                 owner: dict[str, str] | None = None) -> None:
        self.table = table
        self.entity_type = entity_type
        self.name = name
        self.fields = {k: list(v) for k, v in (fields or {}).items()}
        self.owner = dict(owner or {})

    def state_forwards(self, state: ProjectState) -> None:
        entity = state.entities.get((self.table, self.entity_type))
        if entity is None or self.name not in entity.constraints:
            raise MigrationError(f"RemoveConstraint: {self.entity_type!r} in table {self.table!r} has no unique "
                                 f"constraint {self.name!r}.")
        del entity.constraints[self.name]

    def describe(self) -> str:
        return f"remove unique constraint {self.name} from {self.entity_type} in {self.table}: delete its sentinels"

    def deconstruct(self) -> dict[str, Any]:
        return {"table": self.table, "entity_type": self.entity_type, "name": self.name, "fields": self.fields,
                "owner": self.owner}

    def inverse(self) -> Operation | None:
        if not self.fields:
            raise MigrationError(f"{self.describe()} cannot be reversed: its fields are not recorded.")
        return AddConstraint(self.table, self.entity_type, self.name, self.fields, self.owner)

    def tables(self) -> list[str]:
        return [self.table]

    def database_forwards(self, ctx: RunContext) -> str:
        """Scan the constraint's sentinels and delete them (DeleteItem each)."""
        return ctx.scan(self, catch_up=False)

    def make_worker(self, job: Any, counts: Any, pacer: Any) -> SentinelDeleter:
        """The :class:`~dynorm.migrations.sentinels.SentinelDeleter` of a scan ``job``."""
        return SentinelDeleter(self, job.table, job.physical, counts, job.options.dry_run, pacer, job.consistent)
