"""Table operations: CreateTable, SyncIndexes, DropIndexes, AlterStream (table DDL); AlterKeyEncoding (state only)."""

from __future__ import annotations

import copy
from typing import Any

from ... import backend
from ...schema import gsi_update_params, stream_of, stream_updates, update_table, wait_active
from ..errors import MigrationError
from ..state import ProjectState, TableState, split_gsis
from .base import Operation, RunContext, require_table

__all__ = ["CreateTable", "SyncIndexes", "DropIndexes", "AlterStream", "AlterKeyEncoding"]


def _present_gsis(ctx: RunContext, table: str) -> set[str]:
    """Names of the GSIs the table has now (DescribeTable; none when it does not exist)."""
    return {g["IndexName"] for g in (ctx.describe_table(table) or {}).get("GlobalSecondaryIndexes", [])}


class CreateTable(Operation):
    """Create a table with its GSIs and LSIs (CreateTable; skipped when it exists)."""

    def __init__(self, name: str, gsis: dict[str, Any] | None = None, lsis: dict[str, str] | None = None,
                 **options: Any) -> None:
        plain, multi = split_gsis(gsis or {})
        self.table = TableState(name=name, gsis=plain, multi_gsis=multi, lsis=dict(lsis or {}), **options)

    def state_forwards(self, state: ProjectState) -> None:
        if self.table.name in state.tables:
            raise MigrationError(f"CreateTable: table {self.table.name!r} already exists in the migration state.")
        # a copy, dicts included: later operations (SyncIndexes, DropIndexes) change the state's table in
        # place, and the same loaded migrations are replayed again (executor, makemigrations, migrate's check)
        state.tables[self.table.name] = copy.deepcopy(self.table)

    def describe(self) -> str:
        names = [*self.table.gsis, *self.table.multi_gsis]
        gsis = f" with GSIs {', '.join(names)}" if names else ""
        return f"create table {self.table.name}{gsis}"

    def deconstruct(self) -> dict[str, Any]:
        return self.table.definition()

    def inverse(self) -> Operation | None:
        raise MigrationError(f"{self.describe()} cannot be reversed: it would drop the table and every item in it "
                             "(delete the table yourself if that is what you want).")

    def tables(self) -> list[str]:
        return [self.table.name]

    def created_table(self) -> str | None:
        return self.table.name

    def added_multi_gsis(self) -> tuple[str, list[str]] | None:
        return self.table.name, list(self.table.multi_gsis)

    def database_forwards(self, ctx: RunContext) -> str:
        """Create the table as the final state declares it unless it exists (DescribeTable, CreateTable)."""
        name = self.table.name
        exists = ctx.describe_table(name) is not None
        ctx.report.status = "exists" if exists else ("would create" if ctx.dry_run else "created")
        if ctx.created_by_this_run(name):
            ctx.report.status = "created"  # just now, to hold the ledger
        if not exists and not ctx.dry_run:
            ctx.create_table(ctx.final_state.tables.get(name, self.table))
        return "done"


class SyncIndexes(Operation):
    """Add GSIs to an existing table (UpdateTable per index, waiting until ACTIVE); never drops any."""

    def __init__(self, table: str, gsis: dict[str, Any]) -> None:
        self.table = table
        self.gsis, self.multi_gsis = split_gsis(gsis)

    @property
    def names(self) -> list[str]:
        """The GSIs this operation adds, template GSIs first."""
        return [*self.gsis, *self.multi_gsis]

    def state_forwards(self, state: ProjectState) -> None:
        t = require_table(state, self.table, "SyncIndexes")
        t.gsis.update(self.gsis)
        t.multi_gsis.update(self.multi_gsis)

    def describe(self) -> str:
        return f"add GSI(s) {', '.join(self.names)} to {self.table}"

    def deconstruct(self) -> dict[str, Any]:
        gsis: dict[str, Any] = {k: list(v) for k, v in self.gsis.items()}
        gsis.update({k: v for k, v in self.multi_gsis.items()})
        return {"table": self.table, "gsis": gsis}

    def inverse(self) -> Operation | None:
        return None  # the index stays: an unused GSI loses nothing (drop it by hand to save its cost)

    def tables(self) -> list[str]:
        return [self.table]

    def added_multi_gsis(self) -> tuple[str, list[str]] | None:
        return self.table, list(self.multi_gsis)

    def database_forwards(self, ctx: RunContext) -> str:
        """Add the GSIs the table lacks: DescribeTable, then UpdateTable ``Create`` per index, waiting until ACTIVE."""
        missing = [g for g in self.names if g not in _present_gsis(ctx, self.table)]
        ctx.report.status = f"{'would add' if ctx.dry_run else 'added'} {', '.join(missing) or 'nothing'}"
        if not ctx.dry_run:
            ddl = TableState(self.table, gsis=dict(self.gsis), multi_gsis=dict(self.multi_gsis)).options()
            physical = ctx.physical(self.table)
            for gname in missing:
                backend.call("UpdateTable", gsi_update_params(physical, ddl, gname))
                wait_active(physical)
        return "done"


