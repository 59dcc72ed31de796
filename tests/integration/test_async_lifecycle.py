"""The asyncio clients' lifecycle and the async API's refusals of blocking I/O (issue 14).

A loop per request (AWS Lambda handlers, ``asyncio.run`` per job) keeps nothing alive and
warns about nothing; one aiobotocore session serves every loop; a configuration change never
cuts a request in flight; nothing inside a running event loop sends through the blocking client.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import warnings
import weakref
from typing import Any, Callable

import pytest

import dynorm
from demo_project.catalog.models import Product
from dynorm import backend
from tests.models import Person


def _run_in_fresh_loop(coro_fn: Callable[[], Any], close_client: bool) -> weakref.ref[Any]:
    """Run ``coro_fn()`` on a new loop with ``run_until_complete`` then ``loop.close()`` (no ``asyncio.run``)."""
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


class _Unclosed(logging.Handler):
    """Collects asyncio's "Unclosed client session/connector" log records (aiohttp reports them there)."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "nclosed" in record.getMessage():
            self.messages.append(record.getMessage())


def _watch_unclosed(fn: Callable[[], Any]) -> list[str]:
    """Run ``fn`` and a full garbage collection; return every "Unclosed ..." warning and log line."""
    handler = _Unclosed()
    logging.getLogger("asyncio").addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
            gc.collect()
    finally:
        logging.getLogger("asyncio").removeHandler(handler)
    return [str(w.message) for w in caught if "nclosed" in str(w.message)] + handler.messages


def _closed(client: Any) -> bool:
    """Whether an aiobotocore client's aiohttp sessions are closed (aiobotocore internals, pinned here)."""
    sessions = client._endpoint.http_session._sessions
    return not sessions or all(s.closed for s in sessions.values())


# -- 1. clients of finished loops ---------------------------------------------------------------
def test_a_finished_event_loop_and_its_client_are_not_kept_forever() -> None:
    """Lambda-style handlers (a new loop per request) that do not call aclose(): each finished
    loop and its aiobotocore client (+ session, service model: ~10 MB measured) stayed in
    backend.clients._aclients for the life of the process (30 handlers: +317 MB maxrss)."""
    Person.objects.create(person_id="p1", name="N")

    async def handler() -> None:
        await Person.objects.aget(person_id="p1")

    refs: list[weakref.ref[Any]] = []
    unclosed = _watch_unclosed(lambda: refs.extend(_run_in_fresh_loop(handler, close_client=False) for _ in range(3)))
    alive = sum(1 for r in refs if r() is not None)
    assert alive == 0, f"{alive} closed event loops (and their clients) are still referenced by dynorm"
    assert not backend.clients._aclients
    assert unclosed == [], "a client was left for the garbage collector to complain about"


def test_asyncio_run_without_aclose_closes_the_client_and_warns_nothing() -> None:
    Person.objects.create(person_id="p1", name="N")
    seen: list[Any] = []

    async def handler() -> str:
        seen.append(await backend.aclient())
        return (await Person.objects.aget(person_id="p1")).name

    unclosed = _watch_unclosed(lambda: [asyncio.run(handler()) for _ in range(3)])
    assert unclosed == []
    assert not backend.clients._aclients
    assert len({id(c) for c in seen}) == 3  # one client per loop, each closed with its loop
    assert all(_closed(c) for c in seen)


def test_aclose_then_more_requests_on_the_same_loop() -> None:
    """aclose() mid-loop: the next request builds a new client, closed in turn with the loop."""
    Person.objects.create(person_id="p1", name="N")

    async def main() -> int:
        for _ in range(3):
            await Person.objects.aget(person_id="p1")
            await dynorm.aclose()
        await Person.objects.aget(person_id="p1")
        loop = asyncio.get_running_loop()
        return sum(1 for f in vars(loop).values() if getattr(f, "dynorm_wrapper", False))

    wrappers = 0

    def run() -> None:
        nonlocal wrappers
        wrappers = asyncio.run(main())

    assert _watch_unclosed(run) == []
    assert wrappers == 1 and not backend.clients._aclients


