"""pytest plugin for applications using dynorm (entry point ``pytest11: dynorm``).

Backends (``--dynorm-backend``, or ``DYNORM_TEST_BACKEND``):
    ``dynamodb-local`` (default): AWS's emulator, a Java process on a free loopback port
        (or the server at ``DYNORM_TEST_ENDPOINT``). As strict as DynamoDB.
    ``moto``: moto's ``mock_aws`` in-process (``pip install "dynorm[moto]"``, no Java): faster
        to start, but not DynamoDB (docs/testing.md lists what differs); tests marked
        ``dynamodb_local_only`` or asking for the ``dynamodb_local`` fixture are skipped.

Fixtures:
    dynorm_backend (session): the backend the session runs on, a :class:`TestBackend`;
        dynorm is configured to use it.
    dynamodb_local (session): the endpoint URL of DynamoDB Local (skips the test on moto).
    dynorm_tables (function): creates every ``Table`` defined so far under a unique name
        prefix before the test and deletes them after, so each test starts empty.
        Returns the list of table classes.

Markers:
    ``@pytest.mark.integration``: the test needs DynamoDB (for selecting with ``-m``).
    ``@pytest.mark.dynamodb_local_only(reason)``: skipped on the moto backend.
"""

from __future__ import annotations

import itertools
import os
import secrets
from dataclasses import dataclass
from typing import Any, Iterator

import pytest

from . import backend, conf
from .local import LocalDynamoDB
from .tables import all_tables

__all__ = ["TestBackend", "BACKENDS"]

_counter = itertools.count()

#: The backends ``--dynorm-backend`` accepts.
BACKENDS = ("dynamodb-local", "moto")


@dataclass(frozen=True)
class TestBackend:
    """The DynamoDB a test session runs on.

    Attributes:
        name: ``"dynamodb-local"`` or ``"moto"``.
        endpoint: the endpoint URL (``None`` for moto, which intercepts requests in-process).
    """

    __test__ = False  # not a test class, whatever its name
    name: str
    endpoint: str | None


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("dynorm")
    group.addoption("--dynorm-backend", choices=BACKENDS, default=None,
                    help="DynamoDB for dynorm's fixtures: dynamodb-local (default; Java) or moto "
                         "(in-process, pip install 'dynorm[moto]'). Also $DYNORM_TEST_BACKEND.")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "integration: needs DynamoDB Local (real requests)")
    config.addinivalue_line("markers", "dynamodb_local_only(reason): skipped on the moto backend")


def _backend_name(config: Any) -> str:
    name = config.getoption("--dynorm-backend", default=None) or os.environ.get("DYNORM_TEST_BACKEND") \
        or "dynamodb-local"
    if name not in BACKENDS:
        raise pytest.UsageError(f"DYNORM_TEST_BACKEND={name!r}: use one of {', '.join(BACKENDS)}.")
    return str(name)


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    if _backend_name(config) != "moto":
        return
    for item in items:
        marker = item.get_closest_marker("dynamodb_local_only")
        if marker is not None:
            reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "needs DynamoDB Local")
            item.add_marker(pytest.mark.skip(reason=f"moto backend: {reason}"))
        elif "dynamodb_local" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.skip(reason="moto backend: the test asks for DynamoDB Local's endpoint"))


@pytest.fixture(scope="session")
def dynorm_backend(request: Any) -> Iterator[TestBackend]:
    """Start the session's backend (see the module docs); configure dynorm for it; yield it."""
    name = _backend_name(request.config)
    if name == "moto":
        yield from _moto()
        return
    endpoint = os.environ.get("DYNORM_TEST_ENDPOINT")
    server = None
    if not endpoint:
        server = LocalDynamoDB().start()  # a free port: parallel sessions never collide
        endpoint = server.endpoint
    conf.configure(endpoint=endpoint, region="us-east-1")
    backend.reset_client()
    try:
        yield TestBackend("dynamodb-local", endpoint)
    finally:
        if server is not None:
            server.stop()


def _moto() -> Iterator[TestBackend]:
    try:
        from moto import mock_aws
    except ImportError:
        raise pytest.UsageError("--dynorm-backend=moto needs moto: pip install 'dynorm[moto]'.") from None
    # moto answers requests to AWS's own endpoints; its fake credentials keep real ones from being used
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")}
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"})
    os.environ.pop("AWS_SESSION_TOKEN", None)
    mock = mock_aws()
    mock.start()
    # moto answers on AWS's own endpoint, where dynorm refuses cursors without a secret: give the
    # session a random one unless the user configured theirs
    secret = conf.get_settings().cursor_secret or secrets.token_urlsafe(32)
    conf.configure(endpoint=None, region="us-east-1", cursor_secret=secret)
    backend.reset_client()
    try:
        yield TestBackend("moto", None)
    finally:
        mock.stop()
        backend.reset_client()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def dynamodb_local(dynorm_backend: TestBackend) -> str:
    """The endpoint URL of the session's DynamoDB Local (the test is skipped on moto)."""
    if dynorm_backend.endpoint is None:
        pytest.skip("needs DynamoDB Local (the session runs on moto)")
    return dynorm_backend.endpoint


@pytest.fixture
def dynorm_tables(dynorm_backend: TestBackend) -> Iterator[list[type]]:
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
