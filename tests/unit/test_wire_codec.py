"""The direct wire's codec gives exactly what botocore's serializer sends and its parser returns.

No network: request bodies are compared with botocore's own JSON serializer, response bodies with
botocore's own JSON parser, for every data-plane operation, with orjson and with the standard
library. The endpoint test answers from a ``before-send`` hook.
"""

from __future__ import annotations

import base64
import contextlib
import json
from typing import Any, Iterator

import botocore.parsers
import botocore.serialize
import botocore.session
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynorm import backend, conf
from dynorm.backend import wire, wire_json
from tests.faults import fake_response
from tests.parity import typed
from tests.tiers import examples

LIBRARIES = ["json"] + (["orjson"] if wire_json.json_library() == "orjson" else [])
_MODEL = botocore.session.get_session().get_service_model("dynamodb")

#: one value of every AttributeValue type, nested, with the edge cases of the wire
EVERY_TYPE = {
    "s": {"S": "häagen 🍦 \"quoted\" \\ back"}, "empty": {"S": ""},
    "n": {"N": "-0.00000000000000000000000000000000000001"},
    "big": {"N": "12345678901234567890123456789012345678"}, "b": {"B": b"\x00\xff\x10"}, "empty_b": {"B": b""},
    "ss": {"SS": ["a", "b"]}, "ns": {"NS": ["1", "2.5"]}, "bs": {"BS": [b"\x01", b"\x02\x03"]},
    "m": {"M": {"inner": {"L": [{"B": b"zz"}, {"NULL": True}, {"BOOL": False}, {"M": {"deep": {"BS": [b"x"]}}}]}}},
    "null": {"NULL": True}, "bool": {"BOOL": True}, "B": {"S": "an attribute named B"}, "l": {"L": []},
}
KEY = {"PK": {"S": "P#1"}, "SK": {"B": b"\x00sk"}}

