"""dynorm's own suite uses its pytest plugin, dynorm.testing, loaded through the package's
``pytest11`` entry point (``pip install -e .``): fixtures ``dynamodb_local`` and ``dynorm_tables``."""

import os
import signal
from pathlib import Path
from typing import Any, Iterator

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



def pytest_configure(config: pytest.Config) -> None:
    # A shell starts a background job (`cmd &` without job control, `nohup`) with SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler: the Ctrl-C tests (here and in the commands they
    # start, which inherit the disposition) would fail for the runner's sake. Give the suite Python's own.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# On `--dynorm-backend=moto` these run on DynamoDB Local only (docs/testing.md says why).
_DYNAMODB_LOCAL_ONLY = {
    "tests/integration/test_docs.py": "the docs' examples show DynamoDB Local's endpoint, capacity and fault hooks",
    "tests/integration/test_migrations.py": "moto's transactions are not thread-safe under parallel Scan segments",
    "tests/reliability/test_migration_crash.py": "migrations need DynamoDB Local",
    "tests/integration/test_endpoints.py": "loopback endpoints and credentials",
    "tests/packaging/test_wheel.py": "starts DynamoDB Local from the wheel",
}


# The suite runs on the session's wire (`direct` unless --dynorm-wire or DYNORM_WIRE says otherwise);
# these files run on the other one, botocore's own serializer and parser, so both stay tested in the
# fast gate at no extra cost (tests/integration/test_wire_parity.py compares the two request by request).
_BOTOCORE_WIRE = {
    "tests/integration/test_writes.py",
    "tests/integration/test_collections.py",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parent.parent
    for item in items:
        rel = Path(str(item.fspath)).resolve().relative_to(root).as_posix()
        reason = _DYNAMODB_LOCAL_ONLY.get(rel)
        if reason is not None:
            item.add_marker(pytest.mark.dynamodb_local_only(reason))
        if rel in _BOTOCORE_WIRE:
            item.add_marker(pytest.mark.dynorm_wire("botocore"))


class IO:
    """Run one test body through the sync API or the asyncio API (``io`` fixture, parametrized).

    ``io(target, "get", **kw)`` calls ``target.get(**kw)``, or awaits ``target.aget(**kw)`` on the
    test's event loop; ``io.list(qs)`` is ``list(qs)`` or ``[o async for o in qs]``;
    ``io.transaction()`` is ``dynorm.transaction()`` or ``dynorm.atransaction()`` driven to exit.
    """

    def __init__(self, mode: str) -> None:
        import asyncio

        self.mode = mode
        self.loop = asyncio.new_event_loop() if mode == "async" else None

    @property
    def is_async(self) -> bool:
        return self.mode == "async"

    def run(self, coro: Any) -> Any:
        assert self.loop is not None
        return self.loop.run_until_complete(coro)

    def __call__(self, target: Any, method: str, /, *args: Any, **kwargs: Any) -> Any:
        if self.loop is None:
            return getattr(target, method)(*args, **kwargs)
        return self.run(getattr(target, "a" + method)(*args, **kwargs))

    def list(self, qs: Any) -> list[Any]:
        if self.loop is None:
            return list(qs)

        async def gather() -> list[Any]:
            return [obj async for obj in qs]

        return self.run(gather())

    def transaction(self, body: Any, token: str | None = None) -> Any:
        """Run ``body(tx)`` inside ``dynorm.transaction()`` or ``async with dynorm.atransaction()``."""
        import dynorm

        if self.loop is None:
            with dynorm.transaction(token) as tx:
                body(tx)
            return tx

        async def run() -> Any:
            async with dynorm.atransaction(token) as tx:
                body(tx)
            return tx

        return self.run(run())

    def close(self) -> None:
        if self.loop is not None:
            import dynorm

            self.loop.run_until_complete(dynorm.aclose())
            self.loop.close()


@pytest.fixture(params=["sync", "async"])
def io(request: Any) -> Iterator[IO]:
    """The API a parametrized test goes through: ``sync`` (blocking) or ``async`` (asyncio, aiobotocore)."""
    from dynorm.testing import _backend_name

    if request.param == "async" and _backend_name(request.config) == "moto":
        pytest.skip("moto intercepts botocore, not aiobotocore: the async API runs on DynamoDB Local")
    runner = IO(request.param)
    try:
        yield runner
    finally:
        runner.close()


@pytest.fixture
def private_dynamodb_local() -> Iterator[str]:
    """A DynamoDB Local of the test's own (in memory, a free loopback port), dynorm pointed at it
    for the test (the table prefix kept): for tests that add a multi-attribute GSI with UpdateTable,
    whose backfill has been seen to stay CREATING for good on a worker's server after the rest of
    the suite ran on it (fresh-clone CI, session 7: `test_table_ddl_operations` and
    `test_moving_a_pattern_to_a_multi_attribute_gsi_rewrites_no_item`, both passing alone). Request it
    before ``project`` so the project's cleanup runs while dynorm still points here."""
    from dynorm import conf
    from dynorm.local import LocalDynamoDB

    previous = conf.get_settings().endpoint
    with LocalDynamoDB() as server:
        conf.configure(endpoint=server.endpoint)
        try:
            yield server.endpoint
        finally:
            conf.configure(endpoint=previous)
