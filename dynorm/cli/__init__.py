"""The ``dynorm`` command line: thin click commands over the library.

Only click is imported at start-up (``dynorm --help`` stays fast); each command imports
what it uses. Library errors become one clear line and a non-zero exit here, at the CLI
boundary; ``--traceback`` shows the whole story. Nothing in dynorm imports this package.
"""

from __future__ import annotations

from typing import Any

import click

from ._common import State, pass_state

__all__ = ["main", "cli", "State", "pass_state"]


class _Group(click.Group):
    """Turns dynorm errors into one line and exit code 1 (unless --traceback)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.Exit:
            raise
        except click.ClickException:
            raise
        except KeyboardInterrupt:
            # Ctrl-C outside a migration's own handler (planning, showmigrations, a hung request):
            # the documented exit code, not click's "Aborted!" and 1
            click.echo("\nInterrupted by SIGINT. Run the same command again.", err=True)
            raise click.exceptions.Exit(130) from None
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
    if _process["cli"]:  # the `dynorm` process (not a CliRunner in someone's tests): timeouts for a person waiting
        from dynorm import conf

        conf.set_defaults(**conf.CLI_DEFAULTS)


def _register() -> None:
    from . import design_cmds, local_cmd, migrate_cmds, patterns_cmd, schema_cmds, shell, streams_cmd

    cli.add_command(schema_cmds.check)
    cli.add_command(migrate_cmds.migrate)
    cli.add_command(migrate_cmds.makemigrations)
    cli.add_command(migrate_cmds.showmigrations)
    cli.add_command(shell.shell)
    cli.add_command(patterns_cmd.patterns)
    cli.add_command(local_cmd.local)
    cli.add_command(design_cmds.export)
    cli.add_command(design_cmds.import_)
    cli.add_command(streams_cmd.streams)


_register()


#: set by :func:`main`: this process is the ``dynorm`` command
_process = {"cli": False}


def main() -> None:
    """Console-script entry point (``dynorm``, ``python -m dynorm``).

    Connection timeouts default to :data:`dynorm.conf.CLI_DEFAULTS` (dynorm.yaml still wins).
    """
    _process["cli"] = True
    cli(prog_name="dynorm")
