"""dynorm.yaml values are validated when loaded: the error names the key, the value and the range."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dynorm import conf
from dynorm.exceptions import ConfigurationError


@pytest.mark.parametrize("key, value, allowed", [
    ("max_attempts", "-3", "allowed 1 to 100"), ("max_attempts", "0", "allowed 1 to 100"),
    ("connect_timeout", "-1", "allowed 0.01 to 3600"), ("read_timeout", "0", "allowed 0.01 to 3600"),
    ("read_timeout", "1.0e+9", "allowed 0.01 to 3600"),
])
def test_out_of_range_values_are_refused_when_loaded(tmp_path: Path, key: str, value: str, allowed: str) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(f"connection: {{endpoint: 'http://127.0.0.1:9', {key}: {value}}}\n")
    with pytest.raises(ConfigurationError) as err:
        conf.load_file(cfg)
    text = str(err.value)
    assert f"setting {key!r} = " in text and allowed in text and str(cfg) in text, text


@pytest.mark.parametrize("value", ["true", "2.5", "'many'"])
def test_wrong_types_name_the_range_too(tmp_path: Path, value: str) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(f"connection: {{max_attempts: {value}}}\n")
    with pytest.raises(ConfigurationError, match="'max_attempts'.*must be a number from 1 to 100"):
        conf.load_file(cfg)


@pytest.mark.parametrize("value", ["'5'", '"0.5"', "1e3"])
def test_a_number_written_as_text_is_refused(tmp_path: Path, value: str) -> None:
    """``float("5")`` would take it; a quoted number is text in YAML (so is ``1e3``, without a dot)."""
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(f"connection: {{connect_timeout: {value}}}\n")
    with pytest.raises(ConfigurationError) as err:
        conf.load_file(cfg)
    text = str(err.value)
    assert "setting 'connect_timeout' = '" in text and "must be a number from 0.01 to 3600" in text, text
    assert "not text: write it without quotes" in text and str(cfg) in text


@pytest.mark.parametrize("endpoint, port", [("http://127.0.0.1:70000", "70000"), ("http://127.0.0.1:0", "0"),
                                            ("http://localhost:80x", "80x")])
def test_an_endpoint_port_outside_1_to_65535_is_refused_when_loaded(tmp_path: Path, endpoint: str, port: str) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(f"connection: {{endpoint: '{endpoint}'}}\n")
    with pytest.raises(ConfigurationError) as err:
        conf.load_file(cfg)
    text = str(err.value)
    assert f"setting 'endpoint' = {endpoint!r}" in text and f"port {port!r}" in text, text
    assert "allowed 1 to 65535" in text and str(cfg) in text


@pytest.mark.parametrize("text, key, first, second", [
    ("connection:\n  region: eu-west-1\nmodels: [a.models]\nconnection:\n  endpoint: http://127.0.0.1:8000\n",
     "connection", 1, 4),
    ("connection:\n  read_timeout: 3\n  region: eu-west-1\n  read_timeout: 9\n", "read_timeout", 2, 4),
])
def test_a_key_given_twice_is_refused_naming_it_and_both_lines(tmp_path: Path, text: str, key: str, first: int,
                                                               second: int) -> None:
    """PyYAML's safe_load keeps the second and silently drops the first block."""
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigurationError) as err:
        conf.load_file(cfg)
    message = str(err.value)
    assert f"invalid YAML in {cfg} at line {second}" in message, message
    assert f"duplicate key {key!r} (first at line {first})" in message


def test_merge_keys_still_override(tmp_path: Path) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("connection:\n  <<: {region: eu-west-1, read_timeout: 3}\n  read_timeout: 9\n")
    assert conf.load_file(cfg)["read_timeout"] == 9 and conf.load_file(cfg)["region"] == "eu-west-1"


