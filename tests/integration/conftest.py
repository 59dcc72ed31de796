"""Integration tests: every test gets fresh tables on DynamoDB Local (dynorm.testing)."""

from __future__ import annotations

import pytest

import demo_project.catalog.models  # noqa: F401 - its tables exist in every test
import demo_project.kayak.models  # noqa: F401
import demo_project.library.models  # noqa: F401
import demo_project.monithor.models  # noqa: F401
import demo_project.orders.models  # noqa: F401
import tests.models  # noqa: F401


@pytest.fixture(autouse=True)
def _tables(dynorm_tables: list[type]) -> list[type]:
    return dynorm_tables


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)

