"""Ctrl-C and endpoints that stop answering (real processes, real signals, a local socket that
accepts and never answers): CLI-sized timeouts, a first signal that ends a request in flight or
stops at the next checkpoint, a second one that stops at once, exit 128 + signal and the resume
line in every case; a lost lock lease is reported as such."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dynorm import conf
from tests.faults import Hook, fake_response, serve_loopback
from tests.migproject import REPO, V2, Project, load_v1, widgets


class Proxy:
    """A TCP proxy on 127.0.0.1 to ``target`` (a port); once :attr:`silent` is set it accepts
    connections and never answers, and swallows what goes either way on the open ones."""

    def __init__(self, target: int | None) -> None:
        self.target = target
        self.silent = threading.Event()
        if target is None:
            self.silent.set()
        self.sockets: list[socket.socket] = []
        #: requests (or their answers) held since :attr:`silent` was set: each one hangs its sender
        self.held = 0
        self.listener, self.port = serve_loopback(self._serve, backlog=128)

    def _serve(self, client: socket.socket) -> None:
        self.sockets.append(client)
        if self.silent.is_set() or self.target is None:
            self.held += 1
            return  # held open: never read, never answered
        upstream = socket.create_connection(("127.0.0.1", self.target))
        self.sockets.append(upstream)
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    return
                if not self.silent.is_set():
                    b.sendall(data)
                else:
                    self.held += 1
        except OSError:
            return

    def wait_held(self, timeout: float = 30.0) -> None:
        """Wait until a request hangs on the silent proxy (one sent, or answered, since :attr:`silent` was set)."""
        deadline = time.monotonic() + timeout
        while not self.held and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.held, "no request reached the silent proxy"

    def close(self) -> None:
        for s in [self.listener, *self.sockets]:
            try:
                s.close()
            except OSError:
                pass


def _config(project: Project, endpoint: str, extra: str = "") -> Path:
    cfg = project.root / "dynorm.yaml"
    cfg.write_text(f"models: [{project.pkg}.models]\nmigrations: {project.migrations}\n"
                   f"table_prefix: '{conf.get_settings().table_prefix}'\n"
                   f"connection: {{region: us-east-1, endpoint: '{endpoint}'{extra}}}\n")
    return cfg


def _env(project: Project) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{project.root}{os.pathsep}{REPO}"}


def _dynorm(project: Project, cfg: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "dynorm", "--config", str(cfg), *args], env=_env(project),
                            cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_showmigrations_on_a_silent_endpoint_ends_within_the_configured_timeouts(project: Project) -> None:
    project.write_models(**V2)
    project.makemigrations()
    silent = Proxy(None)
    try:
        cfg = _config(project, f"http://127.0.0.1:{silent.port}", ", read_timeout: 1, max_attempts: 2")
        t0 = time.monotonic()
        out, err = _dynorm(project, cfg, "showmigrations").communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        silent.close()
    assert took < 12, took  # 2 attempts x 1 s plus start-up; it was 194 s
    assert "No answer within 1 s (connection.read_timeout), 2 attempt(s)" in err, err


def test_ctrl_c_during_showmigrations_on_a_silent_endpoint_exits_130_at_once(project: Project) -> None:
    project.write_models(**V2)
    project.makemigrations()
    silent = Proxy(None)
    try:
        cfg = _config(project, f"http://127.0.0.1:{silent.port}")  # the CLI's own timeouts
        proc = _dynorm(project, cfg, "showmigrations")
        for _ in range(100):  # the request is waiting: the proxy holds its connection
            if silent.sockets:
                break
            time.sleep(0.1)
        time.sleep(0.3)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        silent.close()
    assert proc.returncode == 130, err
    assert took < 3, took
    assert "Interrupted by SIGINT" in err and "Aborted!" not in err


def _migrating(project: Project, proxy: Proxy) -> tuple[subprocess.Popen[str], Path]:
    load_v1(project, 3000)
    project.write_models(**V2)
    project.makemigrations()
    cfg = _config(project, f"http://127.0.0.1:{proxy.port}", ", read_timeout: 2, max_attempts: 2")
    proc = _dynorm(project, cfg, "migrate", "--segments", "2", "--json", "--max-wcu", "1500")
    assert proc.stderr is not None
    for line in proc.stderr:  # the rekey is under way
        if '"event": "progress"' in line:
            break
    return proc, cfg


def _resume_and_finish(project: Project, err: str, proxy: Proxy) -> None:
    assert "Resume with:" in err, err
    resume = err.split("Resume with:")[1].strip().splitlines()[0]
    proxy.silent.clear()
    finish = subprocess.run([sys.executable, "-m", *resume.split(), "--force-unlock"], env=_env(project),
                            cwd=project.root, capture_output=True, text=True, timeout=300)
    assert finish.returncode == 0, finish.stderr + finish.stdout
    after = widgets(project.table)
    assert len(after) == 3000 and all(i["PK"]["S"].startswith("v2#") for i in after)


def test_ctrl_c_while_the_endpoint_hangs_exits_130_with_the_resume_line(project: Project) -> None:
    port = int(str(conf.get_settings().endpoint).rsplit(":", 1)[1])
    proxy = Proxy(port)
    try:
        proc, _ = _migrating(project, proxy)
        proxy.silent.set()  # the endpoint stops answering mid-run
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=60)
        took = time.monotonic() - sent
        assert proc.returncode == 130, rest[-2000:]  # was 1 (ServiceError) after 76-79 s
        assert took < 20, took  # the request in flight ends within its 2 s, not retried; the release is one 2 s try
        assert "Interrupted by SIGINT" in rest
        _resume_and_finish(project, rest, proxy)
    finally:
        proxy.close()


WAITING_RUN_PYTHON = '''
import time

from dynorm.migrations import RunPython

dependencies = ["0001_initial"]


def wait(ctx):
    open({ready!r}, "w").close()
    while True:
        ctx.call("DescribeTable", {{"TableName": ctx.table_name("migshop")}})
        time.sleep(0.05)


operations = [RunPython(wait)]
'''


def _under_way(project: Project, proxy: Proxy, items: int, extra: str, *args: str) -> subprocess.Popen[str]:
    """A paced ``dynorm migrate`` rekey of ``items`` items through ``proxy``, once its first progress line is out."""
    load_v1(project, items)
    project.write_models(**V2)
    project.makemigrations()
    cfg = _config(project, f"http://127.0.0.1:{proxy.port}", extra)
    proc = _dynorm(project, cfg, "migrate", "--segments", "2", "--json", "--max-wcu", "60", *args)
    assert proc.stderr is not None
    for line in proc.stderr:
        if '"event": "progress"' in line:
            break
    return proc


def _local_port() -> int:
    return int(str(conf.get_settings().endpoint).rsplit(":", 1)[1])


@pytest.mark.parametrize("extra, bound", [
    # 5 attempts of 1 s and botocore's backoff per request, the lock's release too: 20-30 s before
    (", read_timeout: 1, max_attempts: 5", 8),
    # the dynorm command's own timeouts (5 s read, 3 attempts): 33 s measured before here, 54 s on a busier run
    pytest.param("", 15, marks=pytest.mark.slow(reason="waits out the CLI's 5 s read timeout (about 15 s)")),
], ids=["1s-read-5-attempts", "cli-defaults"])
def test_the_first_ctrl_c_on_a_silent_endpoint_stops_within_seconds(project: Project, extra: str, bound: float) -> None:
    """No request is retried after the signal (in every scan segment), the lock's release is tried
    once with a short timeout, and the run says the lock stays, until when, and how to remove it."""
    proxy = Proxy(_local_port())
    try:
        proc = _under_way(project, proxy, 200, extra)
        proxy.silent.set()  # the endpoint stops answering mid-run
        proxy.wait_held()  # a scan segment's request waits for its answer
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        took = time.monotonic() - sent
    finally:
        proxy.close()
    assert proc.returncode == 130, err[-2000:]
    assert took < bound, took
    assert "Interrupted by SIGINT" in err and "not retried" in err, err[-2000:]
    assert "the lock could NOT be released (DeleteItem: ReadTimeoutError" in err and "its lease ends by" in err
    assert "add --force-unlock to the resume command" in err
    resume = err.split("Resume with:")[1].strip().splitlines()[0]
    assert resume.endswith("migrate --segments 2 --mode move --max-wcu 60.0"), resume


def test_a_second_sigterm_stops_at_once_with_143_and_the_resume_line(project: Project) -> None:
    proxy = Proxy(_local_port())
    try:
        proc = _under_way(project, proxy, 200, ", read_timeout: 2, max_attempts: 2")
        proxy.silent.set()
        proxy.wait_held()
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        proxy.close()
    assert proc.returncode == 143, err[-2000:]
    assert took < 2, took
    assert "SIGTERM again: stopped at once" in err and "--force-unlock" in err and "Resume with:" in err


def test_a_lost_lease_on_a_silent_endpoint_exits_75_not_service_error(project: Project) -> None:
    """The endpoint stops answering with no signal: the lock's lease runs out while the requests
    wait, and that is what the run reports (exit 75, the resume line), not their ServiceError
    (exit 1, as before) nor an interruption by a signal."""
    proxy = Proxy(_local_port())
    try:
        proc = _under_way(project, proxy, 200, ", read_timeout: 1, max_attempts: 2", "--lock-ttl", "2")
        proxy.silent.set()
        silent = time.monotonic()
        _, err = proc.communicate(timeout=120)
        took = time.monotonic() - silent
    finally:
        proxy.close()
    assert proc.returncode == 75, err[-2000:]
    assert "the migration lock's lease was lost" in err and "Resume with:" in err, err[-2000:]
    assert "Error: ServiceError" not in err and "Interrupted by" not in err
    assert "the lock could NOT be released" in err
    assert took < 15, took  # two attempts of 1 s, then one short try to give the lock back


def test_ctrl_c_while_a_run_python_waits_for_a_request_exits_130_not_operation_failed(project: Project) -> None:
    """The signal ends the RunPython's request (a BaseException out of user code): that is the
    interruption, never reported as the function failing."""
    load_v1(project, 1)
    ready = project.root / "ready"
    (project.dir / "migrations" / "0002_wait.py").write_text(WAITING_RUN_PYTHON.format(ready=str(ready)))
    port = int(str(conf.get_settings().endpoint).rsplit(":", 1)[1])
    proxy = Proxy(port)
    try:
        cfg = _config(project, f"http://127.0.0.1:{proxy.port}", ", read_timeout: 2, max_attempts: 2")
        proc = _dynorm(project, cfg, "migrate")
        for _ in range(300):
            if ready.exists():
                break
            time.sleep(0.1)
        proxy.silent.set()  # the function's next request waits
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proxy.close()
    assert proc.returncode == 130, err[-2000:]
    assert "Interrupted by SIGINT" in err and "OperationFailed" not in err and "Resume with:" in err


def test_a_second_ctrl_c_stops_at_once(project: Project) -> None:
    port = int(str(conf.get_settings().endpoint).rsplit(":", 1)[1])
    proxy = Proxy(port)
    try:
        proc, _ = _migrating(project, proxy)
        proxy.silent.set()
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=60)
        took = time.monotonic() - sent
        assert proc.returncode == 130, rest[-2000:]
        assert took < 2, took
        assert "SIGINT again: stopped at once" in rest and "--force-unlock" in rest
        _resume_and_finish(project, rest, proxy)
    finally:
        proxy.close()


def test_a_lost_lease_is_reported_as_a_lost_lease(project: Project) -> None:
    from dynorm.cli import cli
    from dynorm.cli.migrate_cmds import LOST_LEASE_EXIT

    load_v1(project, 60)
    project.write_models(**V2)
    project.makemigrations()

    def fail_heartbeats(request: Any, **kwargs: Any) -> Any:
        if b"lock#" in request.body and b"expires_at" in request.body:
            return fake_response(400, {"__type": "com.amazonaws.dynamodb.v20120810#ValidationException",
                                       "Message": "injected: heartbeat fails"})
        return None

    with Hook("before-send.dynamodb.UpdateItem", fail_heartbeats):
        result = CliRunner().invoke(cli, ["--config", str(project.config()), "migrate", "--segments", "1",
                                          "--lock-ttl", "1.5", "--max-wcu", "40"])
    assert result.exit_code == LOST_LEASE_EXIT, result.output
    assert "the migration lock's lease was lost" in result.output and "Interrupted by" not in result.output
    assert "Resume with:" in result.output
