"""The contexts the executor hands an operation: :class:`OperationRun` (run), :class:`Planning` (``--plan``).

They implement the protocols of :mod:`dynorm.migrations.operations.base` over an executor
(:class:`Host`): the operation reads the run's options, ledger, state and stop event here and
asks for the shared mechanisms (the segmented scan, DDL, user code) without importing the
executor.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Protocol

from .. import backend, conf
from ..exceptions import TableDoesNotExist
from .cost import Pacer
from .ledger import Ledger
from .operations.base import Operation
from .reports import MigrateOptions, OpReport
from .scan import Reporter, ScanRun, SegmentJob, consistent_for, parallel
from .state import ProjectState, TableState

__all__ = ["Host", "OperationRun", "Planning", "physical", "describe_table"]


def physical(logical: str) -> str:
    """The physical name of a table (the configured prefix included)."""
    return conf.get_settings().table_prefix + logical


def describe_table(logical: str) -> dict[str, Any] | None:
    """DescribeTable's ``Table`` of a logical table, ``None`` when it does not exist (DescribeTable)."""
    try:
        return backend.call("DescribeTable", {"TableName": physical(logical)})["Table"]
    except TableDoesNotExist:
        return None


class Host(Protocol):
    """What the contexts need of the executor that runs the operations."""

    final_state: ProjectState
    reporter: Reporter | None
    _pacer: Pacer
    _created: set[str]

    def _create_table(self, table: TableState) -> None: ...

    def _run_python(self, ctx: OperationRun, op: Operation, fn: Callable[[Any], Any]) -> None: ...

    def _run_segments(self, job: SegmentJob, worker: Any, mine: list[int]) -> None: ...

    def copies_chain(self, op: Any, position: int) -> Operation | None: ...


class OperationRun:
    """The :class:`~dynorm.migrations.operations.base.RunContext` of one operation of one migration.

    Args:
        host: the executor; position: the migration's position among the loaded ones.
        migration, label, index: the migration's name, its ledger label and the operation's position.
        options, ledger, state, report, stop: see the protocol.
    """

    def __init__(self, host: Host, position: int, migration: str, label: str, index: int, options: MigrateOptions,
                 ledger: Ledger | None, state: ProjectState, report: OpReport, stop: threading.Event) -> None:
        self.host, self.position = host, position
        self.migration, self.label, self.index = migration, label, index
        self.options, self.ledger, self.state, self.report, self.stop = options, ledger, state, report, stop
        self.final_state = host.final_state

    @property
    def dry_run(self) -> bool:
        """Plan mode: read and count, write nothing."""
        return self.options.dry_run

    def physical(self, logical: str) -> str:
        """The physical name of a table (prefix included)."""
        return physical(logical)

    def describe_table(self, logical: str) -> dict[str, Any] | None:
        """DescribeTable's ``Table`` (``None``: no such table)."""
        return describe_table(logical)

    def create_table(self, table: TableState) -> None:
        """Create the table (CreateTable, wait until ACTIVE, UpdateTimeToLive when it has a TTL attribute)."""
        self.host._create_table(table)

    def created_by_this_run(self, logical: str) -> bool:
        """Whether this run created the table (to hold the ledger)."""
        return physical(logical) in self.host._created

    def run_python(self, op: Operation, fn: Callable[[Any], Any]) -> None:
        """Call ``fn`` with a ``MigrationContext``; its errors become ``OperationFailed``."""
        self.host._run_python(self, op, fn)

    def scan(self, op: Operation, *, catch_up: bool, copies: Operation | None = None,
             before: Callable[[Any, int, int], None] | None = None) -> str:
        """Run ``op``'s segmented scan (:class:`~dynorm.migrations.scan.ScanRun`); return its status."""
        return ScanRun(self, op, copies, self.host._run_segments, self.host._pacer, self.host.reporter).run(
            catch_up, before)

    def copies_chain(self, op: Operation) -> Operation | None:
        """The copy-mode rekey from ``op``'s version to its entity's current one after this migration."""
        return self.host.copies_chain(op, self.position)

    def parallel(self, segments: list[int], fn: Callable[[int], None], threads: int) -> None:
        """Run ``fn(segment)`` on a thread pool; the first error stops the others and is raised."""
        parallel(segments, fn, threads, self.stop)


class Planning:
    """The :class:`~dynorm.migrations.operations.base.PlanContext` of ``migrate --plan`` for one operation.

    Args:
        host: the executor; options: the run's options; position: the position of the migration that
            holds the operation (the last one for an operation that none holds, such as an inverse).
    """

    def __init__(self, host: Host, options: MigrateOptions, position: int) -> None:
        self.host, self.options, self.position = host, options, position
        self.final_state = host.final_state

    def describe_table(self, logical: str) -> dict[str, Any] | None:
        """DescribeTable's ``Table`` (``None``: no such table)."""
        return describe_table(logical)

    def consistent(self, op: Operation) -> bool:
        """Whether ``op``'s scan reads consistently under the options."""
        return consistent_for(op, self.options)

    def copies_chain(self, op: Operation) -> Operation | None:
        """As :meth:`OperationRun.copies_chain`."""
        return self.host.copies_chain(op, self.position)