def test_aclose_while_another_task_builds_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client a task was building when aclose() ran serves that task and is closed with the loop."""
    Person.objects.create(person_id="p1", name="N")
    original = backend.clients._build_aclient

    async def slow_build(settings: Any) -> Any:
        await asyncio.sleep(0.2)
        return await original(settings)

    monkeypatch.setattr(backend.clients, "_build_aclient", slow_build)

    async def main() -> list[str]:
        first = asyncio.create_task(Person.objects.aget(person_id="p1"))
        await asyncio.sleep(0.05)
        await dynorm.aclose()  # nothing built yet
        second = asyncio.create_task(Person.objects.aget(person_id="p1"))
        return [p.name for p in await asyncio.gather(first, second)]

    names: list[str] = []
    assert _watch_unclosed(lambda: names.extend(asyncio.run(main()))) == []
    assert names == ["N", "N"] and not backend.clients._aclients


# -- 4. one aiobotocore session per process ---------------------------------------------------------
def test_a_new_event_loop_does_not_reload_the_botocore_service_model() -> None:
    """Each new loop built a fresh aiobotocore session, re-reading and parsing the DynamoDB
    service model on the event loop: ~70-240 ms blocking per loop (133 ms CPU per request in a
    loop-per-request handler vs 1.9 ms sync); a reused session builds a client in ~5 ms."""
    import botocore.loaders

    Person.objects.create(person_id="p1", name="N")

    async def handler() -> None:
        await Person.objects.aget(person_id="p1")

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


def test_loops_in_several_threads_share_one_session() -> None:
    Person.objects.bulk_create([Person(person_id=f"t{i}", name=f"N{i}") for i in range(8)])
    backend.reset_client()  # the session is built by the threads below, concurrently
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []
    sessions: list[Any] = []

    def worker(n: int) -> None:
        async def main() -> list[str]:
            sessions.append(backend.clients._aiobotocore_session())
            got = await asyncio.gather(*(Person.objects.aget(person_id=f"t{i}") for i in range(8)))
            return [p.name for p in got]

        try:
            results[n] = asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert results == {n: [f"N{i}" for i in range(8)] for n in range(4)}
    assert len({id(s) for s in sessions}) == 1 and not backend.clients._aclients


# -- 2. a connection setting changed while requests are in flight --------------------------------------
def test_another_tasks_client_rebuild_does_not_break_a_request_in_flight() -> None:
    """A task that changes a connection setting (dynorm.configure(read_timeout=...)) made
    aclient() close the loop's client under every request in flight: a write in flight failed
    with 'could not reach DynamoDB ... Is DynamoDB Local running?'. Now the old client is retired:
    the request finishes on it, later requests use the new client, the old one is then closed."""
    previous = dynorm.get_settings().read_timeout

    async def main() -> tuple[Any, Any, Any, bool]:
        await Person.objects.acreate(person_id="warm", name="W")
        old = await backend.aclient()
        gate = asyncio.Event()

        async def slow(**kwargs: Any) -> None:
            if not gate.is_set():
                gate.set()
                await asyncio.sleep(0.5)

        old.meta.events.register("before-send.dynamodb.PutItem", slow)

        async def writer() -> Any:
            try:
                return await Person.objects.acreate(person_id="inflight", name="I")
            except dynorm.DynormError as exc:
                return exc

        task = asyncio.create_task(writer())
        await gate.wait()
        dynorm.configure(read_timeout=(previous or 10) + 1)
        await Person.objects.aget(person_id="warm")  # on a new client, built meanwhile
        new = await backend.aclient()
        retired = backend.clients._aclients[asyncio.get_running_loop()].retired
        still_open = [e.client is old for e in retired] == [True] and not retired[0].closer
        result = await task
        await asyncio.sleep(0.05)  # the retired client is closed once its last request is done
        return result, old, new, still_open

    try:
        result, old, new, still_open = asyncio.run(main())
    finally:
        dynorm.configure(read_timeout=previous)
    assert not isinstance(result, Exception), f"the in-flight write failed: {result!r}"
    assert Person.objects.filter(person_id="inflight").exists()
    assert old is not new and still_open
    assert _closed(old)


def test_a_retired_client_closes_once_its_requests_are_done() -> None:
    previous = dynorm.get_settings().read_timeout
    Person.objects.create(person_id="p1", name="N")

    async def main() -> tuple[bool, bool]:
        old = await backend.aclient()
        await Person.objects.aget(person_id="p1")
        dynorm.configure(read_timeout=(previous or 10) + 2)
        await Person.objects.aget(person_id="p1")  # a new client; the idle old one closes now
        clients = backend.clients._aclients[asyncio.get_running_loop()]
        await asyncio.sleep(0.05)
        closed = _closed(old)
        return closed, clients.retired == []

    try:
        closed, forgotten = asyncio.run(main())
    finally:
        dynorm.configure(read_timeout=previous)
    assert closed and forgotten


# -- 5. deferred fields inside the event loop -----------------------------------------------------------
def test_reading_a_deferred_field_inside_the_event_loop_raises_before_any_request() -> None:
    """`async for o in qs.only(...)` then `o.stock_level` sent a GetItem through the *sync*
    botocore client, blocking the event loop; now it raises (as Django's SynchronousOnlyOperation)."""
    p = Product.objects.create(brand_id="1", category_id="2", name="Widget", stock_level=7)
    sync_sends: list[int] = []

    def on_sync_send(**kwargs: Any) -> None:
        sync_sends.append(1)

    async def main() -> tuple[Any, int, list[str], int]:
        objs = [o async for o in Product.objects.by_brand("1").only("name")]
        sync = backend.client()
        sync.meta.events.register("before-send.dynamodb.GetItem", on_sync_send)
        try:
            with dynorm.capture() as c:
                with pytest.raises(dynorm.SynchronousOnlyOperation) as err:
                    _ = objs[0].stock_level
            refused = c.count
            with dynorm.capture() as c:
                await objs[0].arefresh_from_db(fields=["stock_level"])
                level = objs[0].stock_level  # loaded: no further request
            return err.value, refused, c.operations, level
        finally:
            sync.meta.events.unregister("before-send.dynamodb.GetItem", on_sync_send)

    err, refused, operations, level = asyncio.run(main())
    assert sync_sends == [] and refused == 0, "a blocking sync GetItem was sent from inside the running event loop"
    text = str(err)
    assert "Product.stock_level" in text and "arefresh_from_db(fields=[" in text and p.product_id in text
    assert operations == ["GetItem"] and level == 7
    # outside an event loop a deferred field still loads on access, as in Django
    obj = Product.objects.by_brand("1").only("name")[0]
    with dynorm.capture() as c:
        assert obj.stock_level == 7
    assert c.operations == ["GetItem"]


def test_refresh_from_db_fields(io: Any) -> None:
    p = Product.objects.create(brand_id="1", category_id="2", name="Widget", description="d", stock_level=3)
    obj = Product.objects.by_brand("1").only("name")[0]
    Product.objects.filter(product_id=p.product_id).update(name="Renamed", stock_level=4)
    with dynorm.capture() as c:
        io(obj, "refresh_from_db", fields=["stock_level", "description"])
    assert c.operations == ["GetItem"] and "ProjectionExpression" in c.requests[0].params
    assert c.requests[0].params["ConsistentRead"] is True
    with dynorm.capture() as c:
        # loaded fields read without a request; the field not named keeps the value read
        assert (obj.stock_level, obj.description, obj.name) == (4, "d", "Widget")
    assert c.count == 0
    assert obj._state.deferred is not None and "stock_level" not in obj._state.deferred[0]
    with dynorm.capture() as c, pytest.raises(dynorm.ValidationError, match="Product has no field 'nope'"):
        io(obj, "refresh_from_db", fields=["nope"])
    assert c.count == 0
    Product.objects.filter(product_id=p.product_id).get().delete()
    with pytest.raises(Product.DoesNotExist):
        io(obj, "refresh_from_db", fields=["name"])


# -- 3. atransaction with an instance read through Meta.read_versions -------------------------------------
def test_atransaction_with_a_read_versions_instance_does_not_use_the_blocking_client(project: Any) -> None:
    """`async with dynorm.atransaction() as tx: tx.update(obj, ...)` on an instance read through
    Meta.read_versions moved the item with fallback.move_to_current -> backend.drive(): a
    consistent GetItem and a TransactWriteItems through the *sync* client, on the event loop,
    at tx.update() time. Now the move is awaited at the commit, before the TransactWriteItems."""
    from tests.migproject import V2, load_v1, widgets

    load_v1(project, 10)
    W = project.write_models(**{**V2, "read_versions": ["v2", "v1"]}).Widget
    project.makemigrations()
    sync_sends: list[str] = []

    def on_sync_send(event_name: str = "", **kwargs: Any) -> None:
        sync_sends.append(event_name)

    async def main() -> tuple[list[str], list[str]]:
        w = await W.objects.aget(widget_id="w00007")
        d = await W.objects.aget(widget_id="w00003")
        sync = backend.client()
        sync.meta.events.register("before-send.dynamodb", on_sync_send)
        try:
            with dynorm.capture() as c:
                async with dynorm.atransaction() as tx:
                    tx.update(w, counter=3)
                    tx.delete(d)
                    added = list(c.operations)
            return added, c.operations
        finally:
            sync.meta.events.unregister("before-send.dynamodb", on_sync_send)

    added, operations = asyncio.run(main())
    assert added == [], "adding the actions sent requests"
    # each item: consistent GetItem + TransactWriteItems (the move); then the transaction itself
    assert operations == ["GetItem", "TransactWriteItems"] * 2 + ["TransactWriteItems"]
    assert sync_sends == [], f"blocking sync requests sent from inside the event loop: {sync_sends}"
    stored = [i for i in widgets(project.table) if i["widget_id"]["S"] in ("w00007", "w00003")]
    assert [(i["PK"]["S"].split("#")[0], i["widget_id"]["S"], i["counter"]["N"]) for i in stored] == \
        [("v2", "w00007", "3")]


def test_atransaction_read_versions_bad_input_and_duplicates_fail_when_added(project: Any) -> None:
    from tests.migproject import V2, load_v1, widgets

    load_v1(project, 4)
    W = project.write_models(**{**V2, "read_versions": ["v2", "v1"]}).Widget
    project.makemigrations()
    before = widgets(project.table)

    async def main() -> None:
        w = await W.objects.aget(widget_id="w00001")
        with dynorm.capture() as c:
            with pytest.raises(dynorm.ValidationError, match="nope"):
                async with dynorm.atransaction() as tx:
                    tx.update(w, nope=1)
            with pytest.raises(dynorm.ValidationError, match="already touches this item"):
                async with dynorm.atransaction() as tx:
                    tx.update(w, counter=1)
                    tx.update(W, {"widget_id": "w00001"}, counter=2)  # the same item, by its current key
        assert c.count == 0

    asyncio.run(main())
    assert widgets(project.table) == before
