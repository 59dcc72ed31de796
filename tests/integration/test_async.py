"""The asyncio API (issue 14): the same plans, requests, errors, records and guarantees as the sync API.

Every test taking ``io`` runs twice: through the sync API and through the async one
(``aget``, ``asave``, ``async for`` ... on aiobotocore), and asserts the same results, raw
table contents and requests.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from typing import Any

import pytest

import dynorm
from demo_project.catalog.models import Product
from dynorm import F, Q, backend
from tests.faults import raw_at
from tests.models import Counter, Employment, Order, Person


def test_create_get_save_delete(io: Any) -> None:
    with dynorm.capture() as c:
        p = io(Product.objects, "create", brand_id="1", category_id="2", name="Widget", stock_level=3)
    assert c.operations == ["PutItem"]
    stored = raw_at(Product._meta.table, f"v2#P#{p.product_id}", "METADATA")
    assert stored is not None and stored["name"] == {"S": "Widget"} and "_dynorm_rev" in stored
    with dynorm.capture() as c:
        got = io(Product.objects, "get", product_id=p.product_id)
    assert c.operations == ["GetItem"] and got == p and got.stock_level == 3
    got.stock_level = 9
    with dynorm.capture() as c:
        io(got, "save")
    assert c.operations == ["UpdateItem"] and got.version == 2
    assert raw_at(Product._meta.table, f"v2#P#{p.product_id}", "METADATA")["stock_level"] == {"N": "9"}
    with pytest.raises(dynorm.StaleWrite):
        io(p, "save")  # p still holds version 1
    assert raw_at(Product._meta.table, f"v2#P#{p.product_id}", "METADATA")["stock_level"] == {"N": "9"}
    io(p, "refresh_from_db")
    assert p.stock_level == 9 and p.version == 2
    with dynorm.capture() as c:
        io(p, "delete")
    assert c.operations == ["DeleteItem"]
    assert raw_at(Product._meta.table, f"v2#P#{p.product_id}", "METADATA") is None
    with pytest.raises(Product.DoesNotExist):
        io(Product.objects, "get", product_id=p.product_id)
    with pytest.raises(Product.DoesNotExist):
        io(p, "refresh_from_db")


def test_create_refuses_to_overwrite_and_bad_values_send_nothing(io: Any) -> None:
    p = io(Product.objects, "create", brand_id="1", category_id="2", name="Widget")
    with pytest.raises(dynorm.AlreadyExists):
        io(Product.objects, "create", product_id=p.product_id, brand_id="9", category_id="9", name="Other")
    assert raw_at(Product._meta.table, f"v2#P#{p.product_id}", "METADATA")["name"] == {"S": "Widget"}
    with dynorm.capture() as c, pytest.raises(dynorm.ValidationError, match="stock_level"):
        io(Product.objects, "create", brand_id="1", category_id="2", name="Bad", stock_level="many")
    assert c.count == 0


def test_update_with_condition_and_errors(io: Any) -> None:
    p = io(Product.objects, "create", brand_id="1", category_id="1", name="Widget", stock_level=2)
    before = raw_at(Product._meta.table, f"v2#P#{p.product_id}", "METADATA")
    with pytest.raises(dynorm.ConditionFailed) as err:
        io(p, "update", stock_level=F("stock_level") - 3, condition=Q(stock_level__gte=3))
    assert isinstance(err.value.item, Product) and err.value.item.stock_level == 2
    assert raw_at(Product._meta.table, f"v2#P#{p.product_id}", "METADATA") == before
    with dynorm.capture() as c:
        io(p, "update", stock_level=F("stock_level") + 5)
    assert c.operations == ["UpdateItem"] and p.stock_level == 7 and p.version == 2
    got = io(Product.objects.filter(product_id=p.product_id), "update", stock_level=F("stock_level") + 1)
    assert got.stock_level == 8 and got.version == 3
    with pytest.raises(Product.DoesNotExist):
        io(Product.objects.filter(product_id="01HZZZZZZZZZZZZZZZZZZZZZZZ"), "update", name="ghost")


def test_queries_same_plan_requests_and_results(io: Any) -> None:
    made = [Product.objects.create(brand_id="3", category_id=str(i % 2), name=f"P{i}", stock_level=i)
            for i in range(7)]
    qs = Product.objects.by_brand("3")
    expected = [p.product_id for p in qs]
    assert sorted(expected) == sorted(p.product_id for p in made)
    fresh = Product.objects.by_brand("3")
    with dynorm.capture() as c:
        got = io.list(fresh)
    assert [p.product_id for p in got] == expected
    assert c.requests[0].params == Product.objects.by_brand("3").explain().params
    assert fresh.stats.requests == c.count == 1
    with dynorm.capture() as c:
        assert io(Product.objects.by_brand("3"), "count") == 7
    assert c.requests[0].params == Product.objects.by_brand("3").explain(count=True).params
    with dynorm.capture() as c:
        first = io(Product.objects.by_brand("3"), "first")
        last = io(Product.objects.by_brand("3"), "last")
    assert first.product_id == expected[0] and last.product_id == expected[-1]
    assert c.requests[0].params == Product.objects.by_brand("3")[:1].explain().params
    assert c.requests[1].params == Product.objects.by_brand("3").reverse()[:1].explain().params
    assert io(Product.objects.by_brand("3"), "exists") is True
    assert io(Product.objects.by_brand("nope"), "exists") is False
    assert io(Product.objects.by_brand("nope"), "first") is None
    assert io(Product.objects.by_brand("nope"), "count") == 0
    # a filter behind the key condition: read-ahead requests, the same in both APIs
    with dynorm.capture() as c:
        odd = io.list(Product.objects.by_brand("3").filter(stock_level__gte=5)[:2])
    assert [p.stock_level for p in odd] == sorted(p.stock_level for p in made if p.stock_level >= 5)[:2] or \
        [p.stock_level for p in odd] == [p.stock_level for p in Product.objects.by_brand("3")
                                          .filter(stock_level__gte=5)[:2]]
    sync_requests = [r.params for r in _captured(lambda: list(Product.objects.by_brand("3")
                                                              .filter(stock_level__gte=5)[:2]))]
    assert [r.params for r in c.requests] == sync_requests
    with pytest.raises(Product.MultipleObjectsReturned):
        io(Product.objects.by_brand("3"), "get")
    with pytest.raises(dynorm.ScanRequired):
        io(Product.objects.filter(name="P1"), "get")


def _captured(fn: Any) -> list[Any]:
    with dynorm.capture() as c:
        fn()
    return c.requests


def test_pages_and_cursors_are_interchangeable(io: Any) -> None:
    for i in range(5):
        Product.objects.create(brand_id="4", category_id="1", name=f"P{i}")
    expected = [p.product_id for p in Product.objects.by_brand("4")]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = io(Product.objects.by_brand("4"), "page", 2, cursor)
        seen += [p.product_id for p in page]
        pages += 1
        if page.cursor is None:
            break
        # the cursor of one API resumes in the other
        cursor = page.cursor
    assert seen == expected and pages == 3
    first = Product.objects.by_brand("4").page(2)
    second = io(Product.objects.by_brand("4"), "page", 2, first.cursor)
    assert [p.product_id for p in second] == expected[2:4]
    with pytest.raises(dynorm.InvalidCursor):
        io(Product.objects.by_brand("5"), "page", 2, first.cursor)


def test_get_or_create_update_or_create_update_with_retry(io: Any) -> None:
    obj, created = io(Counter.objects, "get_or_create", name="a", defaults={"value": 1})
    assert created and obj.value == 1
    obj, created = io(Counter.objects, "get_or_create", name="a", defaults={"value": 5})
    assert not created and obj.value == 1
    obj, created = io(Counter.objects, "update_or_create", name="a", defaults={"value": 7})
    assert not created and obj.value == 7 and obj.version == 2
    obj, created = io(Counter.objects, "update_or_create", name="b", defaults={"value": 2})
    assert created and obj.value == 2
    rival = Counter.objects.get(name="a")
    calls = []

    def bump(c: Any) -> None:
        calls.append(c.version)
        if len(calls) == 1:  # someone else writes between our read and our write: we lose once
            rival.value = 100
            rival.save()
        c.value += 1

    with dynorm.capture() as c:
        done = io(Counter.objects, "update_with_retry", {"name": "a"}, bump)
    assert calls == [2, 3] and done.value == 101 and done.version == 4
    assert c.operations == ["GetItem", "UpdateItem", "UpdateItem", "GetItem", "UpdateItem"]
    assert Counter.objects.get(name="a").value == 101


def test_bulk_create_in_bulk_and_prefetch(io: Any) -> None:
    people = [Person(person_id=f"p{i}", name=f"N{i}") for i in range(30)]
    with dynorm.capture() as c:
        io(Person.objects, "bulk_create", people)
    assert c.operations == ["BatchWriteItem", "BatchWriteItem"]
    with dynorm.capture() as c:
        found = io(Person.objects, "in_bulk", [f"p{i}" for i in range(0, 30, 3)] + ["missing"])
    assert c.operations == ["BatchGetItem"]
    assert sorted(found) == sorted(f"p{i}" for i in range(0, 30, 3)) and found["p3"].name == "N3"
    for i in range(4):
        Employment.objects.create(store_id="s1", person_id=f"p{i}", person={"person_id": f"p{i}"})
    with dynorm.capture() as c:
        jobs = io.list(Employment.objects.filter(store_id="s1").prefetch("person"))
    assert c.operations == ["Query", "BatchGetItem"]
    with dynorm.capture() as c:
        assert sorted(j.related("person").name for j in jobs) == ["N0", "N1", "N2", "N3"]
    assert c.count == 0


def test_transaction_commits_whole_or_nothing(io: Any) -> None:
    a = Product.objects.create(brand_id="1", category_id="1", name="A", stock_level=1)
    b = Product.objects.create(brand_id="1", category_id="1", name="B", stock_level=0)

    def ok(tx: Any) -> None:
        tx.update(a, stock_level=F("stock_level") - 1, condition=Q(stock_level__gte=1))
        tx.create(Person(person_id="buyer", name="Buyer"))

    token = str(uuid.uuid4())
    with dynorm.capture() as c:
        tx = io.transaction(ok, token=token)
    assert c.operations == ["TransactWriteItems"] and c.requests[0].params["ClientRequestToken"] == token
    assert tx.committed and Product.objects.get(product_id=a.product_id).stock_level == 0

    def bad(tx: Any) -> None:
        tx.update(b, stock_level=F("stock_level") - 1, condition=Q(stock_level__gte=1))
        tx.create(Person(person_id="other", name="Other"))

    with pytest.raises(dynorm.TransactionCanceled) as err:
        io.transaction(bad)
    assert err.value.reasons[0]["code"] == "ConditionalCheckFailed"
    assert Person.objects.filter(person_id="other").count() == 0

    def raises(tx: Any) -> None:
        tx.create(Person(person_id="never", name="Never"))
        raise RuntimeError("boom")

    with dynorm.capture() as c, pytest.raises(RuntimeError):
        io.transaction(raises)
    assert c.count == 0


def test_none_sends_nothing(io: Any) -> None:
    qs = Product.objects.by_brand("3").none()
    with dynorm.capture() as c:
        assert io.list(qs) == [] and io(qs, "count") == 0 and io(qs, "exists") is False
        assert io(qs, "first") is None and io(qs, "last") is None and io(qs, "in_bulk", ["x"]) == {}
        assert io(qs, "page", 5).items == []
        with pytest.raises(Product.DoesNotExist):
            io(qs, "get")
    assert c.count == 0


def test_none_writes_nothing(io: Any) -> None:
    qs = Product.objects.none()
    with dynorm.capture() as c:
        assert io(qs, "update", stock_level=1) is None
        assert io(qs, "update_with_retry", {"product_id": "x"}, lambda obj: None) is None
        for method in ("create", "get_or_create", "update_or_create"):
            with pytest.raises(dynorm.InvalidQuery):
                io(qs, method, product_id="x")
        with pytest.raises(dynorm.InvalidQuery):
            io(qs, "bulk_create", [])
    assert c.count == 0


def test_unreachable_endpoint_is_the_same_error(io: Any) -> None:
    settings = dynorm.get_settings()
    dynorm.configure(endpoint="http://127.0.0.1:9", max_attempts=1, connect_timeout=1.0)
    try:
        with pytest.raises(dynorm.ServiceError, match="could not reach DynamoDB at http://127.0.0.1:9"):
            io(Product.objects, "get", product_id="01HZZZZZZZZZZZZZZZZZZZZZZZ")
    finally:
        dynorm.configure(**{k: getattr(settings, k) for k in ("endpoint", "max_attempts", "connect_timeout")})


# -- asyncio only ----------------------------------------------------------------------------
def test_import_dynorm_does_not_import_aiobotocore() -> None:
    code = ("import sys, dynorm; from demo_project.catalog.models import Product; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('aiobotocore', 'aiohttp', 'asyncio')]; "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_many_requests_in_flight_on_one_loop() -> None:
    made = [Person(person_id=f"c{i}", name=f"N{i}") for i in range(60)]
    Person.objects.bulk_create(made)

    async def main() -> list[Any]:
        try:
            return await asyncio.gather(*(Person.objects.aget(person_id=f"c{i}") for i in range(60)))
        finally:
            await dynorm.aclose()

    with dynorm.capture() as c:
        got = asyncio.run(main())
    assert [p.name for p in got] == [f"N{i}" for i in range(60)]
    assert c.operations == ["GetItem"] * 60


def _connections_in_use(client: Any) -> int:
    """Connections aiohttp holds for requests not finished (aiobotocore internals, pinned here)."""
    sessions = client._endpoint.http_session._sessions.values()
    assert sessions, "no aiohttp session: no request was sent?"
    return sum(len(s.connector._acquired) for s in sessions)


@pytest.mark.parametrize("where", ["between pages", "request in flight"])
def test_cancelling_a_task_mid_async_for_leaves_nothing_in_flight(where: str) -> None:
    from tests.models import Reading

    # value 0 matches, 1 does not: [:2] behind the filter reads page after page, one match per page
    for i in range(12):
        Reading.objects.create(sensor="s", year=2024, seq=i, value=i % 2)
    qs = Reading.objects.filter(sensor="s", value=0)[:6]
    blocked = asyncio.Event()
    sends: list[int] = []

    async def on_send(**kwargs: Any) -> None:
        sends.append(1)
        if where == "request in flight" and len(sends) == 2:
            blocked.set()
            await asyncio.sleep(30)  # the second Query hangs on the wire

    async def consume() -> None:
        async for _obj in qs.aiterator():
            if where == "between pages":
                blocked.set()
                await asyncio.sleep(30)  # stuck between two pages

    async def main() -> tuple[int, int, int]:
        client = await backend.aclient()
        client.meta.events.register("before-send.dynamodb.Query", on_send)
        try:
            with dynorm.capture() as c:
                task = asyncio.create_task(consume())
                await asyncio.wait_for(blocked.wait(), 10)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                await asyncio.sleep(0.3)  # anything still running would send now
                in_use = _connections_in_use(client)
            return len(sends), c.count, in_use
        finally:
            client.meta.events.unregister("before-send.dynamodb.Query", on_send)
            await dynorm.aclose()

    sent, recorded, in_use = asyncio.run(main())
    assert in_use == 0
    if where == "between pages":
        assert (sent, recorded) == (1, 1)
    else:
        assert sent == 2 and recorded == 2  # the cancelled request is recorded (error "Cancelled")
    # the loop closed cleanly and the table is as it was: a read changed nothing
    assert Reading.objects.filter(sensor="s").count() == 12


def test_capture_and_explain_are_shared() -> None:
    Order.objects.create(customer_id="c1")

    async def main() -> Any:
        try:
            qs = Order.objects.of_customer("c1")
            with dynorm.capture() as c:
                got = [o async for o in qs]
            return got, c, qs
        finally:
            await dynorm.aclose()

    got, c, qs = asyncio.run(main())
    assert len(got) == 1 and c.operations == ["Query"] and c.requests[0].params == qs.explain().params
    assert qs.stats.requests == 1 and qs.stats.items == 1


# -- every evaluation and write of a queryset has its async twin ---------------------------------------
@pytest.mark.parametrize("name", ["delete", "bulk_delete", "bulk_update", "earliest", "latest", "values",
                                  "values_list", "grouped"])
def test_every_evaluation_and_write_of_the_queryset_has_an_async_twin(name: str) -> None:
    """docs/async.md: "Every evaluation and write of the sync API has an await-able twin named as
    in Django". `await qs.adelete()`, `abulk_update`, `aearliest`, `alatest` (Django names) and
    values()/values_list() (which do a blocking Query) had none."""
    import inspect

    qs = Product.objects.filter(brand_id="1")
    assert callable(getattr(qs, name))
    twin = getattr(qs, "a" + name, None)
    assert inspect.iscoroutinefunction(twin), f"QuerySet.{name}() has no async twin a{name}()"
    assert twin.__doc__ and f":meth:`{name}` for asyncio" in twin.__doc__
    assert inspect.iscoroutinefunction(getattr(qs.none(), "a" + name))
    if name != "delete":  # Django's guard: no Entity.objects.delete()
        assert callable(getattr(Product.objects, "a" + name))
    else:
        assert not hasattr(Product.objects, "adelete")


def test_values_values_list_grouped(io: Any) -> None:
    for i in range(3):
        Product.objects.create(brand_id="7", category_id=str(i), name=f"P{i}", stock_level=i)
    qs = Product.objects.by_brand("7")
    with dynorm.capture() as c:
        rows = io(qs, "values", "name", "stock_level")
    assert rows == [{"name": f"P{i}", "stock_level": i} for i in range(3)]
    assert c.requests[0].params == qs.only("name", "stock_level").explain().params and c.operations == ["Query"]
    with dynorm.capture() as c:
        assert io(qs.only("name"), "values")[0].keys() == {"name", "product_id"}  # no GetItem per row
        assert io(qs, "values_list", "name", flat=True) == ["P0", "P1", "P2"]
        assert io(qs, "values_list", "pk", "stock_level") == [(p.product_id, p.stock_level) for p in qs]
    assert c.operations == ["Query"] * 4  # the last one is the sync list comprehension's
    with dynorm.capture() as c, pytest.raises(dynorm.InvalidQuery, match="exactly one field"):
        io(qs, "values_list", "name", "stock_level", flat=True)
    assert c.count == 0
    assert io(qs.none(), "values") == [] and io(qs.none(), "values_list", "name") == []
    Order.objects.create(customer_id="g1")
    from tests.models import Customer

    Customer.objects.create(customer_id="g1", email="e@x")
    with dynorm.capture() as c:
        groups = io(Customer.objects.collection(customer_id="g1"), "grouped")
    assert c.operations == ["Query"]
    assert {cls.__name__: len(objs) for cls, objs in groups.items()} == {"Customer": 1, "Order": 1}
    assert io(Customer.objects.collection(customer_id="g1").none(), "grouped") == {}


def test_earliest_latest(io: Any) -> None:
    from tests.models import Reading

    for seq in (3, 1, 2):
        Reading.objects.create(sensor="e", year=2024, seq=seq, value=seq)
    qs = Reading.objects.filter(sensor="e", year=2024)
    with dynorm.capture() as c:
        assert io(qs, "earliest").seq == 1
        assert io(qs, "latest").seq == 3
        assert io(qs, "latest", "-seq").seq == 1
    sync = _captured(lambda: (qs.earliest(), qs.latest(), qs.latest("-seq")))
    assert [r.params for r in c.requests] == [r.params for r in sync]
    with pytest.raises(Reading.DoesNotExist, match="latest"):
        io(Reading.objects.filter(sensor="none", year=2024), "latest")
    with dynorm.capture() as c, pytest.raises(dynorm.InvalidQuery):
        io(qs, "earliest", "value")  # not the sort key: refused before any request
    assert c.count == 0
    with pytest.raises(Reading.DoesNotExist):
        io(qs.none(), "earliest")


def test_delete_bulk_delete_bulk_update(io: Any) -> None:
    people = [Person(person_id=f"d{i}", name=f"N{i}") for i in range(30)]
    Person.objects.bulk_create(people)
    with dynorm.capture() as c:
        assert io(Person.objects, "bulk_delete", [{"person_id": f"d{i}"} for i in range(27)]) == 27
    assert c.operations == ["BatchWriteItem", "BatchWriteItem"]
    assert sorted(p.person_id for p in Person.objects.scan()) == ["d27", "d28", "d29"]
    with dynorm.capture() as c, pytest.raises(dynorm.ValidationError, match="same primary key"):
        io(Person.objects, "bulk_delete", [{"person_id": "d27"}, {"person_id": "d27"}])
    assert c.count == 0
    for i in range(3):
        Employment.objects.create(store_id="sd", person_id=f"p{i}", person={"person_id": f"p{i}"})
    qs = Employment.objects.filter(store_id="sd")
    assert io(qs.none(), "delete") == 0
    with dynorm.capture() as c:
        assert io(qs, "delete") == 3
    assert c.operations == ["Query", "BatchWriteItem"]
    assert "ProjectionExpression" in c.requests[0].params and Employment.objects.filter(store_id="sd").count() == 0
    assert io(qs, "delete") == 0
    with dynorm.capture() as c, pytest.raises(dynorm.InvalidQuery):
        io(qs[:2], "delete")
    assert c.count == 0
    counters = [Counter.objects.create(name=f"b{i}", value=i) for i in range(3)]
    for ctr in counters:
        ctr.value += 10
    with dynorm.capture() as c:
        assert io(Counter.objects, "bulk_update", counters, ["value"]) == 3
    assert c.operations == ["TransactWriteItems"]
    assert [Counter.objects.get(name=f"b{i}").value for i in range(3)] == [10, 11, 12]
    assert [ctr.version for ctr in counters] == [2, 2, 2]
    stale = Counter.objects.get(name="b0")
    counters[0].value = 99
    io(Counter.objects, "bulk_update", counters[:1], ["value"])
    stale.value = 5
    with pytest.raises(dynorm.TransactionCanceled):
        io(Counter.objects, "bulk_update", [stale], ["value"])  # version 2 read, 3 stored
    assert Counter.objects.get(name="b0").value == 99
    with dynorm.capture() as c, pytest.raises(dynorm.ValidationError, match="fields"):
        io(Counter.objects, "bulk_update", counters, [])
    assert c.count == 0
    assert io(Counter.objects.none(), "bulk_update", counters, ["value"]) == 0
