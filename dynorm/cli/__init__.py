"""The ``dynorm`` command line: thin click commands over the library.

Only click is imported at start-up (``dynorm --help`` stays fast); each command imports
what it uses. Library errors become one clear line and a non-zero exit here, at the CLI
boundary; ``--traceback`` shows the whole story. Nothing in dynorm imports this package.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # pragma: no cover
    from dynorm.tables import Table

__all__ = ["main", "cli", "State"]


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


class _Group(click.Group):
    """Turns dynorm errors into one line and exit code 1 (unless --traceback)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.Exit:
            raise
        except click.ClickException:
            raise
        except Exception as exc:
            from dynorm.exceptions import DynormError

            state = ctx.obj if isinstance(ctx.obj, State) else None
            if state is not None and state.traceback:
                raise
            if isinstance(exc, DynormError):
                # per-entity errors by their qualified name: Issue.DoesNotExist, not DoesNotExist
                raise click.ClickException(f"{type(exc).__qualname__}: {exc}") from exc
            raise click.ClickException(f"unexpected {type(exc).__name__}: {exc} (run with --traceback for details)") \
                from exc


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", type=click.Path(dir_okay=False), default=None,
              help="Path to dynorm.yaml (default: $DYNORM_CONFIG, else ./dynorm.yaml).")
@click.option("--traceback", is_flag=True, help="Show the full traceback on errors.")
@click.version_option(package_name="dynorm", prog_name="dynorm")
@click.pass_context
def cli(ctx: click.Context, config: str | None, traceback: bool) -> None:
    """dynorm: a Django-style ORM for DynamoDB single-table design."""
    ctx.obj = State(config, traceback)


def _register() -> None:
    from . import local_cmd, migrate_cmds, patterns_cmd, schema_cmds, shell

    cli.add_command(schema_cmds.check)
    cli.add_command(migrate_cmds.migrate)
    cli.add_command(migrate_cmds.makemigrations)
    cli.add_command(migrate_cmds.showmigrations)
    cli.add_command(shell.shell)
    cli.add_command(patterns_cmd.patterns)
    cli.add_command(local_cmd.local)


_register()


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="dynorm")
