"""Issue 13, pure parts: DDL of multi-attribute GSIs, plan_sync, and the autodetector's ordering."""

from __future__ import annotations

from dynorm import schema
from dynorm.migrations.autodetector import detect_changes
from dynorm.migrations.operations import DropIndexes, SyncIndexes
from dynorm.migrations.state import EntityState, ProjectState, TableState
from tests.integration.test_multi_keys import Regions


def test_plan_sync_adds_a_missing_multi_attribute_gsi_with_typed_definitions() -> None:
    desc = {"GlobalSecondaryIndexes": [{"IndexName": "GSI1"}], "LocalSecondaryIndexes": []}
    actions = schema.plan_sync(Regions, desc)
    assert len(actions) == 1 and actions[0].operation == "UpdateTable"
    params = actions[0].params
    assert params["AttributeDefinitions"] == [
        {"AttributeName": "tenant_id", "AttributeType": "S"}, {"AttributeName": "region", "AttributeType": "S"},
        {"AttributeName": "year", "AttributeType": "N"}, {"AttributeName": "title", "AttributeType": "S"}]
    create = params["GlobalSecondaryIndexUpdates"][0]["Create"]
    assert create["KeySchema"] == [{"AttributeName": "tenant_id", "KeyType": "HASH"},
                                   {"AttributeName": "region", "KeyType": "HASH"},
                                   {"AttributeName": "year", "KeyType": "RANGE"},
                                   {"AttributeName": "title", "KeyType": "RANGE"}]
    assert "ByRegion (tenant_id+region, year:N+title)" in actions[0].summary


def test_create_params_hold_both_kinds_of_gsi_once() -> None:
    params = schema.create_action(Regions).params
    assert [g["IndexName"] for g in params["GlobalSecondaryIndexes"]] == ["GSI1", "ByRegion"]
    names = [d["AttributeName"] for d in params["AttributeDefinitions"]]
    assert len(names) == len(set(names))


def _state(gsis: dict, multi: dict, keys: dict) -> ProjectState:
    st = ProjectState()
    st.tables["shop"] = TableState("shop", gsis=gsis, multi_gsis=multi)
    st.entities[("shop", "W")] = EntityState("shop", "W", "v1", keys, {"maker": ["maker", "String"]})
    return st


def test_switching_in_one_step_adds_the_new_index_before_dropping_the_old_and_rewrites_nothing() -> None:
    prim = {"PK": "W#{widget_id}", "SK": "METADATA"}
    old = _state({"GSI1": ("GSI1PK", "GSI1SK")}, {}, {"primary": prim, "GSI1": {"GSI1PK": "M#{maker}"}})
    new = _state({}, {"ByMaker": {"pk": {"maker": "S"}, "sk": {}}}, {"primary": prim})
    ops = detect_changes(old, new)
    assert [type(op) for op in ops] == [SyncIndexes, DropIndexes]
    assert ops[0].names == ["ByMaker"] and ops[1].gsis == ["GSI1"]
    assert "GSI1" in old.entities[("shop", "W")].keys  # the caller's state is not changed


def test_a_stored_type_change_under_the_same_attribute_is_refused_by_the_autodetector() -> None:
    import pytest

    from dynorm.migrations.operations import MigrationError

    prim = {"PK": "W#{widget_id}", "SK": "METADATA"}
    old = _state({}, {}, {"primary": prim})
    new = _state({}, {}, {"primary": prim})
    old.entities[("shop", "W")].fields["size"] = ["size", "String"]
    new.entities[("shop", "W")].fields["size"] = ["size", "Integer"]
    with pytest.raises(MigrationError, match=r"'size' changes from String \(stored as S\) to Integer \(stored as N\)"):
        detect_changes(old, new)
    new.entities[("shop", "W")].fields["size"] = ["size", "ULID"]  # S to S: nothing to refuse
    assert detect_changes(old, new) == []
    new.entities[("shop", "W")].fields["size"] = ["size_n", "Integer"]  # a new attribute: the old one stays
    assert detect_changes(old, new) == []


def test_the_whole_primary_key_beats_a_multi_attribute_index_and_other_equalities_become_checks() -> None:
    from tests.integration.test_multi_keys import Film

    p = Film.objects.filter(tenant_id="t", film_id="f", region="eu", year=1, title="x").explain()
    assert (p.operation, p.index) == ("GetItem", None)
    assert p.checks == (("region", {"S": "eu"}), ("year", {"N": "1"}), ("title", {"S": "x"}))
    assert p.admits({"region": {"S": "eu"}, "year": {"N": "1.0"}, "title": {"S": "x"}})
    assert not p.admits({"region": {"S": "eu"}, "year": {"N": "2"}, "title": {"S": "x"}})
    assert not p.admits({"region": {"S": "eu"}, "title": {"S": "x"}})  # a missing attribute equals nothing
    q = Film.objects.filter(tenant_id="t", film_id="f", year__gt=1).consistent().explain()
    assert (q.operation, q.index, q.params["ConsistentRead"]) == ("Query", None, True)
    assert "FilterExpression" in q.params


def test_order_by_several_fields_follows_the_sort_attributes() -> None:
    from dynorm.plan import orders_by
    from tests.integration.test_multi_keys import Film

    b = Film._meta.indexes["by_region"]
    meta = Film._meta
    assert orders_by(b, {}, meta, ("year", "title"))
    assert orders_by(b, {}, meta, ("year",))
    assert not orders_by(b, {}, meta, ("title", "year"))
    assert not orders_by(b, {}, meta, ("title",))
    assert orders_by(b, {"year": 1}, meta, ("title", "year"))
    assert orders_by(b, {"region": "eu"}, meta, ("region", "year", "title"))
    t = Film._meta.indexes["by_year_text"]
    assert not orders_by(t, {}, meta, ("year", "title"))


def test_av_equal_compares_as_dynamodb_does() -> None:
    from dynorm.plan import av_equal

    assert av_equal({"N": "1.50"}, {"N": "1.5"})
    assert av_equal({"NS": ["1", "2.0"]}, {"NS": ["2", "1.0"]})
    assert av_equal({"SS": ["a", "b"]}, {"SS": ["b", "a"]})
    assert av_equal({"M": {"a": {"N": "1"}}}, {"M": {"a": {"N": "1.0"}}})
    assert not av_equal({"L": [{"S": "a"}]}, {"L": [{"S": "a"}, {"S": "b"}]})
    assert not av_equal({"S": "1"}, {"N": "1"})
    assert av_equal({"B": b"\x00"}, {"B": b"\x00"})


def test_a_cursor_carries_binary_key_values_and_refuses_bad_ones() -> None:
    import pytest

    from dynorm import InvalidCursor
    from dynorm.cursor import _b64, _sig, decode_cursor, encode_cursor

    key = {"PK": {"S": "O#o"}, "SK": {"S": "B#1"}, "digest": {"B": b"\x00\xff\x80"}}
    ctx = {"t": "x", "kv": "v1"}
    cur = encode_cursor(key, ctx, "secret")
    assert decode_cursor(cur, ctx, "secret", {"PK", "SK", "digest"}) == key
    payload = b'{"c":{"kv":"v1","t":"x"},"k":{"digest":{"b":"!!"}},"v":1}'
    with pytest.raises(InvalidCursor):
        decode_cursor(f"{_b64(payload)}.{_sig('secret', payload)}", ctx, "secret", {"digest"})
