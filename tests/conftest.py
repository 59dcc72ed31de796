"""dynorm's own suite uses its pytest plugin, dynorm.testing, loaded through the package's
``pytest11`` entry point (``pip install -e .``): fixtures ``dynamodb_local`` and ``dynorm_tables``."""

import os
from pathlib import Path
from typing import Iterator

import pytest

from tests.migproject import Project

_n = iter(range(10_000))


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    """A throwaway migrations project on disk (see tests/migproject.py), cleaned up after the test."""
    proj = Project(tmp_path, f"migproj{os.getpid()}_{next(_n)}")
    try:
        yield proj
    finally:
        proj.cleanup()



# On `--dynorm-backend=moto` these run on DynamoDB Local only (docs/testing.md says why).
_DYNAMODB_LOCAL_ONLY = {
    "tests/integration/test_docs.py": "the docs' examples show DynamoDB Local's endpoint, capacity and fault hooks",
    "tests/integration/test_migrations.py": "moto's transactions are not thread-safe under parallel Scan segments",
    "tests/reliability/test_migration_crash.py": "migrations need DynamoDB Local",
    "tests/integration/test_endpoints.py": "loopback endpoints and credentials",
    "tests/packaging/test_wheel.py": "starts DynamoDB Local from the wheel",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parent.parent
    for item in items:
        rel = Path(str(item.fspath)).resolve().relative_to(root).as_posix()
        reason = _DYNAMODB_LOCAL_ONLY.get(rel)
        if reason is not None:
            item.add_marker(pytest.mark.dynamodb_local_only(reason))