#: request parameters of every data-plane operation, as dynorm's planners build them (and a few more)
REQUESTS: dict[str, list[dict[str, Any]]] = {
    "GetItem": [{"TableName": "t", "Key": KEY, "ConsistentRead": True, "ProjectionExpression": "#a, b",
                 "ExpressionAttributeNames": {"#a": "a"}, "ReturnConsumedCapacity": "INDEXES"}],
    "PutItem": [{"TableName": "t", "Item": {**KEY, **EVERY_TYPE}, "ConditionExpression": "attribute_not_exists(PK)",
                 "ReturnValues": "ALL_OLD", "ReturnValuesOnConditionCheckFailure": "ALL_OLD"},
                {"TableName": "t", "Item": {**KEY, "set": {"BS": {b"b", b"a"}}, "ns": {"NS": {"1", "2"}}}}],
    "UpdateItem": [{"TableName": "t", "Key": KEY, "UpdateExpression": "SET #v = #v + :one ADD bs :bs",
                    "ExpressionAttributeNames": {"#v": "version"},
                    "ExpressionAttributeValues": {":one": {"N": "1"}, ":bs": {"BS": [bytearray(b"\x09")]}},
                    "ReturnValues": "ALL_NEW"}],
    "DeleteItem": [{"TableName": "t", "Key": KEY, "ConditionExpression": "version = :v",
                    "ExpressionAttributeValues": {":v": {"N": "3"}}, "ReturnValues": "ALL_OLD"}],
    "Query": [{"TableName": "t", "IndexName": "GSI1", "KeyConditionExpression": "PK = :p AND begins_with(SK, :s)",
               "ExpressionAttributeValues": {":p": {"S": "P#1"}, ":s": {"B": memoryview(b"\x00")}}, "Limit": 25,
               "ScanIndexForward": False, "ExclusiveStartKey": KEY, "Select": "COUNT"}],
    "Scan": [{"TableName": "t", "Segment": 1, "TotalSegments": 4, "FilterExpression": "#t = :t",
              "ExpressionAttributeNames": {"#t": "entityType"}, "ExpressionAttributeValues": {":t": {"S": "X"}}}],
    "BatchGetItem": [{"RequestItems": {"t": {"Keys": [KEY, {"PK": {"S": "2"}, "SK": {"B": b"2"}}],
                                             "ConsistentRead": True}}, "ReturnConsumedCapacity": "TOTAL"}],
    "BatchWriteItem": [{"RequestItems": {"t": [{"PutRequest": {"Item": {**KEY, **EVERY_TYPE}}},
                                               {"DeleteRequest": {"Key": KEY}}],
                                         "u": [{"DeleteRequest": {"Key": {"PK": {"S": "x"}}}}]}}],
    "TransactGetItems": [{"TransactItems": [{"Get": {"TableName": "t", "Key": KEY}}]}],
    "TransactWriteItems": [{"TransactItems": [
        {"Put": {"TableName": "t", "Item": {**KEY, **EVERY_TYPE}}},
        {"Update": {"TableName": "u", "Key": KEY, "UpdateExpression": "SET a = :a",
                    "ExpressionAttributeValues": {":a": {"B": b"a"}}}},
        {"Delete": {"TableName": "t", "Key": {"PK": {"S": "d"}, "SK": {"B": b"d"}}}},
        {"ConditionCheck": {"TableName": "t", "Key": KEY, "ConditionExpression": "attribute_exists(PK)",
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}],
        "ClientRequestToken": "token-1", "ReturnConsumedCapacity": "INDEXES", "ReturnItemCollectionMetrics": "SIZE"}],
}


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _wire_item(item: dict[str, Any]) -> Any:
    """An item as DynamoDB puts it on the wire (binary as base64 text)."""
    return json.loads(wire_json.dumps(item, library="json"))


ITEM = _wire_item({**KEY, **EVERY_TYPE})
CAPACITY = {"TableName": "t", "CapacityUnits": 1.5, "ReadCapacityUnits": 1, "Table": {"CapacityUnits": 0.5},
            "GlobalSecondaryIndexes": {"GSI1": {"CapacityUnits": 1.0}},
            "LocalSecondaryIndexes": {"LSI1": {"CapacityUnits": 0}}}
METRICS = {"ItemCollectionKey": {"PK": {"B": _b64(b"\x01pk")}}, "SizeEstimateRangeGB": [0.0, 1.0]}

#: successful response bodies of every data-plane operation
RESPONSES: dict[str, list[Any]] = {
    "GetItem": [{"Item": ITEM, "ConsumedCapacity": CAPACITY}, {}, {"Item": {"PK": {"S": "only strings"}}}],
    "PutItem": [{"Attributes": ITEM, "ItemCollectionMetrics": METRICS, "ConsumedCapacity": CAPACITY}],
    "UpdateItem": [{"Attributes": ITEM}],
    "DeleteItem": [{"Attributes": ITEM, "ItemCollectionMetrics": METRICS}],
    "Query": [{"Items": [ITEM, ITEM], "Count": 2, "ScannedCount": 7, "LastEvaluatedKey": _wire_item(KEY),
               "ConsumedCapacity": CAPACITY},
              {"Items": [{"PK": {"S": "x"}, "n": {"N": "1E+3"}}], "Count": 1, "ScannedCount": 1},
              {"Count": 0, "ScannedCount": 0, "Items": []}],
    "Scan": [{"Items": [ITEM], "Count": 1, "ScannedCount": 1, "LastEvaluatedKey": {"PK": {"S": "k"}}}],
    "BatchGetItem": [{"Responses": {"t": [ITEM], "u": []},
                      "UnprocessedKeys": {"t": {"Keys": [_wire_item(KEY)], "ConsistentRead": True,
                                                "ProjectionExpression": "PK"}},
                      "ConsumedCapacity": [CAPACITY]}],
    "BatchWriteItem": [{"UnprocessedItems": {"t": [{"PutRequest": {"Item": ITEM}},
                                                  {"DeleteRequest": {"Key": _wire_item(KEY)}}]},
                        "ItemCollectionMetrics": {"t": [METRICS]}, "ConsumedCapacity": [CAPACITY]},
                       {"UnprocessedItems": {}}],
    "TransactGetItems": [{"Responses": [{"Item": ITEM}, {}], "ConsumedCapacity": [CAPACITY]}],
    "TransactWriteItems": [{"ItemCollectionMetrics": {"t": [METRICS]}, "ConsumedCapacity": [CAPACITY]}, {}],
}


def _botocore_body(operation: str, params: dict[str, Any]) -> Any:
    serializer = botocore.serialize.create_serializer("json", include_validation=False)
    return json.loads(serializer.serialize_to_request(params, _MODEL.operation_model(operation))["body"])


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("operation", sorted(REQUESTS))
def test_request_bodies_mean_what_botocore_serializes(operation: str, library: str) -> None:
    for params in REQUESTS[operation]:
        mine = json.loads(wire_json.dumps(params, library=library))
        theirs = _botocore_body(operation, params)
        if operation == "PutItem" and "set" in params["Item"]:  # a set's order is the set's own, on both wires
            for body in (mine, theirs):
                body["Item"]["set"]["BS"].sort()
                body["Item"]["ns"]["NS"].sort()
        assert typed(mine) == typed(theirs)


def test_values_json_cannot_hold_are_left_to_botocore() -> None:
    from decimal import Decimal

    with pytest.raises(TypeError):
        wire_json.dumps({"Item": {"n": {"N": Decimal("1")}}})
    with pytest.raises(ValueError):
        wire_json.dumps({"Limit": float("nan")}, library="json")
    # orjson refuses an int beyond 64 bits and a lone surrogate: the standard library sends them
    assert json.loads(wire_json.dumps({"Limit": 2**70})) == {"Limit": 2**70}
    assert json.loads(wire_json.dumps({"S": "\ud800"})) == {"S": "\ud800"}


def _response(body: bytes, operation: str, status: int = 200) -> dict[str, Any]:
    headers = {"x-amzn-RequestId": "req-1", "Content-Type": "application/x-amz-json-1.0"}
    return {"status_code": status, "headers": headers, "body": body, "context": {"operation_name": operation}}


@contextlib.contextmanager
def _library(name: str) -> Iterator[None]:
    """Decode with the standard library (``"json"``) even when orjson is installed, or with orjson."""
    saved = wire_json._orjson, wire_json._checked
    if name == "json":
        wire_json._orjson, wire_json._checked = None, True
    try:
        yield
    finally:
        wire_json._orjson, wire_json._checked = saved


def _both(operation: str, body: bytes, library: str, status: int = 200) -> tuple[Any, Any]:
    """(the direct parser's, botocore's parser's) parse of one response body, :func:`typed`."""
    shape = _MODEL.operation_model(operation).output_shape
    direct = wire.DirectParser(botocore.parsers.JSONParser())
    with _library(library):
        mine = _outcome(direct.parse, _response(body, operation, status), shape)
    theirs = _outcome(botocore.parsers.JSONParser().parse, _response(body, operation, status), shape)
    return mine, theirs


def _outcome(parse: Any, response: dict[str, Any], shape: Any) -> Any:
    try:
        return typed(parse(response, shape))
    except Exception as exc:  # noqa: BLE001 - the same error on both sides is parity too
        return ("raised", type(exc).__name__)


@pytest.mark.parametrize("operation, body", [
    ("Query", b'{"Items": [{"a": {"S": "v"}}, {"a": {"S": "v", "Q": {"S": "x"}}}], "Count": 2}'),
    ("BatchGetItem", b'{"Responses": {"t": [{"a": {"X": "y"}}]}}'),
    ("TransactGetItems", b'{"Responses": [{"Item": {"a": {"N": "1", "Z": true}}}]}'),
], ids=["query", "batch-get", "transact-get"])
def test_members_botocore_drops_are_dropped_in_every_item_container(operation: str, body: bytes) -> None:
    for library in LIBRARIES:
        mine, theirs = _both(operation, body, library)
        assert mine == theirs


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("operation", sorted(RESPONSES))
def test_responses_decode_as_botocore_parses_them(operation: str, library: str) -> None:
    for data in RESPONSES[operation]:
        mine, theirs = _both(operation, json.dumps(data).encode(), library)
        assert mine == theirs


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("body", [
    b"",                                                           # an empty 200
    b"<html>not json</html>",                                      # a proxy's page
    b"[1, 2]",                                                     # JSON, not an object (both raise)
    b'{"Item": {"a": {"S": "x"}}, "NewMember": {"x": 1}, "ConsumedCapacity": null}',  # unknown and null members
    b'{"Item": {"a": {"\\u0042": "AAE="}}}',                       # a key spelt with an escape
    b'{"Item": {"a": {"S": "\\ud800"}}}',                          # a lone surrogate escape
    b'{"Item": {"a": {"M": {"n": null}, "L": [null]}}}',           # nulls inside values
    b'{"Item": {"a": {"X": "y"}}}',                                # a member no AttributeValue has
    b'{"Item": {"a": {"S": null, "N": "1"}}}',                     # a null member beside a value
    b'{"Item": {"a": {"M": {"k": {"S": "v", "Z": 1}}}}}',          # an unknown member, nested in M
    b'{"Item": {"a": {"L": [{"S": "v"}, {"X": {"S": "w"}}]}}}',    # an unknown member, nested in L
], ids=["empty", "html", "array", "unknown-members", "escaped-key", "lone-surrogate", "nulls", "unknown-av-member",
        "null-av-member", "unknown-in-map", "unknown-in-list"])
def test_odd_bodies_decode_as_botocore_parses_them(body: bytes, library: str) -> None:
    mine, theirs = _both("GetItem", body, library)
    assert mine == theirs


@pytest.mark.parametrize("code, body", [
    ("ConditionalCheckFailedException", {"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
                                         "message": "The conditional request failed", "Item": ITEM}),
    ("TransactionCanceledException", {"__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                                      "Message": "Transaction cancelled", "CancellationReasons": [
                                          {"Code": "ConditionalCheckFailed", "Message": "failed", "Item": ITEM},
                                          {"Code": "None"}]}),
    ("ValidationException", {"__type": "com.amazon.coral.validate#ValidationException", "message": "bad"}),
])
def test_errors_are_botocore_s(code: str, body: dict[str, Any]) -> None:
    mine, theirs = _both("TransactWriteItems", json.dumps(body).encode(), "json", status=400)
    assert mine == theirs
    assert dict(theirs[1])["'Error'"] == typed({"Code": code, "Message": body.get("message", body.get("Message"))})


