"""A value DynamoDB refuses anywhere inside a Map or List is refused before any request (issue 21, section 4).

DynamoDB has no empty sets: ``{"SS": []}`` is refused by the service, at the top of an attribute and
nested inside a map or list alike (measured on DynamoDB Local). dynorm's one value walker
(``_codec.to_av``, the one that refuses NaN and nesting over 31 deep) refuses it too, so every call
that carries such a value fails before its first request and leaves the table unchanged. A top-level
``fields.Set`` that is empty keeps its documented meaning: the attribute is not stored.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import pytest

import dynorm
from dynorm import F, Q
from tests.models import Measure


def _table_items() -> list[dict[str, Any]]:
    from dynorm import backend

    return backend.call("Scan", {"TableName": Measure._meta.table.table_name(), "ConsistentRead": True})["Items"]


def _spoiled(obj: Any, **changes: Any) -> Any:
    for name, value in changes.items():
        setattr(obj, name, value)  # plain assignment is not validated; every write is
    return obj


def _tx(action: Callable[[Any], Any]) -> None:
    with dynorm.transaction() as tx:
        tx.create(Measure(sensor="tx-fine"))
        action(tx)


CASES: list[tuple[str, Callable[[Any], Any], str]] = [
    ("create: empty set in a map", lambda old: Measure.objects.create(sensor="s", doc={"a": {"tags": set()}}),
     "Measure.doc={'a': {'tags': set()}}: an empty set at .a.tags"),
    ("create: empty frozenset in a list", lambda old: Measure.objects.create(sensor="s", entries=[1, frozenset()]),
     "Measure.entries=[1, frozenset()]: an empty set at [1]"),
    ("create: empty set in a list in a map", lambda old: Measure.objects.create(sensor="s", doc={"l": [{"s": set()}]}),
     "at .l[0].s"),
    ("save() of an instance read", lambda old: _spoiled(old, doc={"tags": set()}).save(),
     "Measure.doc={'tags': set()}"),
    ("save(update_fields=...)", lambda old: _spoiled(old, doc={"t": set()}).save(
        update_fields=["doc"]), "an empty set at .t"),
    ("instance update()", lambda old: old.update(entries=[set()]), "an empty set at [0]"),
    ("queryset update()", lambda old: Measure.objects.filter(sensor="old").update(doc={"x": frozenset()}),
     "an empty set at .x"),
    ("F().append()", lambda old: Measure.objects.filter(sensor="old").update(
        entries=F("entries").append([frozenset()])),
     "Measure.entries in append()"),
    ("F().if_not_exists() with a map", lambda old: Measure.objects.filter(sensor="old").update(
        doc=F("doc").if_not_exists({"t": set()})), "an empty set at .t"),
    ("F().add() of an empty set", lambda old: Measure.objects.filter(sensor="old").update(nums=F("nums").add(set())),
     "Measure.nums"),
    ("__contains filter", lambda old: list(Measure.objects.filter(sensor="old", entries__contains=set())),
     "Measure.entries in __contains"),
    ("__contains in an update condition", lambda old: Measure.objects.filter(sensor="old").update(
        qty=1, condition=Q(entries__contains=[set()])), "an empty set at [0]"),
    ("get_or_create defaults (refused before its GetItem)", lambda old: Measure.objects.get_or_create(
        sensor="new", defaults={"doc": {"t": set()}}), "Measure.doc"),
    ("update_or_create defaults", lambda old: Measure.objects.update_or_create(
        sensor="old", defaults={"entries": [set()]}), "Measure.entries"),
    ("transaction create", lambda old: _tx(lambda tx: tx.create(_spoiled(Measure(sensor="t"), doc={"t": set()}))),
     "Measure.doc"),
    ("transaction update", lambda old: _tx(lambda tx: tx.update(Measure, {"sensor": "old"}, doc={"t": set()})),
     "Measure.doc"),
    ("bulk_create of 40 with the value at item 30", lambda old: Measure.objects.bulk_create(
        [Measure(sensor=f"b{i}") if i != 30 else _spoiled(Measure(sensor="b30"), doc={"t": set()})
         for i in range(40)]), "bulk_create item 30 of 40: Measure.doc"),
]


@pytest.mark.parametrize("name, action, message", CASES, ids=[c[0] for c in CASES])
def test_an_empty_set_nested_in_a_value_is_refused_before_any_request(name: str, action: Callable[[Any], Any],
                                                                      message: str) -> None:
    Measure.objects.create(sensor="old", entries=["x"], doc={"k": 1})
    old = Measure.objects.get(sensor="old")
    before = _table_items()
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError, match=re.escape(message)) as info:
            action(old)
    assert c.count == 0, f"{name}: {c.operations}"
    assert _table_items() == before
    if "an empty set at" in message:
        assert "nothing was sent" in str(info.value)


def test_the_error_names_entity_field_path_value_and_the_remedy() -> None:
    with pytest.raises(dynorm.ValidationError) as info:
        Measure.objects.create(sensor="s", doc={"a": {"tags": set()}})
    err = info.value
    assert err.entity == "Measure" and err.field == "doc" and err.value == {"a": {"tags": set()}}
    assert str(err) == (
        "Measure.doc={'a': {'tags': set()}}: an empty set at .a.tags cannot be stored: DynamoDB has no empty "
        "sets (it refuses the whole request); leave the entry out, or store None or an empty list there; "
        "nothing was sent.")


@pytest.mark.parametrize("how", ["update", "F().add", "F().discard", "filter"])
def test_an_empty_set_where_a_set_value_is_needed_says_what_to_do(how: str) -> None:
    Measure.objects.create(sensor="old", nums={1})
    qs = Measure.objects.filter(sensor="old")
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError, match=re.escape("Measure.nums=set() cannot be")) as info:
            if how == "update":
                qs.update(nums=set())
            elif how == "F().add":
                qs.update(nums=F("nums").add(set()))
            elif how == "F().discard":
                qs.update(nums=F("nums").discard([]))
            else:
                list(qs.filter(nums=set()))
    assert c.count == 0
    assert "DynamoDB has no empty sets" in str(info.value) and "nums=None removes it" in str(info.value)
    assert Measure.objects.consistent().get(sensor="old").nums == {1}


def test_a_top_level_empty_set_field_is_still_stored_as_absent() -> None:
    """The documented meaning of an empty ``fields.Set`` is unchanged: not stored, read back as ``set()``."""
    Measure.objects.create(sensor="e", nums=set(), words=frozenset(), doc={"tags": ["a"]}, entries=[{"x": {1}}])
    got = Measure.objects.consistent().get(sensor="e")
    assert got.nums == set() and got.words == set()
    assert got.doc == {"tags": ["a"]} and got.entries == [{"x": {1}}]
    stored = next(i for i in _table_items() if i["sensor"] == {"S": "e"})
    assert "nums" not in stored and "words" not in stored


@pytest.mark.parametrize("how", ["create", "save", "update", "bulk_create", "filter", "transaction"])
def test_sync_and_async_writes_refuse_it_before_any_request(io: Any, how: str) -> None:
    Measure.objects.create(sensor="old", entries=["x"])
    old = Measure.objects.get(sensor="old")
    before = _table_items()
    bad = {"deep": [{"s": frozenset()}]}
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError, match=re.escape("an empty set at .deep[0].s")):
            if how == "create":
                io(Measure.objects, "create", sensor="n", doc=bad)
            elif how == "save":
                io(_spoiled(old, doc=bad), "save")
            elif how == "update":
                io(old, "update", doc=bad)
            elif how == "bulk_create":
                io(Measure.objects, "bulk_create", [_spoiled(Measure(sensor=f"b{i}"), doc=bad if i == 30 else {})
                                                    for i in range(40)])
            elif how == "filter":
                io.list(Measure.objects.filter(sensor="old", doc=bad))
            else:
                io.transaction(lambda tx: (tx.create(Measure(sensor="t1")), tx.update(old, doc=bad)))
    assert c.count == 0, c.operations
    assert _table_items() == before


# -- map keys that are not strings, and unstorable values inside a map or list --------------------------------
KEY_CASES: list[tuple[Any, str, str]] = [
    ({"n": {b"k": 1}}, "the map key b'k' at .n is not a string (bytes)", "it would read back as \"b'k'\""),
    ({"n": {1: "x"}}, "the map key 1 at .n is not a string (int)", "it would read back as '1'"),
    ({"n": {None: 1}}, "the map key None at .n is not a string (NoneType)", "'None'"),
    ({"n": [{(1, 2): 1}]}, "the map key (1, 2) at .n[0] is not a string (tuple)", "'(1, 2)'"),
    ({1.0: "f"}, "the map key 1.0 at the top is not a string (float)", "'1.0'"),
    ({True: 1}, "the map key True at the top is not a string (bool)", "'True'"),
]


@pytest.mark.parametrize("value, problem, read_back", KEY_CASES, ids=[c[1].split(" at ")[0] for c in KEY_CASES])
@pytest.mark.parametrize("how", ["create", "update", "F().if_not_exists", "filter"])
def test_a_map_key_that_is_not_a_string_is_refused_before_any_request(value: Any, problem: str, read_back: str,
                                                                      how: str) -> None:
    """Before, the key was turned into text: ``{b"k": 1}`` was stored and read back as ``{"b'k'": 1}``."""
    Measure.objects.create(sensor="old", doc={"k": 1})
    before = _table_items()
    qs = Measure.objects.filter(sensor="old")
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError) as info:
            if how == "create":
                Measure.objects.create(sensor="new", doc=value)
            elif how == "update":
                qs.update(doc=value)
            elif how == "F().if_not_exists":
                qs.update(doc=F("doc").if_not_exists(value))
            else:
                list(qs.filter(doc=value))
    assert c.count == 0, c.operations
    assert _table_items() == before
    message = str(info.value)
    assert message.startswith("Measure.doc") and info.value.entity == "Measure" and info.value.field == "doc"
    assert problem in message and read_back in message, message
    assert "DynamoDB map keys are strings" in message and "convert the keys to str yourself" in message
    assert message.endswith("nothing was sent."), message


def test_str_keys_still_round_trip_exactly() -> None:
    doc = {"a": {"b": [{"c": 1}]}, "é": "x", "1": {"2": None}}
    Measure.objects.create(sensor="k", doc=doc)
    assert Measure.objects.consistent().get(sensor="k").doc == doc


@pytest.mark.parametrize("field, value, path, problem", [
    ("doc", {"k": {True}}, ".k", "a set must hold only strings, only numbers or only bytes"),
    ("doc", {"a": [1, {"b": object()}]}, ".a[1].b", "cannot store a object in DynamoDB (store a str, number, "
     "bool, None, bytes, datetime, set, list or dict there)"),
    ("entries", [1, [2, {3j}]], "[1][1]", "a set must hold only strings, only numbers or only bytes"),
    ("entries", ["x", 1j], "[1]", "cannot store a complex in DynamoDB (store a str"),
])
def test_a_value_of_an_unstorable_type_inside_a_map_or_list_is_reported_with_its_path(
        field: str, value: Any, path: str, problem: str) -> None:
    """Before: ``Measure.doc={...}: expected a dict, got dict (a set must hold ...)``, with no path."""
    before = _table_items()
    with dynorm.capture() as c:
        with pytest.raises(dynorm.ValidationError) as info:
            Measure.objects.create(sensor="t", **{field: value})
    assert c.count == 0 and _table_items() == before
    message = str(info.value)
    assert message.startswith(f"Measure.{field}=") and problem in message, message
    assert message.endswith(f" (at {path}); nothing was sent."), message
    assert "expected a" not in message


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"d": value}
    return value


def test_a_value_written_at_a_document_path_counts_the_levels_above_it() -> None:
    # doc.a.b is stored 3 levels down: a value there may hold 29 maps (31 in all, the most DynamoDB takes);
    # one more was sent and refused by DynamoDB (ValidationException "Nesting Levels have exceeded")
    m = Measure.objects.create(sensor="s1", doc={"a": {}})
    before = _table_items()
    with dynorm.capture() as c:
        for change in ({"doc__a__b": _nested(30)}, {"doc__a__b": F("doc__a__b").if_not_exists(_nested(30))},
                       {"entries": F("entries").if_not_exists([]).append([_nested(31)])}):
            with pytest.raises(dynorm.ValidationError, match=r"nested more than 31 deep"):
                m.update(**change)
    assert c.count == 0 and _table_items() == before
    m.update(doc__a__b=_nested(29))  # the deepest value there: accepted by DynamoDB
    assert Measure.objects.get(sensor="s1").doc["a"]["b"] == _nested(29)
