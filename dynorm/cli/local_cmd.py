"""``dynorm local start|endpoint|stop``: a DynamoDB Local server for development."""

from __future__ import annotations

import click


@click.group()
def local() -> None:
    """Run DynamoDB Local (in memory, on 127.0.0.1) for development."""


@local.command()
@click.option("--port", type=int, default=None, help="TCP port (default: a free one).")
@click.option("--keep/--no-keep", default=True, help="Leave it running after this command exits.")
def start(port: int | None, keep: bool) -> None:
    """Start DynamoDB Local (or reuse the one already recorded) and print its endpoint."""
    from dynorm.local import LocalDynamoDB, read_state

    state = read_state()
    if state is not None:
        click.echo(f"DynamoDB Local already running at {state['endpoint']} (pid {state['pid']}).", err=True)
        return
    server = LocalDynamoDB(port=port).start(keep=keep)
    server.save_state()
    click.echo(f"DynamoDB Local started at {server.endpoint} (pid {server.process.pid if server.process else '?'}).",
               err=True)


@local.command()
def endpoint() -> None:
    """Print the endpoint of the running server (for DYNORM_ENDPOINT)."""
    from dynorm.local import LocalServerError, read_state

    state = read_state()
    if state is None:
        raise LocalServerError("no DynamoDB Local is running; start one with `make demo` or `dynorm local start`.")
    click.echo(state["endpoint"])


@local.command()
def stop() -> None:
    """Stop the server started by `dynorm local start`."""
    from dynorm.local import stop_recorded

    click.echo("DynamoDB Local stopped." if stop_recorded() else "No DynamoDB Local was running.")
