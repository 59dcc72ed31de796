"""The operation interface (after Django's ``migrations/operations/base.py``) and the contexts it runs in.

Every operation carries its own behaviour: how it changes the frozen state
(:meth:`Operation.state_forwards`), what it sends forwards and backwards
(:meth:`Operation.database_forwards` / :meth:`Operation.database_backwards`, through a
:class:`RunContext` the executor provides), what ``migrate --plan`` estimates
(:meth:`Operation.estimate`, through a :class:`PlanContext`), what ``migrate --verify`` counts
(:meth:`Operation.verify`, through a :class:`VerifyContext`), and the capabilities the executor
asks about (:attr:`Operation.needs_scan`, :attr:`Operation.resumable`, :attr:`Operation.worker_safe`,
:attr:`Operation.dask_segments`). The executor, cost estimator, verifier, loader and API call
these; none of them switches on an operation's type.

The contexts are protocols: this package never imports the executor.
"""

from __future__ import annotations

from concurrent.futures import Executor as _Pool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..errors import MigrationError
from ..state import EntityState, ProjectState, TableState

if TYPE_CHECKING:  # pragma: no cover
    import threading

    from ..cost import OperationCost
    from ..ledger import Ledger
    from ..reports import MigrateOptions, OpReport, VerifyRow

__all__ = ["Operation", "RunContext", "PlanContext", "VerifyContext", "KeyChange", "require_table"]


@dataclass(frozen=True)
class KeyChange:
    """What a rekey from one key version changes: where it leads and how items are reshaped on the way.

    Attributes:
        to_version: the key version it writes.
        old: the frozen layout items have before it.
        transform: ``fn(item) -> item`` applied to each item's attributes, or ``None``.
    """

    to_version: str
    old: EntityState
    transform: Callable[[dict[str, Any]], dict[str, Any]] | None


class RunContext(Protocol):
    """What an operation's ``database_forwards``/``database_backwards`` receive from the executor.

    Attributes:
        migration: the migration's name; label: its ledger label (``<name>`` or ``<name>~reverse``);
        index: the operation's position in the migration.
        options: the run's :class:`~dynorm.migrations.reports.MigrateOptions` (``dry_run``: plan mode,
            nothing is written); ledger: the migration ledger (``None`` in a dry run).
        state: the frozen state before the migration; final_state: after every migration.
        report: the :class:`~dynorm.migrations.reports.OpReport` the operation fills (status, counts).
        stop: set on SIGINT/SIGTERM or a lost lock: end at the next checkpoint.
    """

    migration: str
    label: str
    index: int
    options: MigrateOptions
    ledger: Ledger | None
    state: ProjectState
    final_state: ProjectState
    report: OpReport
    stop: threading.Event

    @property
    def dry_run(self) -> bool:
        """Plan mode: read and count, write nothing."""

    def physical(self, logical: str) -> str:
        """The physical name of a table (prefix included)."""

    def describe_table(self, logical: str) -> dict[str, Any] | None:
        """DescribeTable's ``Table`` of a logical table, ``None`` when it does not exist."""

    def create_table(self, table: TableState) -> None:
        """Create a table (CreateTable, wait until ACTIVE, its TTL); one created meanwhile counts as created."""

    def created_by_this_run(self, logical: str) -> bool:
        """Whether this run created the table (to hold the ledger) before its operation ran."""

    def run_python(self, op: Operation, fn: Callable[[Any], Any]) -> None:
        """Call ``fn(MigrationContext)``; any error becomes ``OperationFailed`` naming ``op``."""

    def scan(self, op: Operation, *, catch_up: bool, copies: Operation | None = None,
             before: Callable[[Any, int, int], None] | None = None) -> str:
        """Run ``op``'s segmented scan (:mod:`dynorm.migrations.scan`); return its status."""

    def copies_chain(self, op: Operation) -> Operation | None:
        """The copy-mode rekey from ``op``'s version to its entity's current one (``None``: undeclared)."""

    def parallel(self, segments: list[int], fn: Callable[[int], None], threads: int) -> None:
        """Run ``fn(segment)`` on a thread pool; the first error stops the others and is raised."""


class PlanContext(Protocol):
    """What :meth:`Operation.estimate` receives (``migrate --plan``).

    Attributes:
        options: the run's options; final_state: the state after every migration.
    """

    options: MigrateOptions
    final_state: ProjectState

    def describe_table(self, logical: str) -> dict[str, Any] | None:
        """DescribeTable's ``Table`` of a logical table, ``None`` when it does not exist."""

    def consistent(self, op: Operation) -> bool:
        """Whether ``op``'s scan reads consistently under the options."""

    def copies_chain(self, op: Operation) -> Operation | None:
        """As :meth:`RunContext.copies_chain`."""


class VerifyContext(Protocol):
    """What :meth:`Operation.verify` receives (``migrate --verify``).

    Attributes:
        migration: the migration's name; final_state: the state after every migration;
        mode: ``"move"`` or ``"copy"``; segments: parallel Scan segments per count;
        consistent: strongly consistent counts; pool: the thread pool counting them;
        superseded: ``(table, entity type)`` -> the later applied migration that rekeyed it again.
    """

    migration: str
    final_state: ProjectState
    mode: str
    segments: int
    consistent: bool
    pool: _Pool
    superseded: dict[tuple[str, str], str]


