"""What every ``dynorm`` command shares: the :class:`State` the root group builds, and ``pass_state``.

Its own module, so that the commands import it without importing the package that imports them.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # pragma: no cover
    from dynorm.tables import Table

__all__ = ["State", "pass_state", "check_ledger", "LEDGER_CHECK_TIMEOUTS"]

#: what ``check`` and ``makemigrations --check`` allow the ledger check (they work offline): one
#: attempt, seconds to connect and to read
LEDGER_CHECK_TIMEOUTS = {"max_attempts": 1, "connect_timeout": 1.0, "read_timeout": 3.0}


class State:
    """Built once by the root group and passed to commands (``ctx.obj``).

    Attributes:
        config: the ``--config`` path, if given.
        traceback: show full tracebacks.
    """

    def __init__(self, config: str | None, traceback: bool) -> None:
        self.config = config
        self.traceback = traceback
        self._loaded = False

    def settings(self) -> Any:
        """Load and return the settings (``--config`` wins over ``DYNORM_CONFIG``)."""
        from dynorm import conf

        if self.config and not self._loaded:
            conf.use_file(self.config)
        self._loaded = True
        return conf.get_settings()

    def load_models(self) -> list[type[Table]]:
        """Import the ``models`` modules from the settings; return the declared tables."""
        import importlib

        from dynorm.exceptions import ConfigurationError
        from dynorm.tables import all_tables

        settings = self.settings()
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        if not settings.models:
            raise ConfigurationError(
                f"no models configured ({settings.source}); list your model modules under `models:` in dynorm.yaml.")
        for module in settings.models:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise ConfigurationError(f"cannot import models module {module!r}: {exc}") from exc
        # only the tables of the configured modules (not every Table this process defined)
        mods = set(settings.models)
        return [t for t in all_tables() if t.__module__ in mods
                or any(e.__module__ in mods for e in t.entities().values())]


pass_state = click.make_pass_decorator(State)


def check_ledger(package: str, tables: list[type[Table]]) -> None:
    """Refuse when the migrations package is missing or the ledger lists migrations without a file.

    For commands that work without DynamoDB (``check``, ``makemigrations --check``): the package is
    checked first (no I/O); then the ledger, with one attempt and short timeouts
    (:data:`LEDGER_CHECK_TIMEOUTS`). When DynamoDB cannot be asked (no endpoint answers, no
    credentials, access denied), a note on stderr says the ledger was not checked, and the command
    goes on with its offline result.

    Raises:
        MigrationError: the package does not exist (or a migration file is invalid).
        UnknownMigrationsApplied: the ledger lists applied or started migrations without a file.
    """
    from dynorm import conf
    from dynorm.exceptions import ConfigurationError, ServiceError
    from dynorm.migrations.api import check_ledger as check
    from dynorm.migrations.loader import load_migrations

    migrations = load_migrations(package)
    try:
        with conf.overridden(**LEDGER_CHECK_TIMEOUTS):
            check(migrations, tables)
    except (ServiceError, ConfigurationError) as exc:
        click.echo(f"NOTE: the migration ledger was not checked, DynamoDB could not be asked: {exc} Whether the "
                   "tables hold migrations this code has no file for is unknown (`dynorm showmigrations` tells, "
                   "once DynamoDB answers); this command's result is the offline one.", err=True)
