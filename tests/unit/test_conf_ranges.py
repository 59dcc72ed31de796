"""dynorm.yaml values are validated when loaded: the error names the key, the value and the range."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from dynorm import conf
from dynorm.exceptions import ConfigurationError


@pytest.mark.parametrize("key, value, allowed", [
    ("max_attempts", "-3", "allowed 1 to 100"), ("max_attempts", "0", "allowed 1 to 100"),
    ("connect_timeout", "-1", "allowed 0.01 to 3600"), ("read_timeout", "0", "allowed 0.01 to 3600"),
    ("read_timeout", "1e9", "allowed 0.01 to 3600"),
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
