"""Both wires and both transports give the same answers: every data-plane request shape, sent
through ``wire: direct`` and ``wire: botocore``, sync (on ``transport: direct`` and
``transport: botocore``) and asyncio, on the same table state, gives results equal in value and
type (binary and binary sets, nested maps and lists, 38-digit numbers, NULL, BOOL, empty strings,
LastEvaluatedKey, consumed capacity with indexes, item collection metrics, unprocessed items and
keys, ConditionalCheckFailed and TransactionCanceled with their items, ValidationException,
ResourceNotFound, a throttled request retried). The requests the server received are compared too.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Callable, Iterator

import pytest

from dynorm import DynormError, backend, conf
from tests.faults import fake_aio_response, fake_response, stored_item
from tests.parity import comparable, typed

TABLE = f"wireparity-{os.getpid()}"  # outside the session's table prefix: no test's reset touches it


def _item(pk: str, sk: bytes, **attrs: Any) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"B": sk}, **attrs}


EVERY_TYPE = {
    "s": {"S": "häagen 🍦 \"q\" \\"}, "empty": {"S": ""}, "big": {"N": "-12345678901234567890123456789012345678"},
    "tiny": {"N": "1E-130"}, "b": {"B": b"\x00\xff\x10"}, "ss": {"SS": ["a", "b"]}, "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"\x01", b"\x02\x03"]}, "null": {"NULL": True}, "bool": {"BOOL": False}, "B": {"S": "named B"},
    "m": {"M": {"l": {"L": [{"B": b"zz"}, {"NULL": True}, {"M": {"deep": {"BS": [b"x"]}, "e": {"S": ""}}}]}}},
}
BASE = [
    _item("P#1", b"\x00a", GSI1PK={"S": "G"}, GSI1SK={"N": "1"}, LSI1SK={"S": "x"}, **EVERY_TYPE),
    *[_item("P#1", bytes([1, i]), GSI1PK={"S": "G"}, GSI1SK={"N": str(10 + i)}, LSI1SK={"S": f"y{i}"},
            name={"S": f"item {i}"}, version={"N": str(i)}) for i in range(5)],
    _item("P#2", b"k", version={"N": "1"}, tags={"SS": ["t"]}),
]
KEY_A = {"PK": {"S": "P#1"}, "SK": {"B": b"\x00a"}}
KEY_2 = {"PK": {"S": "P#2"}, "SK": {"B": b"k"}}
MISSING = {"PK": {"S": "P#9"}, "SK": {"B": b"\x09"}}
CAPACITY = {"ReturnConsumedCapacity": "INDEXES"}


def _injected(operation: str, body: dict[str, Any]) -> Callable[[Any], Any]:
    """A hook answering ``operation`` with ``body`` (the server never sees the request)."""
    def hooks(respond: Any) -> Any:
        return [(f"before-send.dynamodb.{operation}", lambda **_: respond(200, body))]
    return hooks


def _b64(raw: bytes) -> str:
    import base64

    return base64.b64encode(raw).decode()


def _throttled_once(respond: Any) -> Any:
    """A hook answering the first attempt with ThrottlingException: botocore retries it."""
    attempts: list[int] = []

    def throttle(**_: Any) -> Any:
        attempts.append(1)
        if len(attempts) == 1:
            return respond(400, {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                                       "message": "slow down"})
        return None

    return [("before-send.dynamodb.GetItem", throttle)]


#: name -> (operation, params, hooks or None)
SCENARIOS: dict[str, tuple[str, dict[str, Any], Any]] = {
    "get": ("GetItem", {"TableName": TABLE, "Key": KEY_A, **CAPACITY}, None),
    "get-missing": ("GetItem", {"TableName": TABLE, "Key": MISSING}, None),
    "get-projection": ("GetItem", {"TableName": TABLE, "Key": KEY_A, "ConsistentRead": True,
                                   "ProjectionExpression": "#m.l[2], bs, #b", "ExpressionAttributeNames":
                                   {"#m": "m", "#b": "B"}}, None),
    "put-all-old": ("PutItem", {"TableName": TABLE, "Item": {**KEY_A, **EVERY_TYPE, "more": {"S": "new"}},
                                "ReturnValues": "ALL_OLD", "ReturnItemCollectionMetrics": "SIZE", **CAPACITY}, None),
    "put-condition-failed": ("PutItem", {"TableName": TABLE, "Item": KEY_A, "ConditionExpression":
                                         "attribute_not_exists(PK)", "ReturnValuesOnConditionCheckFailure": "ALL_OLD"},
                             None),
    "update-all-new": ("UpdateItem", {"TableName": TABLE, "Key": KEY_A,
                                      "UpdateExpression": "SET #e = :e, m.l[0] = :b ADD bs :bs, ns :ns REMOVE #null",
                                      "ExpressionAttributeNames": {"#e": "empty", "#null": "null"},
                                      "ExpressionAttributeValues": {":e": {"S": ""}, ":b": {"B": b"\x00"},
                                                                    ":bs": {"BS": [b"\x07"]}, ":ns": {"NS": ["-1"]}},
                                      "ReturnValues": "ALL_NEW", **CAPACITY}, None),
    "update-updated-old": ("UpdateItem", {"TableName": TABLE, "Key": KEY_2, "UpdateExpression": "SET version = :v",
                                          "ConditionExpression": "version = :one", "ExpressionAttributeValues":
                                          {":v": {"N": "99999999999999999999999999999999999999"}, ":one": {"N": "1"}},
                                          "ReturnValues": "UPDATED_OLD"}, None),
    "delete-all-old": ("DeleteItem", {"TableName": TABLE, "Key": KEY_A, "ReturnValues": "ALL_OLD",
                                      "ReturnItemCollectionMetrics": "SIZE", **CAPACITY}, None),
    "query-page": ("Query", {"TableName": TABLE, "KeyConditionExpression": "PK = :p", "Limit": 3,
                             "ExpressionAttributeValues": {":p": {"S": "P#1"}}, **CAPACITY}, None),
    "query-from-key": ("Query", {"TableName": TABLE, "KeyConditionExpression": "PK = :p AND SK > :s",
                                 "ExpressionAttributeValues": {":p": {"S": "P#1"}, ":s": {"B": b"\x00a"}},
                                 "ExclusiveStartKey": {"PK": {"S": "P#1"}, "SK": {"B": bytes([1, 1])}}}, None),
    "query-gsi": ("Query", {"TableName": TABLE, "IndexName": "GSI1", "KeyConditionExpression": "GSI1PK = :g",
                            "ExpressionAttributeValues": {":g": {"S": "G"}}, "ScanIndexForward": False, "Limit": 4,
                            **CAPACITY}, None),
    "query-lsi": ("Query", {"TableName": TABLE, "IndexName": "LSI1", "KeyConditionExpression":
                            "PK = :p AND begins_with(LSI1SK, :y)", "ExpressionAttributeValues":
                            {":p": {"S": "P#1"}, ":y": {"S": "y"}}, **CAPACITY}, None),
    "query-count-filter": ("Query", {"TableName": TABLE, "KeyConditionExpression": "PK = :p", "Select": "COUNT",
                                     "FilterExpression": "version > :v", "ExpressionAttributeValues":
                                     {":p": {"S": "P#1"}, ":v": {"N": "1"}}}, None),
    "scan-segment": ("Scan", {"TableName": TABLE, "Segment": 0, "TotalSegments": 2, **CAPACITY}, None),
    "scan-filter": ("Scan", {"TableName": TABLE, "FilterExpression": "contains(bs, :b) OR attribute_exists(tags)",
                             "ExpressionAttributeValues": {":b": {"B": b"\x01"}}}, None),
    "batch-get": ("BatchGetItem", {"RequestItems": {TABLE: {"Keys": [KEY_A, KEY_2, MISSING], "ConsistentRead": True}},
                                   **CAPACITY}, None),
    "batch-write": ("BatchWriteItem", {"RequestItems": {TABLE: [
        {"PutRequest": {"Item": _item("P#3", b"\x03", **EVERY_TYPE)}}, {"DeleteRequest": {"Key": KEY_2}}]},
        "ReturnItemCollectionMetrics": "SIZE", **CAPACITY}, None),
    "transact-get": ("TransactGetItems", {"TransactItems": [{"Get": {"TableName": TABLE, "Key": KEY_A}},
                                                            {"Get": {"TableName": TABLE, "Key": MISSING}}],
                                          **CAPACITY}, None),
    "transact-write": ("TransactWriteItems", {"TransactItems": [
        {"Put": {"TableName": TABLE, "Item": _item("P#4", b"\x04", b={"B": b"\x04"})}},
        {"Update": {"TableName": TABLE, "Key": KEY_2, "UpdateExpression": "ADD version :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}}}},
        {"ConditionCheck": {"TableName": TABLE, "Key": KEY_A, "ConditionExpression": "attribute_exists(PK)"}}],
        "ClientRequestToken": "wire-parity-ok", "ReturnItemCollectionMetrics": "SIZE", **CAPACITY}, None),
    "transact-canceled": ("TransactWriteItems", {"TransactItems": [
        {"Delete": {"TableName": TABLE, "Key": KEY_2}},
        {"ConditionCheck": {"TableName": TABLE, "Key": KEY_A, "ConditionExpression": "attribute_not_exists(PK)",
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}],
        "ClientRequestToken": "wire-parity-canceled"}, None),
    "validation": ("Query", {"TableName": TABLE, "KeyConditionExpression": "nope = :p",
                             "ExpressionAttributeValues": {":p": {"S": "x"}}}, None),
    "not-found": ("GetItem", {"TableName": TABLE + "-missing", "Key": KEY_A}, None),
    "throttled-once": ("GetItem", {"TableName": TABLE, "Key": KEY_A}, _throttled_once),
    "unprocessed-keys": ("BatchGetItem", {"RequestItems": {TABLE: {"Keys": [KEY_A]}}}, _injected("BatchGetItem", {
        "Responses": {TABLE: [{"PK": {"S": "P#1"}, "SK": {"B": _b64(b"\x00a")}, "bs": {"BS": [_b64(b"\x01")]}}]},
        "UnprocessedKeys": {TABLE: {"Keys": [{"PK": {"S": "P#2"}, "SK": {"B": _b64(b"k")}}], "ConsistentRead": True}},
        "ConsumedCapacity": [{"TableName": TABLE, "CapacityUnits": 1.0}]})),
    "unprocessed-items": ("BatchWriteItem", {"RequestItems": {TABLE: [{"DeleteRequest": {"Key": KEY_A}}]}},
                          _injected("BatchWriteItem", {"UnprocessedItems": {TABLE: [
                              {"PutRequest": {"Item": {"PK": {"S": "P#5"}, "SK": {"B": _b64(b"\x05")},
                                                       "m": {"M": {"b": {"B": _b64(b"\xff")}}}}}},
                              {"DeleteRequest": {"Key": {"PK": {"S": "P#1"}, "SK": {"B": _b64(b"\x00a")}}}}]}})),
}


@pytest.fixture(scope="module")
def parity_table(dynorm_backend: Any) -> Iterator[str]:
    """A table with a binary sort key, a GSI with a number sort key and an LSI (item collection metrics)."""
    def attribute(name: str, kind: str) -> dict[str, str]:
        return {"AttributeName": name, "AttributeType": kind}

    with conf.overridden(wire="botocore"):
        backend.call("CreateTable", {
            "TableName": TABLE, "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
            "AttributeDefinitions": [attribute("PK", "S"), attribute("SK", "B"), attribute("GSI1PK", "S"),
                                     attribute("GSI1SK", "N"), attribute("LSI1SK", "S")],
            "GlobalSecondaryIndexes": [{"IndexName": "GSI1", "Projection": {"ProjectionType": "ALL"}, "KeySchema": [
                {"AttributeName": "GSI1PK", "KeyType": "HASH"}, {"AttributeName": "GSI1SK", "KeyType": "RANGE"}]}],
            "LocalSecondaryIndexes": [{"IndexName": "LSI1", "Projection": {"ProjectionType": "KEYS_ONLY"},
                                       "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"},
                                                     {"AttributeName": "LSI1SK", "KeyType": "RANGE"}]}]})
    try:
        yield TABLE
    finally:
        with conf.overridden(wire="botocore"):
            backend.call("DeleteTable", {"TableName": TABLE})


WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}


def _restore() -> None:
    """Put the table back to BASE (on the botocore wire): delete what is there, write BASE."""
    with conf.overridden(wire="botocore"):
        keys = [{"PK": i["PK"], "SK": i["SK"]} for i in backend.call(
            "Scan", {"TableName": TABLE, "ProjectionExpression": "PK, SK", "ConsistentRead": True})["Items"]]
        for requests in ([{"DeleteRequest": {"Key": k}} for k in keys], [{"PutRequest": {"Item": i}} for i in BASE]):
            for start in range(0, len(requests), 25):
                assert not backend.call("BatchWriteItem", {"RequestItems": {TABLE: requests[start:start + 25]}}
                                        )["UnprocessedItems"]


def _outcome(send: Callable[[], dict[str, Any]]) -> Any:
    try:
        return ("answered", comparable(send()))
    except DynormError as exc:
        cause = exc.__cause__
        response = getattr(cause, "response", None)
        return ("raised", type(exc).__name__, comparable(response) if response else repr(cause))


def test_both_wires_give_the_same_answers(parity_table: str, dynorm_backend: Any) -> None:
    """Every scenario through every mode; one test (one table reset) for all of them, failures listed by name."""
    modes = [("direct", "direct", "sync"), ("botocore", "botocore", "sync"), ("direct", "botocore", "sync"),
             ("botocore", "direct", "sync")]
    if dynorm_backend.name != "moto":  # moto intercepts botocore, not aiobotocore
        modes += [("direct", "botocore", "async"), ("botocore", "botocore", "async")]
    loop = asyncio.new_event_loop()
    failures = []
    try:
        _restore()
        for name, (operation, params, hooks) in SCENARIOS.items():
            writes = operation in WRITES and hooks is None
            outcomes, bodies = {}, {}
            for mode in modes:
                outcomes[mode], bodies[mode] = _run(loop, mode, operation, params, hooks)
                if writes:
                    _restore()
            failures += _differences(name, modes, outcomes, bodies, params)
    finally:
        with conf.overridden(wire="direct"):
            loop.run_until_complete(backend.aclose())
        loop.close()
    assert not failures, "\n".join(failures)


def _run(loop: Any, mode: tuple[str, str, str], operation: str, params: dict[str, Any],
         hooks: Any) -> tuple[Any, Any]:
    """Send one request in one mode (wire, transport, sync/async); return its outcome and the bodies
    the server got (the asyncio clients have aiobotocore's transport whatever the setting)."""
    wire, transport, api = mode
    sent: list[Any] = []

    def seen(request: Any, **_: Any) -> None:
        sent.append(json.loads(request.body))

    _restore()
    respond = fake_response if api == "sync" else fake_aio_response
    extra = [("before-send.dynamodb", seen)] + (hooks(respond) if hooks else [])
    for event, handler in extra:
        backend.register_hook(event, handler)
    try:
        with conf.overridden(wire=wire, transport=transport):
            if api == "sync":
                return _outcome(lambda: backend.call(operation, params)), sent
            return loop.run_until_complete(_aoutcome(operation, params)), sent
    finally:
        for event, handler in extra:
            backend.unregister_hook(event, handler)


def _differences(name: str, modes: list[Any], outcomes: dict[Any, Any], bodies: dict[Any, Any],
                 params: dict[str, Any]) -> list[str]:
    out = []
    first = modes[0]
    for mode in modes[1:]:
        if outcomes[mode] != outcomes[first]:
            out.append(f"{name}: {mode} answered {outcomes[mode]!r}\n    but {first} answered {outcomes[first]!r}")
        if typed(bodies[mode]) != typed(bodies[first]):
            out.append(f"{name}: {mode} sent {bodies[mode]!r}, {first} sent {bodies[first]!r}")
    expected = json.loads(json.dumps(params, default=_b64))
    if not bodies[first] or any(body != expected for body in bodies[first]):  # retries re-send the same body
        out.append(f"{name}: sent {bodies[first]!r}, not the request {expected!r}")
    if name == "throttled-once":
        meta = dict(dict(outcomes[first][1][1])["'ResponseMetadata'"][1])
        if len(bodies[first]) != 2 or meta["'RetryAttempts'"] != ("int", 1):
            out.append(f"{name}: expected one retry, got {len(bodies[first])} requests and {meta}")
    return out


async def _aoutcome(operation: str, params: dict[str, Any]) -> Any:
    try:
        return ("answered", comparable(await backend.acall(operation, params)))
    except DynormError as exc:
        cause = exc.__cause__
        response = getattr(cause, "response", None)
        return ("raised", type(exc).__name__, comparable(response) if response else repr(cause))


def _bodies_of_a_create() -> list[bytes]:
    from demo_project.catalog.models import Brand

    bodies: list[bytes] = []

    def seen(request: Any, **_: Any) -> None:
        bodies.append(request.body)

    backend.register_hook("before-send.dynamodb.PutItem", seen)
    try:
        Brand.objects.create(brand_id="w", name="Wire")
    finally:
        backend.unregister_hook("before-send.dynamodb.PutItem", seen)
    return bodies


@pytest.mark.dynorm_wire("botocore")
def test_a_test_marked_dynorm_wire_runs_on_that_wire() -> None:
    assert conf.get_settings().wire == "botocore"
    [body] = _bodies_of_a_create()
    assert b'": "' in body  # botocore's json.dumps spacing; the direct wire's bodies are compact


def test_the_direct_wire_sends_compact_bodies() -> None:
    with conf.overridden(wire="direct"):
        [body] = _bodies_of_a_create()
    assert b'": "' not in body and json.loads(body)["Item"]["name"] == {"S": "Wire"}


@pytest.mark.parametrize("register", ["register", "register_first", "register_last"])
@pytest.mark.parametrize("wire", ["direct", "botocore"])
def test_a_before_parameter_build_hook_changes_the_request_on_both_wires(
        dynorm_tables: Any, wire: str, register: str) -> None:
    """However the application registers it on the generic event, its change is what is sent."""
    from tests.models import Tally

    def stamp(params: dict[str, Any], **_: Any) -> None:
        if "Item" in params:
            params["Item"]["stamped"] = {"S": register}

    with conf.overridden(wire=wire):
        events = backend.client().meta.events
        getattr(events, register)("before-parameter-build", stamp)
        try:
            backend.call("PutItem", {"TableName": Tally._meta.table.table_name(),
                                     "Item": {**Tally._meta.primary_key({"name": "h"}), "n": {"N": "1"}}})
        finally:
            events.unregister("before-parameter-build", stamp)
    assert stored_item(Tally, name="h")["stamped"] == {"S": register}