_NAME = st.text(min_size=1, max_size=5)


def _attribute_values() -> Any:
    scalar = st.one_of(
        st.builds(lambda s: {"S": s}, st.text(max_size=8)),
        st.builds(lambda n: {"N": str(n)}, st.integers(-10**38 + 1, 10**38 - 1)),
        st.builds(lambda b: {"B": b}, st.binary(max_size=8)),
        st.builds(lambda b: {"BS": sorted(b)}, st.sets(st.binary(min_size=1, max_size=4), min_size=1, max_size=3)),
        st.builds(lambda s: {"SS": sorted(s)}, st.sets(st.text(max_size=3), min_size=1, max_size=3)),
        st.just({"NULL": True}), st.builds(lambda b: {"BOOL": b}, st.booleans()),
    )
    return st.recursive(scalar, lambda inner: st.one_of(
        st.builds(lambda m: {"M": m}, st.dictionaries(_NAME, inner, max_size=3)),
        st.builds(lambda items: {"L": items}, st.lists(inner, max_size=3))), max_leaves=12)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(st.dictionaries(_NAME, _attribute_values(), min_size=1, max_size=4), max_size=4))
def test_any_items_round_trip_as_botocore_parses_them(items: list[dict[str, Any]]) -> None:
    body = wire_json.dumps({"Items": items, "Count": len(items), "ScannedCount": len(items)})
    for library in LIBRARIES:
        mine, theirs = _both("Query", body, library)
        assert mine == theirs


