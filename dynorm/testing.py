"""pytest plugin for applications using dynorm (entry point ``pytest11: dynorm``).

Fixtures:
    dynamodb_local (session): the endpoint URL of a DynamoDB Local server, started on a
        free loopback port for the test session (or the server at ``DYNORM_TEST_ENDPOINT``).
        dynorm is configured to use it.
    dynorm_tables (function): creates every ``Table`` defined so far under a unique name
        prefix before the test and deletes them after, so each test starts empty.
        Returns the list of table classes.

Markers:
    ``@pytest.mark.integration``: the test needs DynamoDB (for selecting with ``-m``).
"""

from __future__ import annotations

import itertools
import os
from typing import Any, Iterator

import pytest

from . import backend, conf
from .local import LocalDynamoDB
from .tables import all_tables

_counter = itertools.count()


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "integration: needs DynamoDB Local (real requests)")


@pytest.fixture(scope="session")
def dynamodb_local() -> Iterator[str]:
    """Start (or reuse via DYNORM_TEST_ENDPOINT) DynamoDB Local; yield its endpoint URL."""
    endpoint = os.environ.get("DYNORM_TEST_ENDPOINT")
    server = None
    if not endpoint:
        server = LocalDynamoDB().start()
        endpoint = server.endpoint
    conf.configure(endpoint=endpoint, region="us-east-1")
    backend.reset_client()
    try:
        yield endpoint
    finally:
        if server is not None:
            server.stop()


@pytest.fixture
def dynorm_tables(dynamodb_local: str) -> Iterator[list[type]]:
    """Create every declared table under a fresh prefix; delete them after the test."""
    prefix = f"t{os.getpid()}-{next(_counter)}-"
    previous = conf.get_settings().table_prefix
    conf.configure(table_prefix=prefix)
    tables = all_tables()
    # Several Table classes may name one physical table (tests declare throwaway tables
    # under one name): create and delete each physical table once.
    physical = list({t.table_name(): t for t in tables}.values())
    for table in physical:
        table.create_table(wait=True)
    try:
        yield tables
    finally:
        for table in physical:
            try:
                table.delete_table(wait=False)
            except Exception:  # noqa: BLE001 - best effort clean-up
                pass
        conf.configure(table_prefix=previous)
