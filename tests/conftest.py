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


