"""``Table.Meta.stream``: validated when declared, in CreateTable, planned by sync and makemigrations (no I/O);
``dynorm.streams.changes`` refuses what is not a stream batch before yielding anything."""

from __future__ import annotations

from typing import Any

import pytest

from dynorm import ModelError, Table, schema, streams
from dynorm.exceptions import ConfigurationError
from dynorm.migrations.autodetector import detect_changes
from dynorm.migrations.operations import AlterStream
from dynorm.migrations.state import ProjectState, TableState
from dynorm.table_options import build_table_options
from tests.models import Feed, Retail


def test_a_stream_view_type_other_than_dynamodbs_is_refused_naming_table_and_value() -> None:
    class Meta:
        table_name = "t"
        stream = "NEW_AND_OLD"

    with pytest.raises(ModelError, match=r"Bad\.Meta\.stream must be one of .*NEW_AND_OLD_IMAGES.*got 'NEW_AND_OLD'"):
        build_table_options("Bad", Meta)


def test_create_table_carries_the_stream_specification() -> None:
    params = schema.create_action(Feed).params
    assert params["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert "StreamSpecification" not in schema.create_action(Retail).params


def described(table: type[Table], stream: str | None) -> dict[str, Any]:
    params = schema.create_action(table).params
    desc: dict[str, Any] = {"GlobalSecondaryIndexes": params.get("GlobalSecondaryIndexes", []),
                            "LocalSecondaryIndexes": params.get("LocalSecondaryIndexes", [])}
    if stream:
        desc["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream}
    return desc


def test_sync_turns_the_declared_stream_on_and_changes_its_view_type_off_then_on() -> None:
    assert [a.params["StreamSpecification"] for a in schema.plan_sync(Feed, described(Feed, None))] == [
        {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}]
    assert [a.params["StreamSpecification"] for a in schema.plan_sync(Feed, described(Feed, "KEYS_ONLY"))] == [
        {"StreamEnabled": False}, {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}]
    assert schema.plan_sync(Feed, described(Feed, "NEW_AND_OLD_IMAGES")) == []
    assert schema.plan_sync(Retail, described(Retail, "KEYS_ONLY")) == []  # a stream the model does not declare stays


def test_makemigrations_detects_a_stream_change_and_its_inverse_restores_the_old_one() -> None:
    before, after = ProjectState(), ProjectState()
    before.tables["t"] = TableState("t")
    after.tables["t"] = TableState("t", stream="NEW_IMAGE")
    (op,) = detect_changes(before, after)
    assert isinstance(op, AlterStream) and op.deconstruct() == {"table": "t", "stream": "NEW_IMAGE"}
    assert op.inverse().deconstruct() == {"table": "t", "stream": None, "previous": "NEW_IMAGE"}
    state = before.clone()
    op.state_forwards(state)
    assert state.tables["t"].stream == "NEW_IMAGE" and detect_changes(state, after) == []
    assert state.tables["t"].definition() == {"name": "t", "stream": "NEW_IMAGE"}


RECORD = {"eventName": "INSERT", "dynamodb": {"Keys": {"PK": {"S": "x"}, "SK": {"S": "y"}}, "SequenceNumber": "1"}}


def test_changes_refuses_what_it_cannot_read_before_yielding() -> None:
    with pytest.raises(ConfigurationError, match="has no eventSourceARN .* pass table=YourTable"):
        list(streams.changes([RECORD]))
    arn = "arn:aws:dynamodb:ddblocal:000000000000:table/nosuch/stream/2026"
    with pytest.raises(ConfigurationError, match="table 'nosuch', which no declared Table names"):
        list(streams.changes({"Records": [{**RECORD, "eventSourceARN": arn}]}))
    with pytest.raises(ConfigurationError, match="record 1 is not a DynamoDB Streams record"):
        list(streams.changes([RECORD, {"eventName": "PUT"}], table=Feed))
    with pytest.raises(ConfigurationError, match="moves must be one of report, hide"):
        list(streams.changes([RECORD], table=Feed, moves="drop"))


def test_a_keys_only_record_is_an_unknown_item_change() -> None:
    (change,) = streams.changes([RECORD], table=Feed)
    assert change.kind == "created" and change.new.attributes == {"PK": "x", "SK": "y"} and change.old is None
