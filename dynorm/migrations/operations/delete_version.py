"""DeleteVersion: delete the items an entity left at an old key version, never the only copy of one."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..cost import OperationCost, key_growth
from ..errors import MigrationError
from ..rekey import DELETE_GROUP, Counts, Rekeyer, VersionDeleter
from ..state import ProjectState
from .base import Operation, PlanContext, RunContext
from .rekey_entity import scan_cost

if TYPE_CHECKING:  # pragma: no cover
    from ..reports import MigrateOptions

__all__ = ["DeleteVersion"]


class DeleteVersion(Operation):
    """Delete the items of an entity type stored under an old key version (after a copy-mode rollout).

    Before deleting anything it checks that every item of that version has a copy under the
    entity's current keys, and refuses otherwise (nothing is deleted): items an application still on
    the old version wrote after the copy passed them would be lost. Each page is checked again
    before its deletes, and an item without a copy is never deleted.

    Args:
        table, entity_type: which items.
        version: the key version to delete.
        pk: the partition-key template those items were written with (for the prefix).
        copy_missing: copy the items that have no current-version copy to the current keys first
            (once every application instance writing ``version`` is stopped), instead of refusing.
    """

    def __init__(self, table: str, entity_type: str, version: str, pk: str, copy_missing: bool = False) -> None:
        self.table = table
        self.entity_type = entity_type
        self.version = version
        self.pk = pk
        self.copy_missing = copy_missing

    def state_forwards(self, state: ProjectState) -> None:
        current = state.entities.get((self.table, self.entity_type))
        if current is not None and current.key_version == self.version:
            raise MigrationError(f"DeleteVersion {self.entity_type} {self.version}: that is the current key version; "
                                 "deleting it would delete the live items.")

    def describe(self) -> str:
        return f"delete {self.entity_type} items at key version {self.version} in {self.table}"

    def deconstruct(self) -> dict[str, Any]:
        out: dict[str, Any] = {"table": self.table, "entity_type": self.entity_type, "version": self.version,
                               "pk": self.pk}
        if self.copy_missing:
            out["copy_missing"] = True
        return out

    def key_versions(self, mode: str) -> list[tuple[str, str, str, str | None, bool]]:
        """Its items at ``version`` are deleted, whatever the mode."""
        return [(self.table, self.entity_type, self.version, None, True)]

    def inverse(self) -> Operation | None:
        raise MigrationError(f"{self.describe()} cannot be reversed: the deleted items are gone.")

    def tables(self) -> list[str]:
        return [self.table]

    # -- database ----------------------------------------------------------------------
    def database_forwards(self, ctx: RunContext) -> str:
        """Check every old item's current copy, then delete the old items (conditional), then catch up.

        DynamoDB: the check's Scan/Query in 1 MB pages and consistent BatchGetItem of the copies (once
        per migration, recorded in the ledger), then the scan's pages, a BatchGetItem of each page's
        copies and TransactWriteItems of conditional Deletes (each carrying the ledger's tally), and
        the catch-up passes (see :mod:`dynorm.migrations.scan`).

        Raises:
            MigrationError: items without a current copy of their revision (nothing was deleted).
        """
        def before(worker: VersionDeleter, total: int, threads: int) -> None:
            self.check_copies(ctx, worker, total, threads)

        return ctx.scan(self, catch_up=True, copies=ctx.copies_chain(self), before=before)

    def plan_reads_note(self, options: MigrateOptions) -> str:
        return ", with the check for current copies and one catch-up pass"

    def make_worker(self, job: Any, counts: Any, pacer: Any) -> VersionDeleter:
        """A :class:`VersionDeleter` with the copy-mode :class:`Rekeyer` of ``job.copies`` to find (or write) copies."""
        options = job.options
        copies = Rekeyer(job.copies, job.table, job.physical, "copy", Counts(), options.dry_run, pacer, True) \
            if job.copies is not None else None
        return VersionDeleter(self, job.table, job.physical, counts, options.dry_run, pacer=pacer,
                              consistent=job.consistent, copies=copies)

    def stranded(self, copies: Operation | None) -> tuple[str, str, str]:
        new_v = getattr(copies, "to_version", None) or "the current version"
        return self.version, new_v, "deleted"

    def estimate(self, ctx: PlanContext) -> OperationCost | None:
        """Upper bounds of the check's, the scan's and the deletes' requests and capacity (DescribeTable)."""
        desc = ctx.describe_table(self.table)
        if desc is None:
            return None
        # every delete transaction carries the ledger's tally action: 99 Deletes at most
        kind, gsis, group = "delete", len(ctx.final_state.tables[self.table].gsis), DELETE_GROUP - 1
        growth = 0
        copies: Any = ctx.copies_chain(self)
        if copies is not None:  # the copies read by the check may be larger than the old items
            growth = key_growth(copies.old.keys, copies.new.keys)
            if self.copy_missing:  # every old item may lack its copy: copy-mode Puts first
                kind = "delete+copy"
        return scan_cost(ctx, self, desc, kind, gsis, group, growth)

    def check_copies(self, ctx: RunContext, worker: VersionDeleter, total: int, threads: int) -> None:
        """Before a DeleteVersion deletes anything: every old item must have a current-version copy.

        One pass over the old version (Scan/Query with the operation's filter, 1 MB pages) and a
        consistent BatchGetItem of the copies' keys; with ``copy_missing`` the missing copies are
        written first (copy-mode transactions). Recorded in the ledger once passed.

        Raises:
            MigrationError: items without a copy (nothing was deleted); the message lists the first
                keys and the fix.
        """
        copies = worker.copies
        ledger = ctx.ledger
        if copies is None or ctx.stop.is_set():
            return
        if ledger is not None:
            mark = ledger.checkpoint(ctx.label, ctx.index, "verified")
            if mark is not None and mark["done"]:
                return
        lock = threading.Lock()
        orphans: list[str] = []
        found = {"n": 0}

        def segment(seg: int) -> None:
            op_name, params = worker.read_params(seg, total, page_size=None)
            for items, _ in worker.pages(op_name, params, None):
                missing = worker.missing([raw for raw in items if worker.at_version(raw)])
                if missing and self.copy_missing:
                    result = copies.process([raw for raw, _ in missing])
                    missing = [(key, reason) for key, reason in result.failed]
                if ctx.stop.is_set():
                    return
                with lock:
                    found["n"] += len(missing)
                    orphans.extend(f"{worker._key_of(raw)}" for raw, _ in missing[: max(0, 10 - len(orphans))])

        ctx.parallel(list(range(total)), segment, threads)
        ctx.report.counts["copied"] = copies.counts.rewritten
        if ctx.stop.is_set():
            return
        if found["n"]:
            to = copies.op.to_version
            raise MigrationError(
                f"{ctx.label}: {self.describe()} refused; nothing was deleted: {found['n']} item(s) at key version "
                f"{self.version} have no copy at the current key version {to}, or a copy of another revision (first: "
                f"{'; '.join(orphans)}). They "
                f"were written at {self.version} after the rekey passed them (an application still writing "
                f"{self.version}), or never copied, or their copy was deleted by an application on {to} "
                f"models WITHOUT Meta.read_versions listing {self.version} (such a delete leaves the old item). "
                f"Fix: stop every application instance that writes key version {self.version} (deploy the {to} "
                f"models, with Meta.read_versions listing {self.version} until this DeleteVersion has run), then add "
                "copy_missing=True to this DeleteVersion (it copies them to the current keys first: check first "
                "that none of them was deleted at the current version, or it comes back) and run "
                "`dynorm migrate` again.")
        if ledger is not None:
            ledger.save_checkpoint(ctx.label, ctx.index, "verified", None, True, {"copied": copies.counts.rewritten})
