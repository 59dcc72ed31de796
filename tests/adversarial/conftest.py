"""Adversarial tests run on fresh tables like the integration tests."""

from __future__ import annotations

import pytest

import tests.models  # noqa: F401


@pytest.fixture(autouse=True)
def _tables(dynorm_tables: list[type]) -> list[type]:
    return dynorm_tables