def _cli_with(cfg: Path, *args: str) -> Any:
    from dynorm.cli import cli

    saved = dict(conf._overrides), conf._config_file
    try:
        conf.reset()
        return CliRunner().invoke(cli, ["--config", str(cfg), *args])
    finally:
        conf.reset()
        conf._overrides.update(saved[0])
        conf.use_file(saved[1])


def test_the_cli_names_an_endpoint_port_out_of_range_not_a_value_error(tmp_path: Path) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("models: [demo_project.catalog.models]\nconnection: {endpoint: 'http://127.0.0.1:70000'}\n")
    result = _cli_with(cfg, "migrate", "--plan")
    assert result.exit_code == 1
    assert "port '70000' is not a TCP port: allowed 1 to 65535" in result.output, result.output
    assert "unexpected" not in result.output and "ValueError" not in result.output


def test_the_cli_names_the_setting_not_the_network(tmp_path: Path) -> None:
    from dynorm.cli import cli

    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("models: [demo_project.catalog.models]\nconnection: {endpoint: 'http://127.0.0.1:9', "
                   "max_attempts: -3}\n")
    saved = dict(conf._overrides), conf._config_file
    try:
        conf.reset()
        result = CliRunner().invoke(cli, ["--config", str(cfg), "migrate"])
    finally:
        conf.reset()
        conf._overrides.update(saved[0])
        conf.use_file(saved[1])
    assert result.exit_code == 1
    assert "setting 'max_attempts' = -3" in result.output and "allowed 1 to 100" in result.output
    assert "could not reach" not in result.output and "Is DynamoDB Local running" not in result.output


def test_the_cli_timeouts_are_defaults_that_dynorm_yaml_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("connection: {read_timeout: 7}\n")
    saved = dict(conf._overrides), conf._config_file
    try:
        conf.reset()
        conf.set_defaults(**conf.CLI_DEFAULTS)
        conf.use_file(cfg)
        settings = conf.get_settings()
        assert settings.read_timeout == 7.0  # the file wins
        assert settings.connect_timeout == conf.CLI_DEFAULTS["connect_timeout"] == 2.0
        assert settings.max_attempts == conf.CLI_DEFAULTS["max_attempts"] == 3
        conf.set_defaults()
        assert conf.get_settings().connect_timeout == 5.0  # the library's own default
    finally:
        conf.set_defaults()
        conf.reset()
        conf._overrides.update(saved[0])
        conf.use_file(saved[1])


@pytest.mark.parametrize("text, key, says", [
    ("connection: {region: 5}\n", "region", "is not an AWS region name"),
    ("connection: {region: 'us east 1'}\n", "region", "is not an AWS region name"),
    ("connection: {region: ''}\n", "region", "is not an AWS region name"),
    ("table_prefix: 'bad prefix!'\n", "table_prefix", "cannot begin a DynamoDB table name"),
    ("connection: {endpoint: 'http://127.0.0.1:8722/some/path'}\n", "endpoint", "has a path or query"),
])
def test_a_region_prefix_or_endpoint_path_dynamodb_would_refuse_is_refused_when_loaded(tmp_path: Path, text: str,
                                                                                        key: str, says: str) -> None:
    """They failed only at the first request ("unexpected TypeError", or "could not reach DynamoDB ... Is
    DynamoDB Local running?", or DynamoDB's ValidationException), or were accepted silently."""
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigurationError) as err:
        conf.load_file(cfg)
    assert f"setting {key!r} = " in str(err.value) and says in str(err.value), str(err.value)


def test_key_versions_max_age_is_a_range_of_seconds(tmp_path: Path) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("key_versions_max_age: 5\nconnection: {region: eu-west-1, endpoint: 'http://127.0.0.1:8000/'}\n")
    assert conf.load_file(cfg)["key_versions_max_age"] == 5.0
    cfg.write_text("key_versions_max_age: -1\n")
    with pytest.raises(ConfigurationError, match="'key_versions_max_age' = -1 .* out of range: allowed 0 to 86400"):
        conf.load_file(cfg)