class DropIndexes(Operation):
    """Drop GSIs from a table (UpdateTable ``Delete`` per index, waiting until ACTIVE); no item is rewritten.

    Every entity of the table stops writing the dropped indexes' key attributes (their
    recorded layouts lose those indexes). Items keep the attributes they hold: after the
    drop they are plain undeclared attributes, which dynorm's writes keep. This is how an
    access pattern finishes moving onto a multi-attribute GSI (docs/modelling.md).
    """

    def __init__(self, table: str, gsis: list[str]) -> None:
        self.table = table
        self.gsis = list(gsis)

    def state_forwards(self, state: ProjectState) -> None:
        t = require_table(state, self.table, "DropIndexes")
        for g in self.gsis:
            if g not in t.gsis and g not in t.multi_gsis:
                raise MigrationError(f"DropIndexes: table {self.table!r} has no GSI {g!r} in the migration state.")
            t.gsis.pop(g, None)
            t.multi_gsis.pop(g, None)
        for (tname, _etype), e in state.entities.items():
            if tname == self.table:
                for g in self.gsis:
                    e.keys.pop(g, None)
                    e.shards.pop(g, None)
                    e.shard_by.pop(g, None)

    def describe(self) -> str:
        return f"drop GSI(s) {', '.join(self.gsis)} of {self.table} (items are not rewritten)"

    def deconstruct(self) -> dict[str, Any]:
        return {"table": self.table, "gsis": list(self.gsis)}

    def inverse(self) -> Operation | None:
        raise MigrationError(f"{self.describe()} cannot be reversed: items written since no longer hold the "
                             "dropped indexes' key attributes. Add the index again in a new migration and "
                             "rekey the entities that use it.")

    def tables(self) -> list[str]:
        return [self.table]

    def database_forwards(self, ctx: RunContext) -> str:
        """Drop the GSIs still present: DescribeTable, then UpdateTable ``Delete`` per index, waiting until ACTIVE."""
        present = _present_gsis(ctx, self.table)
        gone = [g for g in self.gsis if g in present]
        ctx.report.status = f"{'would drop' if ctx.dry_run else 'dropped'} {', '.join(gone) or 'nothing'}"
        if not ctx.dry_run:
            physical = ctx.physical(self.table)
            for gname in gone:
                backend.call("UpdateTable", {"TableName": physical,
                                             "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": gname}}]})
                wait_active(physical)
        return "done"


class AlterStream(Operation):
    """Turn a table's DynamoDB stream on, off, or to another view type (``Table.Meta.stream``).

    UpdateTable with a ``StreamSpecification``, waiting until ACTIVE; DynamoDB cannot change the
    view type of an enabled stream, so that is two requests (off, then on: the new stream has a new
    ARN). No item is touched.

    Args:
        table: the logical table name.
        stream: the new ``StreamViewType`` (``"NEW_AND_OLD_IMAGES"``, ...), ``None`` to turn it off.
        previous: the view type before (recorded by ``makemigrations``, for migrating backwards).
    """

    def __init__(self, table: str, stream: str | None, previous: str | None = None) -> None:
        from ...table_options import check_stream

        self.table = table
        self.stream = check_stream(f"AlterStream({table!r})", stream)
        self.previous = check_stream(f"AlterStream({table!r}, previous=...)", previous)

    def state_forwards(self, state: ProjectState) -> None:
        require_table(state, self.table, "AlterStream").stream = self.stream

    def describe(self) -> str:
        return (f"turn on the stream of {self.table} ({self.stream})" if self.stream
                else f"turn off the stream of {self.table}")

    def deconstruct(self) -> dict[str, Any]:
        out: dict[str, Any] = {"table": self.table, "stream": self.stream}
        if self.previous is not None:
            out["previous"] = self.previous
        return out

    def inverse(self) -> Operation | None:
        return AlterStream(self.table, self.previous, self.stream)

    def tables(self) -> list[str]:
        return [self.table]

    def database_forwards(self, ctx: RunContext) -> str:
        """DescribeTable, then the UpdateTable request(s) the stream needs (none when it is as wanted)."""
        steps = stream_updates(ctx.physical(self.table), stream_of(ctx.describe_table(self.table)), self.stream)
        verb = "would change" if ctx.dry_run else "changed"
        ctx.report.status = f"{verb} the stream to {self.stream or 'off'}" if steps else "stream as declared"
        if not ctx.dry_run:
            for params in steps:
                update_table(params)
        return "done"


class AlterKeyEncoding(Operation):
    """Record a table's new key encoding (state only: no request).

    The stored keys are rewritten by the ``RekeyEntity`` operations that follow it in the same
    migration (one per entity type, each to a new key version), which render the new keys
    with the new encoding.
    """

    state_only = True

    def __init__(self, table: str, key_encoding: str) -> None:
        self.table = table
        self.key_encoding = key_encoding

    def state_forwards(self, state: ProjectState) -> None:
        require_table(state, self.table, "AlterKeyEncoding").key_encoding = self.key_encoding

    def describe(self) -> str:
        return f"record key_encoding={self.key_encoding!r} for table {self.table}"

    def deconstruct(self) -> dict[str, Any]:
        return {"table": self.table, "key_encoding": self.key_encoding}

    def tables(self) -> list[str]:
        return [self.table]
