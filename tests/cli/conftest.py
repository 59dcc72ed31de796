"""CLI tests load their own config files; restore the suite's settings after each test."""

from __future__ import annotations

from typing import Iterator

import pytest

from dynorm import conf


@pytest.fixture(autouse=True)
def _restore_settings() -> Iterator[None]:
    overrides, config_file = dict(conf._overrides), conf._config_file
    conf.reset()  # the command reads only its own config file
    yield
    conf.reset()
    conf._overrides.update(overrides)
    conf.use_file(config_file)
