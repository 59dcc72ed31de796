"""``none()`` sends no request through any public method of :class:`dynorm.QuerySet`.

The methods are found by introspection, so a method added to ``QuerySet`` later is called here
too: one with required arguments must be added to ``CALLS`` (the test says so), and whatever it
returns, it must send nothing on ``none()``. The results are Django's for ``none()`` (empty
iteration, count 0, exists False, first None, get raises DoesNotExist, ...), except that writes
which would create an item refuse (``none()`` never writes; docs/querying.md).
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable

import pytest

import dynorm
from dynorm import InvalidQuery, Page, Plan, QuerySet
from tests.models import Reading

_QS = object()  # the result is a queryset that is still empty
_KEY: dict[str, Any] = {"sensor": "s1", "year": 2020, "seq": 1}

# name -> (receiver from the empty queryset, args, kwargs, expected): a value, an exception class,
# a predicate (a callable that is not a class), or _QS
CALLS: dict[str, tuple[Callable[[Any], Any], tuple[Any, ...], dict[str, Any], Any]] = {
    "filter": (lambda e: e, (), {"year": 2020}, _QS),
    "exclude": (lambda e: e, (), {"year": 2020}, _QS),
    "using": (lambda e: e, ("primary",), {}, _QS),
    "order_by": (lambda e: e, ("-sk",), {}, _QS),
    "only": (lambda e: e, ("seq",), {}, _QS),
    "collection": (lambda e: e, (), {"sensor": "s1"}, _QS),
    "of": (lambda e: e.collection(sensor="s1"), (Reading,), {}, _QS),
    "explain": (lambda e: e, (), {}, lambda r: isinstance(r, Plan)),
    "as_manager": (lambda e: e, (), {}, lambda r: r is not None),
    "get": (lambda e: e, (), {"year": 2020, "seq": 1}, Reading.DoesNotExist),
    "latest": (lambda e: e, (), {}, Reading.DoesNotExist),
    "earliest": (lambda e: e, (), {}, Reading.DoesNotExist),
    "first": (lambda e: e, (), {}, None),
    "last": (lambda e: e, (), {}, None),
    "exists": (lambda e: e, (), {}, False),
    "count": (lambda e: e, (), {}, 0),
    "values": (lambda e: e, ("seq",), {}, []),
    "values_list": (lambda e: e, ("seq",), {"flat": True}, []),
    "grouped": (lambda e: e, (), {}, {}),
    "page": (lambda e: e, (5,), {}, lambda r: isinstance(r, Page) and r.items == [] and r.cursor is None),
    "in_bulk": (lambda e: e, ([_KEY],), {}, {}),
    "iterator": (lambda e: e, (), {}, []),
    "delete": (lambda e: e, (), {}, 0),
    "update": (lambda e: e, (), {"value": 5}, None),
    "update_with_retry": (lambda e: e, (_KEY, lambda obj: None), {}, None),
    "bulk_update": (lambda e: e, ([Reading(**_KEY)], ["value"]), {}, 0),
    "bulk_delete": (lambda e: e, ([_KEY],), {}, 0),
    "create": (lambda e: e, (), dict(_KEY), InvalidQuery),
    "bulk_create": (lambda e: e, ([Reading(**_KEY)],), {}, InvalidQuery),
    "get_or_create": (lambda e: e, (), dict(_KEY), InvalidQuery),
    "update_or_create": (lambda e: e, (), dict(_KEY), InvalidQuery),
}
# the methods Django has and DynamoDB cannot serve refuse before any request (test_django_habits.py)
for _name in ("select_related", "aggregate", "annotate", "distinct", "extra", "raw", "defer",
              "select_for_update", "union", "intersection", "difference", "dates", "datetimes", "alias"):
    CALLS[_name] = (lambda e: e, (), {}, InvalidQuery)


def _public_methods() -> list[str]:
    names = [n for n, member in inspect.getmembers(QuerySet) if not n.startswith("_") and callable(member)]
    return sorted(names)


def _spec(name: str) -> tuple[Callable[[Any], Any], tuple[Any, ...], dict[str, Any], Any]:
    """The call of ``name`` (an ``aname`` twin is called as ``name``), or a call without arguments."""
    base = name[1:] if name.startswith("a") and name[1:] in CALLS and name not in CALLS else name
    return CALLS.get(base, (lambda e: e, (), {}, _QS))


def _call(target: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    method = getattr(target, name)
    if inspect.isasyncgenfunction(method):
        async def gather() -> list[Any]:
            try:
                return [x async for x in method(*args, **kwargs)]
            finally:
                await dynorm.aclose()
        return asyncio.run(gather())
    if inspect.iscoroutinefunction(method):
        async def run() -> Any:
            try:
                return await method(*args, **kwargs)
            finally:
                await dynorm.aclose()
        return asyncio.run(run())
    result = method(*args, **kwargs)
    return list(result) if name == "iterator" else result


def _check(result: Any, expected: Any) -> None:
    if expected is _QS:
        assert isinstance(result, QuerySet), result
        assert list(result) == [] and result.count() == 0 and result.first() is None
    elif callable(expected) and not inspect.isclass(expected):
        assert expected(result), result
    else:
        assert result == expected


@pytest.fixture
def stored() -> None:
    """Items that a queryset without none() would read, update or refuse to create again."""
    Reading.objects.bulk_create([Reading(sensor="s1", year=2020, seq=i, value=i) for i in range(3)])


@pytest.mark.parametrize("name", _public_methods())
def test_every_public_method_sends_nothing_on_none(stored: None, name: str) -> None:
    receiver, args, kwargs, expected = _spec(name)
    empty = Reading.objects.filter(sensor="s1").none()
    with dynorm.capture() as c:
        if inspect.isclass(expected) and issubclass(expected, BaseException):
            with pytest.raises(expected):
                _call(receiver(empty), name, args, kwargs)
        else:
            try:
                result = _call(receiver(empty), name, args, kwargs)
            except TypeError as exc:  # pragma: no cover - a new method with required arguments
                pytest.fail(f"QuerySet.{name}() needs arguments: add it to CALLS in this file ({exc})")
            _check(result, expected)
    assert c.operations == [], f"none().{name}() sent {c.operations}"


def test_every_public_method_is_called_here() -> None:
    """The public methods are those of QuerySet itself; their async twins are called as the sync ones."""
    names = _public_methods()
    assert {"get", "aget", "count", "acount", "page", "apage", "update", "abulk_update"} <= set(names)
    missing = [n for n in names if _spec(n)[3] is _QS and n not in {
        "all", "none", "scan", "reverse", "consistent", "skip_unreadable", "prefetch", "filter", "exclude",
        "using", "order_by", "only", "collection", "of"}]
    assert not missing, f"add these QuerySet methods to CALLS: {missing}"


def test_evaluating_none_sends_nothing(stored: None) -> None:
    for make in (lambda: Reading.objects.none(), lambda: Reading.objects.filter(sensor="s1").none(),
                 lambda: Reading.objects.filter(sensor="s1")[:2].none(),
                 lambda: Reading.objects.none().filter(sensor="s1")):
        with dynorm.capture() as c:
            empty = make()
            assert make()[:3].count() == 0 and list(make()[1:5:2]) == [] and make().none().count() == 0
            with pytest.raises(IndexError):
                make()[0]
            assert list(empty) == [] and len(empty) == 0 and not empty and repr(empty) == "<QuerySet []>"

            async def run(qs: Any) -> list[Any]:
                try:
                    return [x async for x in qs]
                finally:
                    await dynorm.aclose()

            assert asyncio.run(run(empty)) == []
        assert c.operations == []
    assert Reading.objects.filter(sensor="s1").count() == 3  # the items are there