def test_routing_parameters_keep_what_endpoint_rules_read() -> None:
    params = REQUESTS["TransactWriteItems"][0]
    assert wire_json.routing_params(params) == {
        "TransactItems": [{"Put": {"TableName": "t"}}, {"Update": {"TableName": "u"}}, {"Delete": {"TableName": "t"}},
                          {"ConditionCheck": {"TableName": "t"}}],
        "ClientRequestToken": "token-1", "ReturnConsumedCapacity": "INDEXES", "ReturnItemCollectionMetrics": "SIZE"}
    assert wire_json.routing_params(REQUESTS["BatchWriteItem"][0]) == {"RequestItems": {"t": [], "u": []}}
    assert wire_json.routing_params(REQUESTS["GetItem"][0]) == {
        "TableName": "t", "Key": {}, "ConsistentRead": True, "ProjectionExpression": "#a, b",
        "ExpressionAttributeNames": {}, "ReturnConsumedCapacity": "INDEXES"}


ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/shop"


@pytest.mark.parametrize("operation, params", [
    ("GetItem", {"TableName": ARN, "Key": {"PK": {"S": "x"}}}),
    ("BatchWriteItem", {"RequestItems": {ARN: [{"PutRequest": {"Item": {"PK": {"S": "x"}}}}]}}),
    ("TransactWriteItems", {"TransactItems": [{"Put": {"TableName": ARN, "Item": {"PK": {"S": "x"}}}}],
                            "ClientRequestToken": "t-1"}),
    ("BatchGetItem", {"RequestItems": {ARN: {"Keys": [{"PK": {"S": "x"}}]}}}),
])
def test_the_direct_wire_sends_to_the_endpoint_botocore_resolves(operation: str, params: dict[str, Any],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A table ARN routes to its account's endpoint (botocore's rules read TableName, the keys of
    RequestItems, each action's TableName): the direct wire must leave them to botocore."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake")
    seen: dict[str, tuple[str, Any]] = {}

    def answer(request: Any, **_: Any) -> Any:
        seen[current] = (request.url, json.loads(request.body))
        return fake_response(200, {})

    backend.reset_client()
    try:
        for current in ("direct", "botocore"):
            with conf.overridden(endpoint=None, region="us-east-1", wire=current):
                client = backend.client()
                client.meta.events.register("before-send.dynamodb", answer)
                backend.call(operation, params)
    finally:
        backend.reset_client()
    assert seen["direct"][0] == seen["botocore"][0] == "https://123456789012.ddb.us-east-1.amazonaws.com/"
    assert seen["direct"][1] == seen["botocore"][1] == json.loads(json.dumps(params))


def test_botocore_s_idempotency_token_goes_into_the_direct_body(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore fills a missing ClientRequestToken at ``before-parameter-build``: the direct body has it."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake")
    bodies = []

    def answer(request: Any, **_: Any) -> Any:
        bodies.append(json.loads(request.body))
        return fake_response(200, {})

    backend.reset_client()
    try:
        with conf.overridden(endpoint=None, region="us-east-1", wire="direct"):
            backend.client().meta.events.register("before-send.dynamodb", answer)
            put = {"Put": {"TableName": "t", "Item": {"PK": {"S": "x"}}}}
            backend.call("TransactWriteItems", {"TransactItems": [put]})
    finally:
        backend.reset_client()
    assert len(bodies[0]["ClientRequestToken"]) == 36
    assert bodies[0]["TransactItems"][0]["Put"]["Item"] == {"PK": {"S": "x"}}


def test_the_botocore_wire_is_botocore_s_own() -> None:
    """``wire: botocore`` clients carry none of dynorm's codec; ``direct`` ones carry it."""
    from dynorm.backend import clients

    assert isinstance(clients._botocore_session("direct").get_component("response_parser_factory"),
                      wire.DirectParserFactory)
    assert type(clients._botocore_session("botocore").get_component("response_parser_factory")) \
        is botocore.parsers.ResponseParserFactory
