"""Integration tests: every test gets fresh tables on DynamoDB Local (dynorm.testing)."""

from __future__ import annotations

from typing import Any, Iterator

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
