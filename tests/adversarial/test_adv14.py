"""Adversarial tests for issue 14 (async dynorm on aiobotocore).

Each test fails on the code it was written against and passes once the bug is fixed.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import pytest

import dynorm
from dynorm import Entity, Table, backend, fields


class Adv14(Table):
    class Meta:
        table_name = "adv14"


class A14Item(Entity):
    grp = fields.String()
    iid = fields.String()
    val = fields.String(null=True)
    big = fields.String(null=True)

    class Meta:
        table = Adv14
        entity_type = "A14ITEM"
        pk = "{version}#GRP#{grp}"
        sk = "ITEM#{iid}"


def _run_in_fresh_loop(coro_fn: Any, close_client: bool) -> weakref.ref[Any]:
    loop = asyncio.new_event_loop()

    async def body() -> None:
        await coro_fn()
        if close_client:
            await dynorm.aclose()

    try:
        loop.run_until_complete(body())
    finally:
        loop.close()
    ref = weakref.ref(loop)
    del loop
    return ref


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_a_finished_event_loop_and_its_client_are_not_kept_forever() -> None:
    """Lambda-style handlers (a new loop per request) that do not call aclose(): each finished
    loop and its aiobotocore client (+ session, service model: ~10 MB measured) stay in
    backend._aclients for the life of the process (30 handlers: +317 MB maxrss)."""
    A14Item.objects.create(grp="g", iid="1")

    async def handler() -> None:
        await A14Item.objects.aget(grp="g", iid="1")

    refs = [_run_in_fresh_loop(handler, close_client=False) for _ in range(3)]
    gc.collect()
    alive = sum(1 for r in refs if r() is not None)
    for r in refs:  # do not leave them to the tests that run next
        loop = r()
        if loop is not None and isinstance(getattr(backend, "_aclients", None), dict):
            backend._aclients.pop(loop, None)
        del loop
    assert alive == 0, f"{alive} closed event loops (and their clients) are still referenced by dynorm"


def test_a_new_event_loop_does_not_reload_the_botocore_service_model() -> None:
    """Each new loop builds a fresh aiobotocore session, re-reading and parsing the DynamoDB
    service model on the event loop: ~70-240 ms blocking per loop (133 ms CPU per request in a
    loop-per-request handler vs 1.9 ms sync); a reused session builds a client in ~5 ms."""
    import botocore.loaders

    A14Item.objects.create(grp="g", iid="1")

    async def handler() -> None:
        await A14Item.objects.aget(grp="g", iid="1")

    _run_in_fresh_loop(handler, close_client=True)  # the first loop may load it
    loads: list[Any] = []
    original = botocore.loaders.JSONFileLoader.load_file

    def counting(self: Any, file_path: str, *args: Any, **kwargs: Any) -> Any:
        loads.append(file_path)
        return original(self, file_path, *args, **kwargs)

    botocore.loaders.JSONFileLoader.load_file = counting  # type: ignore[method-assign]
    try:
        _run_in_fresh_loop(handler, close_client=True)
    finally:
        botocore.loaders.JSONFileLoader.load_file = original  # type: ignore[method-assign]
    assert loads == [], f"a second event loop re-read {len(loads)} botocore data files (service model) on the loop"


def test_reading_a_deferred_field_inside_the_event_loop_does_not_use_the_blocking_client() -> None:
    """`async for o in qs.only(...)` then `o.big` sends a GetItem through the *sync* botocore
    client, blocking the event loop (Django raises SynchronousOnlyOperation instead)."""
    A14Item.objects.create(grp="g", iid="1", val="v", big="B" * 10)
    sync_sends: list[int] = []

    def on_sync_send(**kwargs: Any) -> None:
        sync_sends.append(1)

    async def main() -> None:
        objs = [o async for o in A14Item.objects.filter(grp="g").only("val")]
        sync = backend.client()
        sync.meta.events.register("before-send.dynamodb.GetItem", on_sync_send)
        try:
            try:
                _ = objs[0].big
            except Exception:  # noqa: BLE001 - refusing (as Django does) is a fine answer
                pass
        finally:
            sync.meta.events.unregister("before-send.dynamodb.GetItem", on_sync_send)
            await dynorm.aclose()

    asyncio.run(main())
    assert sync_sends == [], "a blocking sync GetItem was sent from inside the running event loop"


@pytest.mark.parametrize("name", ["delete", "bulk_delete", "bulk_update", "earliest", "latest", "values",
                                  "values_list", "grouped"])
def test_every_evaluation_and_write_of_the_queryset_has_an_async_twin(name: str) -> None:
    """docs/async.md: "Every evaluation and write of the sync API has an await-able twin named as
    in Django". `await qs.adelete()`, `abulk_update`, `aearliest`, `alatest` (Django names) and
    values()/values_list() (which do a blocking Query) have none."""
    qs = A14Item.objects.filter(grp="g")
    assert callable(getattr(qs, name))
    assert callable(getattr(qs, "a" + name, None)), f"QuerySet.{name}() has no async twin a{name}()"


def test_another_tasks_client_rebuild_does_not_break_a_request_in_flight() -> None:
    """A task that changes a connection setting (dynorm.configure(read_timeout=...)) makes
    aclient() close the loop's client under every request in flight: a write in flight fails
    with 'could not reach DynamoDB ... Is DynamoDB Local running?' (the sync client() keeps the
    old client usable for requests already under way)."""
    previous = dynorm.conf.get_settings().read_timeout

    async def main() -> tuple[Any, bool]:
        await A14Item.objects.acreate(grp="g", iid="warm")
        client = await backend.aclient()
        gate = asyncio.Event()

        async def slow(**kwargs: Any) -> None:
            if not gate.is_set():
                gate.set()
                await asyncio.sleep(0.5)

        client.meta.events.register("before-send.dynamodb.PutItem", slow)

        async def writer() -> Any:
            try:
                return await A14Item.objects.acreate(grp="g", iid="inflight")
            except dynorm.DynormError as exc:
                return exc

        task = asyncio.create_task(writer())
        await gate.wait()
        dynorm.configure(read_timeout=(previous or 10) + 1)
        await A14Item.objects.aget(grp="g", iid="warm")
        result = await task
        await dynorm.aclose()
        return result, A14Item.objects.filter(grp="g", iid="inflight").exists()

    try:
        result, present = asyncio.run(main())
    finally:
        dynorm.configure(read_timeout=previous)
    assert not isinstance(result, Exception), f"the in-flight write failed: {result!r}"
    assert present


def test_atransaction_with_a_read_versions_instance_does_not_use_the_blocking_client(project: Any) -> None:
    """`async with dynorm.atransaction() as tx: tx.update(obj, ...)` on an instance read through
    Meta.read_versions moves the item with fallback.move_to_current -> backend.drive(): a
    consistent GetItem and a TransactWriteItems through the *sync* client, on the event loop,
    at tx.update() time (docs/async.md: "no thread pool", requests through aiobotocore)."""
    from tests.migproject import V2, load_v1, widgets

    load_v1(project, 10)
    W = project.write_models(**{**V2, "read_versions": ["v2", "v1"]}).Widget
    project.makemigrations()
    sync_sends: list[str] = []

    def on_sync_send(event_name: str = "", **kwargs: Any) -> None:
        sync_sends.append(event_name)

    async def main() -> None:
        w = await W.objects.aget(widget_id="w00007")
        sync = backend.client()
        sync.meta.events.register("before-send.dynamodb", on_sync_send)
        try:
            async with dynorm.atransaction() as tx:
                tx.update(w, counter=3)
        finally:
            sync.meta.events.unregister("before-send.dynamodb", on_sync_send)
            await dynorm.aclose()

    asyncio.run(main())
    stored = {i["PK"]["S"].split("#")[0]: i for i in widgets(project.table) if i["widget_id"]["S"] == "w00007"}
    assert set(stored) == {"v2"} and stored["v2"]["counter"]["N"] == "3"
    assert sync_sends == [], f"blocking sync requests sent from inside the event loop: {sync_sends}"
