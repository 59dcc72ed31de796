"""`dynorm local start` on one port gives one server, recorded per port in one per-user state
folder: `endpoint` and `stop` find it from any folder, and `stop` says truthfully what it did."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dynorm.cli import cli
from dynorm.local import find_jar, is_recorded_server

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dynorm(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "dynorm", *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_two_starts_at_once_give_one_tracked_server_found_from_any_folder(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("DYNORM_")},
           "DYNORM_STATE_DIR": str(state), "DYNAMODB_LOCAL_JAR": str(find_jar(ROOT)),
           "PYTHONPATH": str(ROOT)}
    first, second, elsewhere = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for d in (first, second, elsewhere):
        d.mkdir()
    port = _free_port()
    procs = [_dynorm("local", "start", "--port", str(port), cwd=d, env=env) for d in (first, second)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    try:
        assert [p.returncode for p in procs] == [0, 0], outs
        started = [o for o in outs if "DynamoDB Local started at" in o]
        reused = [o for o in outs if "already running" in o]
        assert len(started) == 1 and len(reused) == 1, outs
        pid = int(re.search(r"started at \S+ \(pid (\d+)\)", started[0]).group(1))  # type: ignore[union-attr]
        assert f"(pid {pid})" in reused[0]
        record = json.loads((state / f"server-{port}.json").read_text())
        assert record["pid"] == pid and is_recorded_server(pid, port)
        shown = _dynorm("local", "endpoint", cwd=elsewhere, env=env)
        assert shown.communicate(timeout=60)[0].strip() == f"http://127.0.0.1:{port}" and shown.returncode == 0
    finally:
        stop = _dynorm("local", "stop", cwd=elsewhere, env=env)
        out = stop.communicate(timeout=60)[0]
    assert stop.returncode == 0 and f"DynamoDB Local stopped (pid {pid}, port {port})" in out, out
    for _ in range(50):
        if not is_recorded_server(pid, port):
            break
        time.sleep(0.1)
    assert not is_recorded_server(pid, port) and not (state / f"server-{port}.json").exists()


def test_stop_with_no_record_but_a_server_on_the_port_says_nothing_was_stopped(
        dynamodb_local: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DYNORM_STATE_DIR", str(tmp_path / "state"))
    port = dynamodb_local.rsplit(":", 1)[1]
    result = CliRunner().invoke(cli, ["local", "stop", "--port", port])
    assert result.exit_code == 1 and "nothing was stopped" in result.output and "answers there" in result.output
    result = CliRunner().invoke(cli, ["local", "stop", "--port", str(_free_port())])
    assert result.exit_code == 0 and "No DynamoDB Local was running" in result.output


def test_stop_all_reports_an_unreadable_record_and_stops_the_others(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A truncated record names no process: `stop --all` names the file and what to do, still stops
    the recorded server beside it (a real process, a real SIGTERM), and exits 1."""
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("DYNORM_STATE_DIR", str(state))
    monkeypatch.chdir(tmp_path)
    port, broken_port = _free_port(), _free_port()
    # a stand-in for DynamoDB Local: its command line runs DynamoDBLocal.jar -port PORT, as the record check wants
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "DynamoDBLocal.jar",
                               "-port", str(port)])
    reaper = threading.Thread(target=server.wait)  # as for a server started by another process: no zombie left
    reaper.start()
    try:
        for _ in range(50):
            if is_recorded_server(server.pid, port):
                break
            time.sleep(0.1)
        (state / f"server-{port}.json").write_text(json.dumps({"pid": server.pid, "port": port,
                                                               "endpoint": f"http://127.0.0.1:{port}"}))
        broken = state / f"server-{broken_port}.json"
        broken.write_text('{"pid": 12')  # cut short (a full disk, a crash while writing by hand)
        result = CliRunner().invoke(cli, ["local", "stop", "--all"])
        assert result.exit_code == 1, result.output
        assert f"DynamoDB Local stopped (pid {server.pid}, port {port})" in result.output
        assert f"Cannot stop the server recorded in {broken}: the record is unreadable (not JSON" in result.output
        assert f"still runs on port {broken_port}" in result.output and f"delete {broken}" in result.output
        assert "1 recorded server(s) could not be stopped" in result.output
        reaper.join(timeout=10)
        assert server.returncode == -signal.SIGTERM
        assert broken.exists() and not (state / f"server-{port}.json").exists()
        # alone, the unreadable record is reported too, never "No DynamoDB Local was running"
        result = CliRunner().invoke(cli, ["local", "stop"])
        assert result.exit_code == 1 and "the record is unreadable" in result.output, result.output
        assert "No DynamoDB Local was running" not in result.output
    finally:
        if server.returncode is None:
            server.kill()
        reaper.join()
