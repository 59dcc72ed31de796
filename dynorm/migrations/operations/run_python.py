"""RunPython: a hand-written function run with a migration context (``makemigrations --empty``)."""

from __future__ import annotations

from typing import Any, Callable

from ..errors import MigrationError
from .base import Operation, RunContext

__all__ = ["RunPython"]


class RunPython(Operation):
    """Run ``fn(context)`` with a :class:`~dynorm.migrations.executor.MigrationContext`.

    ``reverse(context)`` undoes it when migrating backwards; without it the migration cannot be
    reversed.
    """

    #: a function is not known to be idempotent: under ``--worker`` each process would run it
    worker_safe = False

    def __init__(self, fn: Callable[[Any], Any], reverse: Callable[[Any], Any] | None = None) -> None:
        if not callable(fn):
            raise MigrationError(f"RunPython needs a function, got {fn!r}.")
        self.fn = fn
        self.reverse = reverse

    def describe(self) -> str:
        return f"run {getattr(self.fn, '__name__', repr(self.fn))}"

    def deconstruct(self) -> dict[str, Any]:
        raise MigrationError("RunPython operations are written by hand (makemigrations --empty).")

    def inverse(self) -> Operation | None:
        if self.reverse is None:
            raise MigrationError(f"{self.describe()} cannot be reversed: give RunPython a reverse= function "
                                 "(RunPython(forward, reverse=backward)).")
        return RunPython(self.reverse, self.fn)

    def database_forwards(self, ctx: RunContext) -> str:
        """Call the function (not in a dry run); whatever it sends is its own.

        Raises:
            OperationFailed: the function raised (see :meth:`RunContext.run_python`).
        """
        ctx.report.status = "would run" if ctx.dry_run else "ran"
        if not ctx.dry_run:
            ctx.run_python(self, self.fn)
        return "done"
