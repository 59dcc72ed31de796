"""dynorm's internal records (dynorm._value) behave as the dataclasses they replaced: fields from
``__init__``, repr, equality, hashing, ``replace``, immutability, copying and pickling; and
``import dynorm`` declares no other dataclass than the public records (the cold start,
docs/performance.md)."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import pickle
import pkgutil
import subprocess
import sys
import typing

import pytest

import dynorm
from dynorm._value import FrozenValue, Value


def _records() -> list[type[Value]]:
    for info in pkgutil.walk_packages(dynorm.__path__, "dynorm."):
        if not info.name.startswith(("dynorm.contrib", "dynorm.shell")):
            try:
                importlib.import_module(info.name)
            except ImportError:  # an optional extra that is not installed
                continue
    found: list[type[Value]] = []
    todo = list(Value.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted((c for c in found if c is not FrozenValue), key=lambda c: c.__qualname__)


RECORDS = _records()


def _sample(cls: type[Value], tag: str = "") -> Value:
    return cls(**{name: f"{name}{tag}" for name in cls._fields})


def test_the_records_converted_from_dataclasses_are_all_here() -> None:
    assert {c.__qualname__ for c in RECORDS} >= {
        "BoundIndex", "DocPath", "Emit", "Entry", "FrozenSharding", "KeyRange", "KeyVersionChange",
        "MultiKeySchema", "Options", "Prefix", "QueryState", "Refused", "Retired", "RetryPolicy", "Send",
        "SendAll", "ShardPositions", "Sleep", "TableOptions", "Tail", "Window", "_Request"}


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__qualname__)
def test_fields_are_the_init_parameters_in_the_order_of_the_annotations(cls: type[Value]) -> None:
    hints = [n for n, t in cls.__annotations__.items() if not str(t).startswith("ClassVar")]
    assert cls._fields == tuple(hints)
    record = _sample(cls)
    assert [getattr(record, n) for n in cls._fields] == [n for n in cls._fields]  # each stored as given


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__qualname__)
def test_records_show_compare_copy_and_pickle_as_dataclasses_do(cls: type[Value]) -> None:
    record, same, other = _sample(cls), _sample(cls), _sample(cls, "'")
    shown = ", ".join(f"{n}={n!r}" for n in cls._fields)
    assert repr(record) == f"{cls.__qualname__}({shown})"
    assert record == same and record != other and (record == object()) is False
    for twin in (copy.copy(record), copy.deepcopy(record), pickle.loads(pickle.dumps(record))):
        assert type(twin) is cls and twin == record
    first = cls._fields[0]
    changed = record.replace(**{first: "new"})
    assert getattr(changed, first) == "new" and getattr(record, first) == first
    assert [getattr(changed, n) for n in cls._fields[1:]] == list(cls._fields[1:])
    with pytest.raises(TypeError):
        record.replace(not_a_field=1)
    if issubclass(cls, FrozenValue):
        assert hash(record) == hash(same)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, first, "changed")
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(record, first)
        assert getattr(record, first) == first
    else:
        with pytest.raises(TypeError, match="unhashable"):
            hash(record)
        setattr(record, first, "changed")
        assert getattr(record, first) == "changed"


def test_records_of_other_classes_are_not_equal_even_with_equal_fields() -> None:
    from dynorm.backend.steps import Emit, Sleep

    assert Emit(1) != Sleep(1) and Emit(1) == Emit(1)


def test_mutable_defaults_are_not_shared_between_records() -> None:
    from dynorm.iterables import ShardPositions
    from dynorm.keyversions import Entry

    a, b = Entry("v1", "m"), Entry("v1", "m")
    a.retired["v0"] = "x"  # type: ignore[assignment]
    assert b.retired == {}
    c, d = ShardPositions([None]), ShardPositions([None])
    c.last.append(None)
    assert d.last == []


def test_import_dynorm_declares_only_the_public_records_as_dataclasses() -> None:
    """Each dataclass compiles its methods from source when declared (0.4-0.7 ms on Python 3.11):
    the read path's records are :class:`Value` classes, so ``import dynorm`` pays only for these."""
    script = ("import dataclasses, sys, dynorm\n"
              "print(sorted(f'{m}.{n}' for m, mod in list(sys.modules.items()) if m.startswith('dynorm')\n"
              "      for n, o in vars(mod).items() if isinstance(o, type) and dataclasses.is_dataclass(o)\n"
              "      and o.__module__ == m))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert typing.cast(list, eval(out)) == [  # noqa: S307 - our own subprocess's printed list
        "dynorm.backend.records.Capture", "dynorm.backend.records.RequestRecord", "dynorm.backend.records.Stats",
        "dynorm.conf.Settings", "dynorm.iterables.Page", "dynorm.plan_value.Plan"]


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__qualname__)
def test_defaults_are_class_attributes_and_fields_match_positionally_as_in_a_dataclass(cls: type[Value]) -> None:
    import inspect

    for name, param in inspect.signature(cls).parameters.items():
        if param.default is not inspect.Parameter.empty:
            assert getattr(cls, name) == param.default  # RetryPolicy.max_attempts == 8
    assert cls.__match_args__ == cls._fields
    if sys.version_info >= (3, 10):  # ``case Record(a, b):`` (the syntax is not Python 3.9's)
        scope = {"cls": cls, "record": _sample(cls)}
        exec("match record:\n    case cls(first):\n        got = first\n", scope)  # noqa: S102
        assert scope["got"] == cls._fields[0]


@pytest.mark.parametrize("make", [lambda v: __import__("dynorm.backend.steps", fromlist=["Sleep"]).Sleep(v),
                                  lambda v: __import__("dynorm.iterables", fromlist=["Window"]).Window(v)],
                         ids=["one field", "two fields"])
def test_a_record_holding_nan_or_itself_equals_itself_and_shows_as_a_dataclass(make: typing.Callable) -> None:
    nan = make(float("nan"))
    assert nan == nan and nan != make(float("nan"))  # fields compared as a tuple: identity first
    looped = make(None)
    first = type(looped)._fields[0]
    setattr(looped, first, looped)
    assert looped == looped
    assert repr(looped).startswith(f"{type(looped).__qualname__}({first}=...")  # no RecursionError


def test_a_plan_still_converts_with_asdict_its_index_as_a_copy() -> None:
    """``Plan`` stays a dataclass; its ``bound`` (an internal record) comes out of ``asdict`` as a
    copy of the record rather than a dict (CHANGELOG)."""
    from tests.models import Store

    plan = Store.objects.filter(city="Oslo").explain()
    out = dataclasses.asdict(plan)
    assert out["operation"] == "Query" and out["bound"] == plan.bound and out["bound"] is not plan.bound
    assert copy.deepcopy(plan) == plan and pickle.loads(pickle.dumps(plan)) == plan