class Operation:
    """Base class of migration operations.

    Subclasses override what applies to them; the defaults describe an operation that only
    changes the frozen state.
    """

    #: True for operations that only change the recorded state (no request is sent).
    state_only = False
    #: True when it reads the table with a segmented Scan/Query (RekeyEntity, DeleteVersion).
    needs_scan = False
    #: True when an interrupted run resumes it from per-segment checkpoints (else it runs again whole,
    #: unless the ledger records it done).
    resumable = False
    #: True when each ``--worker i/N`` process may run it: its scan segments are split between them, or
    #: running it in every process changes nothing twice (table DDL). A RunPython is not.
    worker_safe = True
    #: True when its scan segments may run as Dask tasks (``migrate --executor dask``).
    dask_segments = False

    # -- state -------------------------------------------------------------------------
    def state_forwards(self, state: ProjectState) -> None:
        """Apply this operation to ``state`` in place."""

    def describe(self) -> str:
        """One line for ``--plan`` and progress output."""
        return type(self).__name__

    def deconstruct(self) -> dict[str, Any]:
        """Keyword arguments that rebuild this operation (for the migration writer)."""
        raise NotImplementedError

    def inverse(self) -> Operation | None:
        """The operation that undoes this one when migrating backwards (``None``: nothing to undo).

        Raises:
            MigrationError: the operation cannot be undone without losing data.
        """
        raise MigrationError(f"{self.describe()} cannot be reversed.")

    def key_versions(self, mode: str) -> list[tuple[str, str, str, str | None, bool]]:
        """What recording this operation applied does to key versions, for the ledger's key-version record.

        Args:
            mode: the run's ``--mode`` (``"move"`` or ``"copy"``).

        Returns:
            ``(table, entity_type, old, new, retires)`` per entity type whose items it moves away
            from ``old`` (``new``: the version they move to, ``None`` when they are deleted);
            ``retires``: whether ``old`` holds none of them once it is applied. ``[]`` by default.
        """
        return []

    def tables(self) -> list[str]:
        """Logical names of the tables this operation touches (pure)."""
        return []

    def created_table(self) -> str | None:
        """The logical table this operation creates (the first one holds the ledger), else ``None``."""
        return None

    def added_multi_gsis(self) -> tuple[str, list[str]] | None:
        """``(table, names)`` of the multi-attribute GSIs this operation adds, else ``None``."""
        return None

    def name_hint(self) -> str | None:
        """Words for the migration's name (``WIDGET`` to v2: ``widget_v2``), else ``None``."""
        return None

    def key_change(self, table: str, entity_type: str, version: str) -> KeyChange | None:
        """What this operation changes for the items of ``entity_type`` in ``table`` at key ``version``
        (``None``: it does not rekey them)."""
        return None

    # -- database ----------------------------------------------------------------------
    def database_forwards(self, ctx: RunContext) -> str:
        """Send what applies this operation; return ``done``, ``waiting``, ``partial`` or ``interrupted``.

        Fills ``ctx.report`` (status, counts, errors). A state-only operation sends nothing.

        Raises:
            MigrationError: an operation that is neither state-only nor implements this.
        """
        if self.state_only:
            return "done"
        raise MigrationError(f"migration {ctx.migration}: unknown operation {self!r}.")

    def database_backwards(self, ctx: RunContext) -> str:
        """Send what undoes this operation: its :meth:`inverse`, run forwards (``done`` when there is none)."""
        step = self.inverse()
        if step is None or step.state_only:
            return "done"
        return step.database_forwards(ctx)

    def reads_consistently(self, options: MigrateOptions) -> bool:
        """Whether its scan reads consistently when ``--consistent-read`` is not given (default: no, half the RCU)."""
        return False

    def estimate(self, ctx: PlanContext) -> OperationCost | None:
        """The requests and capacity ``migrate --plan`` prints (``None``: nothing worth estimating)."""
        return None

    def plan_reads_note(self, options: MigrateOptions) -> str:
        """What ``migrate --plan``'s read figures include besides the scan (``", with one catch-up pass"``)."""
        return ""

    def verify(self, ctx: VerifyContext) -> list[VerifyRow]:
        """What ``migrate --verify`` counts for this operation (default: nothing)."""
        return []

    def stranded(self, copies: Operation | None) -> tuple[str, str, str]:
        """For the catch-up message: ``(old version, new version, what a pass did to an item)``."""
        raise MigrationError(f"{self.describe()} has no catch-up pass.")

    def make_worker(self, job: Any, counts: Any, pacer: Any) -> Any:
        """The :mod:`~dynorm.migrations.rekey` worker that rewrites (or deletes) the items of a scan ``job``."""
        raise MigrationError(f"{self.describe()} does not scan.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.describe()}>"


def require_table(state: ProjectState, name: str, who: str) -> TableState:
    """The table ``name`` of ``state``.

    Raises:
        MigrationError: no earlier migration creates it (``who`` names the operation).
    """
    if name not in state.tables:
        raise MigrationError(f"{who}: table {name!r} is not created by any earlier migration.")
    return state.tables[name]
