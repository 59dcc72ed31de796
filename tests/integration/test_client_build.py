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
