"""Building a client leaves the process's garbage collector as it found it, and does not run it
over the service model it loads (a cold start's CPU: docs/performance.md)."""

from __future__ import annotations

import gc
from typing import Any, Iterator

import pytest

from dynorm import backend, conf
from dynorm.backend import clients


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations of the collections that start while the test runs."""
    started: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.collect()  # start from empty generations: what follows counts the build's own allocations
    gc.callbacks.append(note)
    try:
        yield started
    finally:
        gc.callbacks.remove(note)
        backend.reset_client()


def test_building_a_client_runs_the_collector_at_most_once(dynamodb_local: str, collections: list[int]) -> None:
    backend.reset_client()
    with conf.overridden(endpoint=dynamodb_local, region="eu-west-3"):
        built = backend.client()  # reads the service model: ~28,000 long-lived dicts and lists
    assert built.meta.region_name == "eu-west-3"
    # with the collector running during create_client: about 40 collections, one of them full
    assert len(collections) <= 2, collections
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled(dynamodb_local: str, collections: list[int]) -> None:
    backend.reset_client()
    gc.disable()
    try:
        with conf.overridden(endpoint=dynamodb_local, region="eu-west-3"):
            backend.client()
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert collections == []


def test_a_build_that_fails_restores_the_collector(collections: list[int]) -> None:
    with pytest.raises(RuntimeError, match="refused"):
        with clients.collector_paused():
            assert not gc.isenabled()
            raise RuntimeError("refused")
    assert gc.isenabled()


def test_at_exit_the_clients_are_dropped_and_a_later_exit_handler_still_gets_one(tmp_path: Any) -> None:
    import subprocess
    import sys

    script = tmp_path / "app.py"
    script.write_text(
        "import atexit, sys\n"
        "from dynorm import backend, conf\n"
        "from dynorm.backend import clients\n"
        "def late():  # registered first: runs after dynorm's own exit handler\n"
        "    print('dropped', clients._clients == {} and clients._senders == [])\n"
        "    print('rebuilt', backend.client() is not first)\n"
        "atexit.register(late)\n"
        "conf.configure(endpoint='http://127.0.0.1:9', region='eu-west-3')\n"
        "first = backend.client()\n"
        "print('built', len(clients._clients))\n")
    env = {"PATH": "/usr/bin:/bin", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
           "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["built 1", "dropped True", "rebuilt True"]


def _slow_credentials(tmp_path: Any) -> dict[str, str]:
    """An environment whose profile's credential_process announces it started (file ``started``), then
    waits until the file ``release`` exists (at most 60 s) before printing credentials."""
    import os

    script = tmp_path / "creds.sh"
    script.write_text(f"#!/bin/sh\ntouch {tmp_path}/started\n"
                      f"for i in $(seq 600); do [ -e {tmp_path}/release ] && break; sleep 0.1; done\n"
                      "echo '{\"Version\": 1, \"AccessKeyId\": \"abc\", \"SecretAccessKey\": \"def\"}'\n")
    os.chmod(script, 0o755)
    (tmp_path / "config").write_text(f"[profile slow]\ncredential_process = {script}\n")
    return {"PATH": "/usr/bin:/bin", "AWS_CONFIG_FILE": str(tmp_path / "config"), "AWS_PROFILE": "slow",
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
            "AWS_EC2_METADATA_DISABLED": "true"}


def test_the_collector_runs_while_the_credential_chain_is_walked(tmp_path: Any) -> None:
    import subprocess
    import sys

    script = tmp_path / "app.py"
    script.write_text(
        "import gc, os, threading, time\n"
        "from dynorm import backend, conf\n"
        f"d = {str(tmp_path)!r}\n"
        "seen = []\n"
        "def watch():  # another thread of the application, while the client is built\n"
        "    while not os.path.exists(d + '/started'):\n"
        "        time.sleep(0.01)\n"
        "    seen.append(gc.isenabled())\n"
        "    open(d + '/release', 'w').close()\n"
        "threading.Thread(target=watch, daemon=True).start()\n"
        "conf.configure(endpoint='http://127.0.0.1:9', region='eu-west-3')\n"
        "backend.client()\n"
        "print('enabled while the chain ran', seen)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=_slow_credentials(tmp_path), timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "enabled while the chain ran [True]"


def _exits_before_release(tmp_path: Any, body: str) -> bool:
    """Run ``body`` (after a client was built and dropped, with the credential chain made slow) and tell
    whether the process exits while the credential_process still waits (20 s grace)."""
    import subprocess
    import sys

    env = _slow_credentials(tmp_path)
    script = tmp_path / "app.py"
    script.write_text(
        "import os, sys, threading, time\n"
        "from dynorm import backend, conf\n"
        "conf.configure(endpoint='http://127.0.0.1:9', region='eu-west-3')\n"
        "os.environ.update(AWS_ACCESS_KEY_ID='k', AWS_SECRET_ACCESS_KEY='s')\n"
        "backend.client()  # the first client: dynorm's exit handler is registered\n"
        "backend.reset_client()\n"
        "del os.environ['AWS_ACCESS_KEY_ID'], os.environ['AWS_SECRET_ACCESS_KEY']\n"
        f"d = {str(tmp_path)!r}\n" + body)
    proc = subprocess.Popen([sys.executable, str(script)], env=env, cwd=tmp_path)
    try:
        proc.wait(timeout=20)
        return True
    except subprocess.TimeoutExpired:
        return False
    finally:
        (tmp_path / "release").touch()
        proc.wait(timeout=90)


def test_exit_does_not_wait_for_a_daemon_thread_building_a_client(tmp_path: Any) -> None:
    assert _exits_before_release(tmp_path, (
        "threading.Thread(target=backend.client, daemon=True).start()\n"
        "while not os.path.exists(d + '/started'):\n"
        "    time.sleep(0.01)\n"))


def test_a_child_forked_during_a_client_build_exits(tmp_path: Any) -> None:
    assert _exits_before_release(tmp_path, (
        "threading.Thread(target=backend.client, daemon=True).start()\n"
        "while not os.path.exists(d + '/started'):\n"
        "    time.sleep(0.01)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    sys.exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "os._exit(0)\n"))


def test_overlapping_builds_resume_the_collector_when_the_last_one_ends(collections: list[int]) -> None:
    first, second = clients.collector_paused(), clients.collector_paused()
    first.__enter__()
    second.__enter__()  # another thread's build, begun while the first still runs
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second build still runs: the first's end does not resume it
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_child_forked_while_the_collector_is_paused_gets_it_back() -> None:
    import os

    with clients.collector_paused():
        pid = os.fork()
        if pid == 0:  # the building thread does not exist here: nothing would ever resume it
            os._exit(0 if gc.isenabled() else 1)
        _, status = os.waitpid(pid, 0)
        assert not gc.isenabled()
    assert os.waitstatus_to_exitcode(status) == 0
    assert gc.isenabled()

