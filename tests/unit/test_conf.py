"""Settings: YAML, environment overrides and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynorm import conf
from dynorm.exceptions import ConfigurationError


def test_load_file_and_env_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("models: [a.b]\ntable_prefix: dev-\nconnection: {region: eu-west-1, endpoint: 'http://127.0.0.1:1'}\n")
    values = conf.load_file(cfg)
    assert values["models"] == ("a.b",) and values["table_prefix"] == "dev-" and values["region"] == "eu-west-1"
    monkeypatch.setenv("DYNORM_REGION", "ap-south-1")
    assert conf._from_env()["region"] == "ap-south-1"


@pytest.mark.parametrize("text, message", [
    ("models: [a\n", "invalid YAML"),
    ("colour: red\n", "unknown key"),
    ("connection: {port: 1}\n", "unknown connection key"),
    ("models: 3\n", "list of module paths"),
    ("- 1\n", "mapping"),
])
def test_bad_files_give_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigurationError, match=message):
        conf.load_file(cfg)


def test_bad_values() -> None:
    with pytest.raises(ConfigurationError, match="endpoint"):
        conf._build({"endpoint": "127.0.0.1:8000"})
    with pytest.raises(ConfigurationError, match="unknown setting"):
        conf._build({"colour": "red"})


def test_the_wire_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert conf.Settings().wire == "direct"
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("wire: botocore\n")
    assert conf.load_file(cfg)["wire"] == "botocore"
    monkeypatch.setenv("DYNORM_WIRE", "botocore")
    assert conf._from_env()["wire"] == "botocore"
    cfg.write_text("wire: fast\n")
    with pytest.raises(ConfigurationError, match=r"'wire' = 'fast' \(.*dynorm.yaml\) must be 'direct'.*'botocore'"):
        conf.load_file(cfg)
    with pytest.raises(ConfigurationError, match="DYNORM_WIRE"):
        conf._build({"wire": None})


def test_is_local() -> None:
    assert conf.Settings(endpoint="http://127.0.0.1:8000").is_local
    assert conf.Settings(endpoint="http://localhost:8000").is_local
    assert not conf.Settings(endpoint="https://dynamodb.us-east-1.amazonaws.com").is_local


@pytest.mark.parametrize("host", ["127.dynamodb.corp.example", "127.attacker.example"])
def test_a_dns_name_starting_with_127_is_not_loopback(host: str) -> None:
    """A DNS name that starts with "127." is not loopback: cursors need a secret, the CLI asks."""
    assert conf.Settings(endpoint=f"https://{host}:8000", cursor_secret=None).is_local is False


@pytest.mark.parametrize("endpoint", ["http://127.0.0.2:8000", "http://[::1]:8000", "http://localhost"])
def test_loopback_addresses_are_local(endpoint: str) -> None:
    assert conf.Settings(endpoint=endpoint).is_local


def test_overridden_settings_apply_to_one_thread_and_its_client_only() -> None:
    """Two Dask tasks of two runs in one worker process: each thread talks to its own endpoint."""
    import threading

    from dynorm import backend

    base = conf.get_settings()
    seen: dict[str, tuple[str | None, str | None]] = {}
    inside = threading.Event()
    leave = threading.Event()

    def task(name: str, endpoint: str) -> None:
        with conf.overridden(endpoint=endpoint):
            inside.set()
            leave.wait(5)
            seen[name] = (conf.get_settings().endpoint, backend.client().meta.endpoint_url)

    a = threading.Thread(target=task, args=("a", "http://127.0.0.1:1"))
    a.start()
    inside.wait(5)
    b = threading.Thread(target=task, args=("b", "http://127.0.0.1:2"))
    b.start()
    assert conf.get_settings() is base  # the rest of the process is untouched
    leave.set()
    a.join()
    b.join()
    assert seen == {"a": ("http://127.0.0.1:1",) * 2, "b": ("http://127.0.0.1:2",) * 2}
    assert conf.get_settings() is base
    with pytest.raises(ConfigurationError, match="endpoint"):
        with conf.overridden(endpoint="127.0.0.1:1"):
            pass
