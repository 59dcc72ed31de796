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
