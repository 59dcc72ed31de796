"""Small things a user sees (issue 12, section 5): the README quick start runs twice, per-entity
errors print under their entity's name, create_table(exist_ok=True)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dynorm import ServiceError, capture, conf
from tests.models import Retail, Store

ROOT = Path(__file__).resolve().parents[2]


def readme_quick_start() -> str:
    """The python block of the README's quick start."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Quick start"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def test_readme_quick_start_runs_twice(tmp_path: Path, dynamodb_local: str) -> None:
    script = tmp_path / "quickstart.py"
    script.write_text(readme_quick_start())
    prefix = f"readme{os.getpid()}-"
    env = {**os.environ, "DYNORM_ENDPOINT": dynamodb_local, "DYNORM_TABLE_PREFIX": prefix}
    try:
        for run in (1, 2):
            proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                                  text=True, timeout=120)
            assert proc.returncode == 0, f"run {run}: {proc.stderr[-2000:]}"
            assert "Query" in proc.stdout and "GSI1" in proc.stdout
            assert proc.stdout.strip().splitlines()[-1] == str(["Model 3"] * run)
    finally:
        from dynorm import backend

        backend.call("DeleteTable", {"TableName": prefix + "fromatoz"})


def test_create_table_exist_ok() -> None:
    # the fixture created Retail already
    with pytest.raises(ServiceError) as err:
        Retail.create_table()
    assert err.value.code == "ResourceInUseException"
    Store.objects.create(store_id="s1", name="One")
    with capture() as c:
        assert Retail.create_table(exist_ok=True) is False
    # then wait until ACTIVE and make sure the declared TTL is on (it is: nothing more is sent)
    assert c.operations == ["CreateTable", "DescribeTable", "DescribeTimeToLive"]
    assert Store.objects.get(store_id="s1").name == "One"  # nothing was changed


def test_entity_errors_print_under_the_entity_name() -> None:
    with pytest.raises(Store.DoesNotExist) as err:
        Store.objects.get(store_id="nobody")
    assert repr(err.value).startswith("Store.DoesNotExist(")
    assert Store.DoesNotExist.__qualname__ == "Store.DoesNotExist"
    assert str(err.value).count("does not exist") == 1


def test_cli_shows_entity_errors_by_qualified_name(tmp_path: Path, dynamodb_local: str) -> None:
    from click.testing import CliRunner

    from dynorm.cli import cli

    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(f"models: [tests.models]\ntable_prefix: '{conf.get_settings().table_prefix}'\n"
                   f"connection: {{endpoint: '{dynamodb_local}'}}\n")
    overrides, config_file = dict(conf._overrides), conf._config_file
    try:
        conf.reset()
        result = CliRunner().invoke(cli, ["--config", str(cfg), "shell", "-c", "Store.objects.get(store_id='x')"])
    finally:
        conf.reset()
        conf._overrides.update(overrides)
        conf.use_file(config_file)
    assert result.exit_code == 1
    assert "Error: Store.DoesNotExist: Store matching store_id='x' does not exist" in result.output
