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
    dynorm_tables (function): every ``Table`` defined so far, empty and as declared, under the
        session's table prefix: created once per session, reset before each test (items deleted,
        tables a test added or altered dropped). Returns the list of table classes.

Wire (``--dynorm-wire``, or ``DYNORM_WIRE``): ``direct`` (default) or ``botocore``, the ``wire``
setting for the session: how data-plane request and response bodies are encoded and decoded.

Markers:
    ``@pytest.mark.integration``: the test needs DynamoDB (for selecting with ``-m``).
    ``@pytest.mark.dynamodb_local_only(reason)``: skipped on the moto backend.
    ``@pytest.mark.dynorm_wire("botocore")``: the test runs on that wire, whatever the session's
        (with ``dynorm_tables``, which undoes it after the test).
"""

from __future__ import annotations

import itertools
import os
import secrets
import time
from dataclasses import dataclass
from typing import Any, Iterator

import pytest

from . import backend, conf, keyguard, schema
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
    group.addoption("--dynorm-wire", choices=conf.WIRES, default=None,
                    help="how dynorm encodes and decodes data-plane requests in the session: direct (default; "
                         "dynorm's JSON codec under botocore) or botocore (botocore's serializer and parser). "
                         "Also $DYNORM_WIRE.")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "integration: needs DynamoDB Local (real requests)")
    config.addinivalue_line("markers", "dynamodb_local_only(reason): skipped on the moto backend")
    config.addinivalue_line("markers", "dynorm_wire(wire): run the test on that wire (direct or botocore)")


def _wire_settings(config: Any) -> dict[str, Any]:
    """``{"wire": ...}`` when ``--dynorm-wire`` is given, else nothing (the settings' own: DYNORM_WIRE, dynorm.yaml)."""
    wire = config.getoption("--dynorm-wire", default=None)
    return {"wire": wire} if wire else {}


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
        yield from _moto(_wire_settings(request.config))
        return
    endpoint = os.environ.get("DYNORM_TEST_ENDPOINT")
    server = None
    if not endpoint:
        server = LocalDynamoDB().start()  # a free port: parallel sessions never collide
        endpoint = server.endpoint
    before = conf.snapshot()
    conf.configure(endpoint=endpoint, region="us-east-1", **_wire_settings(request.config))
    backend.reset_client()
    try:
        yield TestBackend("dynamodb-local", endpoint)
    finally:
        conf.restore(before)  # a session run inside another (pytester) hands its settings back
        backend.reset_client()
        if server is not None:
            server.stop()


def _moto(wire: dict[str, Any]) -> Iterator[TestBackend]:
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
    before = conf.snapshot()
    conf.configure(endpoint=None, region="us-east-1", cursor_secret=secret, **wire)
    backend.reset_client()
    try:
        yield TestBackend("moto", None)
    finally:
        mock.stop()
        conf.restore(before)
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


@pytest.fixture(scope="session")
def _dynorm_session_tables(dynorm_backend: TestBackend) -> Iterator[_SessionTables]:
    """The session's shared tables (see :class:`_SessionTables`), dropped when the session ends."""
    shared = _SessionTables(f"t{os.getpid()}-{next(_counter)}-")
    yield shared
    previous = conf.get_settings().table_prefix
    conf.configure(table_prefix=shared.prefix)
    try:
        shared.drop_all()
    finally:
        conf.configure(table_prefix=previous)


@pytest.fixture
def dynorm_tables(_dynorm_session_tables: _SessionTables, request: Any) -> Iterator[list[type]]:
    """Give the test every declared table, empty and as declared, under the session's table prefix.

    The tables are created once per session and reset before each test (see
    :class:`_SessionTables`): items of the previous test deleted, tables it added or altered
    dropped, missing ones created. A test marked ``@pytest.mark.dynorm_wire(w)`` runs on wire ``w``.
    Returns the list of table classes.
    """
    shared = _dynorm_session_tables
    before = conf.snapshot()
    marker = request.node.get_closest_marker("dynorm_wire")
    conf.configure(table_prefix=shared.prefix, **({"wire": marker.args[0]} if marker else {}))
    if conf.get_settings().table_prefix != shared.prefix:
        conf.restore(before)
        raise pytest.UsageError(
            "dynorm_tables: the settings in force hide the session's table prefix (a conf.overridden() block "
            "opened by a fixture set up before dynorm_tables?): request dynorm_tables first, or open the block "
            "inside the test.")
    tables = all_tables()
    try:
        shared.reset(tables)
        yield tables
    finally:
        # every configure() the test made is undone, also when it failed before undoing it: the next
        # test, and the next reset, talk to the session's endpoint
        conf.restore(before)


# ---------------------------------------------------------------------------------------------
# Tables shared by the tests of a session
# ---------------------------------------------------------------------------------------------
#: Above this many items a table is dropped and created again rather than emptied item by item.
_RECREATE_ABOVE = 200
#: BatchWriteItem attempts (with back-off) before emptying a table gives up with a clear error.
_EMPTY_ATTEMPTS = 8


def _shape(description: dict[str, Any]) -> tuple[Any, ...]:
    """What a test may change about a table that an emptied table would still carry: key schema,
    attribute types, indexes, stream, billing mode, deletion protection (DescribeTable's ``Table``,
    order-free)."""

    def indexes(key: str) -> list[Any]:
        return sorted((i["IndexName"], repr(i["KeySchema"]), repr(i.get("Projection")))
                      for i in description.get(key, []))

    return (repr(description.get("KeySchema")),
            sorted((a["AttributeName"], a["AttributeType"]) for a in description.get("AttributeDefinitions", [])),
            indexes("GlobalSecondaryIndexes"), indexes("LocalSecondaryIndexes"),
            repr(description.get("StreamSpecification")),
            (description.get("BillingModeSummary") or {}).get("BillingMode"),
            bool(description.get("DeletionProtectionEnabled")))


class _SessionTables:
    """The tables of one test session, created once under a session prefix and reset before each test.

    Creating every declared table for each test (CreateTable with its GSIs, then DeleteTable) cost
    7-17 s a test on DynamoDB Local once a suite declares a few dozen tables; an empty, unchanged
    table is indistinguishable from a new one. So before each test, for every physical table
    (ListTables, then one DescribeTable each):

    - a table the previous test created under the prefix that no declared ``Table`` names, or whose
      shape (:func:`_shape`) or declared TTL (DescribeTimeToLive) a test changed, or whose declaring
      class changed, is deleted (and the declared ones created again);
    - a declared table holding items (``ItemCount``, exact on DynamoDB Local and moto) is emptied:
      Scan of its keys and BatchWriteItem deletes, or DeleteTable and CreateTable above
      :data:`_RECREATE_ABOVE` items;
    - a declared table that is missing is created (CreateTable, UpdateTimeToLive).

    This judges the tables by their state, not by watching requests, so writes that raw clients,
    other processes (CLI, Dask workers) or other threads made before the next test starts are reset
    too; a thread or process still running then keeps writing (join them in the test). Not seen in
    DescribeTable, and so not reset: TTL turned on for a table that declares none (DynamoDB Local
    deletes expired items lazily, not within a test), tags and point-in-time recovery.
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.made: dict[str, tuple[type, tuple[Any, ...]]] = {}  # physical name -> (Table class, shape)

    def reset(self, tables: list[Any]) -> None:
        from .exceptions import TableDoesNotExist

        wanted = {t.table_name(): t for t in tables}  # one physical table may have several classes: the last wins
        present = [n for n in _list_tables() if n.startswith(self.prefix)]
        for name in present:
            made = self.made.get(name)
            try:
                desc = backend.call("DescribeTable", {"TableName": name})["Table"]
            except TableDoesNotExist:
                self.made.pop(name, None)
                continue
            if made is None or wanted.get(name) is not made[0] or _shape(desc) != made[1] \
                    or desc.get("TableStatus") != "ACTIVE" or int(desc.get("ItemCount") or 0) > _RECREATE_ABOVE \
                    or not _ttl_as_declared(made[0]):
                _drop(name)
                self.made.pop(name, None)
            elif desc.get("ItemCount"):
                _empty(name, desc["KeySchema"])
        gone = set(self.made) - set(present)
        for name in gone:
            del self.made[name]
        for name, table in wanted.items():
            if name not in self.made:
                table.create_table(wait=True)
                self.made[name] = (table, _shape(backend.call("DescribeTable", {"TableName": name})["Table"]))
        # every declared table is empty now, so it holds no key-version record: known without a
        # GetItem (the request counts a test pins stay its own), and what a test before this one
        # migrated is forgotten (its record went with the items)
        keyguard.forget()
        for name in wanted:
            keyguard.note(name, {}, until_forgotten=True)

    def drop_all(self) -> None:
        for name in [n for n in _list_tables() if n.startswith(self.prefix)]:
            try:
                _drop(name, wait=False)
            except Exception:  # noqa: BLE001 - best effort clean-up at the end of the session
                pass
        self.made.clear()


def _ttl_as_declared(table: Any) -> bool:
    """False when a test turned off (or moved) the declared TTL attribute (DescribeTimeToLive)."""
    attr = table._meta.ttl_attribute
    return not attr or schema.ttl_enabled(table.table_name(), attr)


def _list_tables() -> list[str]:
    names: list[str] = []
    params: dict[str, Any] = {}
    while True:
        page = backend.call("ListTables", params)
        names += page.get("TableNames", [])
        if not page.get("LastEvaluatedTableName"):
            return names
        params = {"ExclusiveStartTableName": page["LastEvaluatedTableName"]}


def _drop(name: str, wait: bool = True) -> None:
    """Delete table ``name`` (turning off deletion protection a test turned on), waiting until it is gone."""
    from .exceptions import ServiceError, TableDoesNotExist

    try:
        schema.delete_table(name, wait=wait, interval=0.05)
    except TableDoesNotExist:
        return
    except ServiceError as exc:
        if "deletion protection" not in str(exc).lower():
            raise
        schema.update_table({"TableName": name, "DeletionProtectionEnabled": False}, wait=False)
        schema.delete_table(name, wait=wait, interval=0.05)


def _empty(name: str, key_schema: list[dict[str, Any]]) -> None:
    """Delete every item of table ``name`` (a consistent Scan of the keys, BatchWriteItem deletes)."""
    keys = [k["AttributeName"] for k in key_schema]
    names = {f"#k{i}": k for i, k in enumerate(keys)}
    params = {"TableName": name, "ConsistentRead": True, "ProjectionExpression": ", ".join(names),
              "ExpressionAttributeNames": names}
    for page in backend.paginate("Scan", params):
        items = page.get("Items", [])
        for i in range(0, len(items), 25):
            requests: list[dict[str, Any]] = [{"DeleteRequest": {"Key": key}} for key in items[i:i + 25]]
            for attempt in range(_EMPTY_ATTEMPTS):
                if not requests:
                    break
                if attempt:
                    time.sleep(0.05 * 2 ** attempt)
                resp = backend.call("BatchWriteItem", {"RequestItems": {name: requests}})
                requests = resp.get("UnprocessedItems", {}).get(name, [])
            if requests:
                raise RuntimeError(
                    f"dynorm_tables could not empty table {name}: {len(requests)} deletes still unprocessed after "
                    f"{_EMPTY_ATTEMPTS} BatchWriteItem attempts (a botocore hook a test left registered on "
                    "dynorm's client? unregister hooks in a finally block or a fixture).")
