"""Raw boto3, the baseline: a low-level client sending by hand the requests dynorm sends.

Each call is the request dynorm's operation puts on the wire (same attributes, conditions,
``ReturnValues`` and ``ReturnConsumedCapacity``), and returns what botocore returns (DynamoDB
JSON: nothing is decoded into Python values), so the ratio to it is the cost of the ORM.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

from dynorm.backend import LOCAL_CREDENTIALS

from . import shape

TOTAL = {"ReturnConsumedCapacity": "TOTAL"}


class Boto3:
    """The hand-written baseline."""

    name = "boto3"

    def __init__(self, endpoint: str, table: str, tag: str = "") -> None:
        """Connect to ``table`` (full name) at ``endpoint``; write the update target (see :mod:`.rounds`)."""
        import boto3

        key_id, secret = LOCAL_CREDENTIALS
        self.client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                                   aws_access_key_id=key_id, aws_secret_access_key=secret)
        self.table = table
        self.tag = tag
        self._ids = itertools.count()
        self._upd = f"upd-boto3{tag}"
        self.client.put_item(TableName=table, Item=shape.raw_item(self._upd, "misc", 0))
        self._version = 1

    def activate(self) -> None:
        """Nothing to switch."""

    def query(self, group: str) -> list[dict[str, Any]]:
        """Every item of ``group`` (Query GSI1, following LastEvaluatedKey)."""
        params: dict[str, Any] = {
            "TableName": self.table, "IndexName": "GSI1", "KeyConditionExpression": "#n0 = :v0",
            "ExpressionAttributeNames": {"#n0": "GSI1PK"},
            "ExpressionAttributeValues": {":v0": {"S": shape.gsi1pk(group)}}, **TOTAL}
        items: list[dict[str, Any]] = []
        while True:
            page = self.client.query(**params)
            items += page["Items"]
            if "LastEvaluatedKey" not in page:
                return items
            params["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def ops(self) -> dict[str, Callable[[int], Any]]:
        """The operations, each called with the call's number."""
        c, table = self.client, self.table
        target = shape.raw_key(shape.TARGET)
        keys = [shape.raw_key(i) for i in shape.query_ids("q100", shape.BATCH_GET)]

        def put(n: int) -> Any:
            return c.put_item(TableName=table, Item=shape.raw_item(f"put-b{self.tag}-{next(self._ids)}", "put", n),
                              ConditionExpression="attribute_not_exists(#n0)",
                              ExpressionAttributeNames={"#n0": "PK"},
                              ReturnValuesOnConditionCheckFailure="ALL_OLD", **TOTAL)

        def update(n: int) -> Any:
            self._version += 1
            return c.update_item(
                TableName=table, Key=shape.raw_key(self._upd),
                UpdateExpression="SET #n0 = :v0, #n2 = :v3, #n3 = :v4",
                ConditionExpression="(#n1 = :v1) AND (#n2 = :v2)",
                ExpressionAttributeNames={"#n0": "stock_level", "#n1": "entityType", "#n2": "version",
                                          "#n3": "_dynorm_rev"},
                ExpressionAttributeValues={":v0": {"N": str(n)}, ":v1": {"S": shape.ENTITY_TYPE},
                                           ":v2": {"N": str(self._version - 1)},
                                           ":v3": {"N": str(self._version)}, ":v4": {"S": shape.REV}},
                ReturnValues="ALL_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD", **TOTAL)

        def batch_write(n: int) -> None:
            items = [{"PutRequest": {"Item": shape.raw_item(f"bw-b-{j}", "bw-b", j)}}
                     for j in range(shape.BATCH_WRITE)]
            for start in range(0, len(items), 25):
                request = {table: items[start:start + 25]}
                while request:
                    request = c.batch_write_item(RequestItems=request, **TOTAL).get("UnprocessedItems")

        def batch_get(n: int) -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = []
            request: Any = {table: {"Keys": keys}}
            while request:
                answer = c.batch_get_item(RequestItems=request, **TOTAL)
                found += answer["Responses"].get(table, [])
                request = answer.get("UnprocessedKeys")
            return found

        return {
            "get": lambda n: c.get_item(TableName=table, Key=target, **TOTAL),
            "put": put,
            "update": update,
            "query100": lambda n: self.query("q100"),
            "query1000": lambda n: self.query("q1000"),
            "batch_write": batch_write,
            "batch_get": batch_get,
        }
