"""RekeyEntity: rewrite every item of an entity type from its old key layout to a new one."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Callable

from ..cost import OperationCost, estimate_scan_operation, key_growth
from ..errors import MigrationError
from ..index_check import check_index_keys
from ..rekey import COPY_GROUP, MOVE_GROUP, PAGE_SIZE, TALLY_WCU, Rekeyer
from ..state import EntityState, ProjectState
from ..version_counts import count_versions
from .base import KeyChange, Operation, PlanContext, RunContext, VerifyContext

if TYPE_CHECKING:  # pragma: no cover
    from ..reports import MigrateOptions, VerifyRow

__all__ = ["RekeyEntity", "scan_cost"]


def scan_cost(ctx: PlanContext, op: Operation, desc: dict[str, Any], kind: str, gsis: int, group: int,
              growth: int) -> OperationCost:
    """The ``--plan`` estimate of a scan operation on the table DescribeTable described as ``desc``.

    Args:
        ctx: the plan's options; op: the operation (for its consistency); kind, gsis, group, growth:
            as :func:`~dynorm.migrations.cost.estimate_scan_operation` takes them.
    """
    options = ctx.options
    # paced, a request takes at most one second of this process's budget (Pacer.groups), less the tally's
    budget = options.max_wcu / options.worker[1] - TALLY_WCU if options.max_wcu else None
    return estimate_scan_operation(kind, int(desc.get("ItemCount", 0)), int(desc.get("TableSizeBytes", 0)),
                                   options.segments, PAGE_SIZE, group, gsis, ctx.consistent(op), growth, budget)


class RekeyEntity(Operation):
    """Rewrite every item of an entity type from its old key layout to the new one.

    Args:
        table: logical table name; entity_type: the type attribute value.
        from_version, to_version: key versions.
        old, new: ``{"keys": ..., "fields": ..., "version_attribute": ..., "shards": ...,
            "shard_by": ...}`` (the frozen :class:`EntityState` parts, :meth:`EntityState.part`)
            before and after. A GSI in ``shards`` gets each item's bucket appended to its partition
            key, as the entity's writes do (:func:`dynorm.shards.bucket_of`): a new shard count or
            ``shard_by`` rewrites the index keys like a new template.
        transform: optional ``fn(item: dict) -> dict`` reshaping each item's plain attributes
            on the way (keys are recomputed afterwards).
    """

    needs_scan = True
    resumable = True
    dask_segments = True

    def __init__(self, table: str, entity_type: str, from_version: str, to_version: str,
                 old: dict[str, Any], new: dict[str, Any],
                 transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.table = table
        self.entity_type = entity_type
        self.from_version = from_version
        self.to_version = to_version
        self.old = EntityState.from_part(table, entity_type, from_version, old)
        self.new = EntityState.from_part(table, entity_type, to_version, new)
        self.transform = transform

    # -- state -------------------------------------------------------------------------
    def state_forwards(self, state: ProjectState) -> None:
        key = (self.table, self.entity_type)
        current = state.entities.get(key)
        if current is None:
            raise MigrationError(f"RekeyEntity: entity type {self.entity_type!r} is unknown in table {self.table!r} "
                                 "(no earlier CreateEntity).")
        if current.key_version != self.from_version:
            raise MigrationError(f"RekeyEntity {self.entity_type}: the state has key version {current.key_version!r}, "
                                 f"not {self.from_version!r}.")
        after = copy.deepcopy(self.new)  # a copy: DropIndexes changes the state's keys in place
        # a rekey changes keys, never constraints: they (and their fields' attributes and kinds) carry over,
        # else makemigrations would offer the constraint again and never offer its removal
        after.constraints = copy.deepcopy(current.constraints)
        for names in after.constraints.values():
            for n in names:
                if n in current.fields:
                    after.fields.setdefault(n, copy.copy(current.fields[n]))
        state.entities[key] = after

    def describe(self) -> str:
        return f"rekey {self.entity_type} in {self.table} from {self.from_version} to {self.to_version}"

    def deconstruct(self) -> dict[str, Any]:
        return {"table": self.table, "entity_type": self.entity_type, "from_version": self.from_version,
                "to_version": self.to_version, "old": self.old.part(), "new": self.new.part()}

    def inverse(self) -> Operation | None:
        """A RekeyEntity from the new layout back to the old one.

        Raises:
            MigrationError: the rekey has a ``transform`` (a function has no known inverse).
        """
        if self.transform is not None:
            raise MigrationError(f"{self.describe()} cannot be reversed: its transform has no inverse; "
                                 "write a new migration that rekeys forward to the layout you want.")
        return RekeyEntity(self.table, self.entity_type, self.to_version, self.from_version,
                           old=self.new.part(), new=self.old.part())

    def tables(self) -> list[str]:
        return [self.table]

    def key_versions(self, mode: str) -> list[tuple[str, str, str, str | None, bool]]:
        """A move leaves nothing at ``from_version``; a copy keeps the old items (expand/contract)."""
        return [(self.table, self.entity_type, self.from_version, self.to_version, mode == "move")]

    def name_hint(self) -> str | None:
        return f"{self.entity_type.lower()}_{self.to_version}"

    def key_change(self, table: str, entity_type: str, version: str) -> KeyChange | None:
        if (self.table, self.entity_type, self.from_version) != (table, entity_type, version):
            return None
        return KeyChange(self.to_version, self.old, self.transform)

    # -- database ----------------------------------------------------------------------
    def database_forwards(self, ctx: RunContext) -> str:
        """Move (or, with ``--mode copy``, copy) every item to the new keys; a move ends with catch-up passes.

        DynamoDB: parallel Scan (or one Query for a constant partition key) in pages, TransactWriteItems
        per group of items, the ledger's checkpoints (see :mod:`dynorm.migrations.scan`).
        """
        return ctx.scan(self, catch_up=ctx.options.mode == "move")

    def reads_consistently(self, options: MigrateOptions) -> bool:
        """Copy mode reads consistently: its Put does not compare the old item, so a stale read would be copied."""
        return options.mode == "copy"

    def plan_reads_note(self, options: MigrateOptions) -> str:
        return ", with one catch-up pass" if options.mode == "move" else ""

    def make_worker(self, job: Any, counts: Any, pacer: Any) -> Rekeyer:
        options = job.options
        return Rekeyer(self, job.table, job.physical, options.mode, counts, options.dry_run, pacer, job.consistent)

    def stranded(self, copies: Operation | None) -> tuple[str, str, str]:
        return self.from_version, self.to_version, "moved"

    def estimate(self, ctx: PlanContext) -> OperationCost | None:
        """Upper bounds of the scan's and the rewrites' requests and capacity (DescribeTable); ``None``: no table."""
        desc = ctx.describe_table(self.table)
        if desc is None:
            return None
        kind = ctx.options.mode
        gsis = sum(1 for path in self.new.keys if path != "primary")
        group = MOVE_GROUP if kind == "move" else COPY_GROUP
        return scan_cost(ctx, self, desc, kind, gsis, group, key_growth(self.old.keys, self.new.keys))

    def verify(self, ctx: VerifyContext) -> list[VerifyRow]:
        """Count the entity's items at the old and at the new version (:func:`.version_counts.count_versions`);
        when the key version does not change (index keys only), also check every item's index keys
        against the new layout (:func:`.index_check.check_index_keys`): an item whose stored index
        keys differ makes the row not ok."""
        row = count_versions(self, ctx)
        later = ctx.superseded.get((self.table, self.entity_type))
        if self.from_version == self.to_version and later is not None:
            # its new layout is not the one stored any more: checking against it would call every
            # item that later migration rewrote stale (and its repair would undo that migration)
            row.note = "; ".join(filter(None, [row.note, f"index keys not checked: {later} rekeyed this "
                                               f"entity since; verify {later}"]))
        elif self.from_version == self.to_version:
            found = check_index_keys(self, ctx)
            row.index_keys_checked, row.stale_index_keys = found.checked, found.stale
            row.stale_examples = found.examples
            row.ok = row.ok and found.stale == 0
        return [row]
