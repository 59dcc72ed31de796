"""dynorm.streams on DynamoDB Local's real stream: every write kind becomes one typed change.

Each test opens a :class:`StreamReader` at ``LATEST`` after the tables are reset, writes through
dynorm (or raw requests, for items no model declares and for dynorm's own items), then reads the
records DynamoDB Local's stream holds and checks the changes ``dynorm.streams.changes`` makes of them.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import functools
import json
from typing import Any

import pytest

import dynorm
from dynorm import UnknownItem, backend, streams
from tests.models import Feed, Like, Post

pytestmark = pytest.mark.dynamodb_local_only("DynamoDB Streams: moto's stream is not DynamoDB's")


@pytest.fixture
def reader(dynorm_tables: Any, dynamodb_local: str) -> streams.StreamReader:
    return streams.StreamReader(Feed)


def kinds(found: list[streams.Change]) -> list[tuple[str, str, Any]]:
    return [(c.kind, c.entity.__name__, (c.new or c.old).key if c.entity is not UnknownItem else None)
            for c in found]


def test_create_update_delete_are_typed_changes_with_old_new_and_changed_fields(reader: streams.StreamReader) -> None:
    post = Post.objects.create(post_id="p1", author="ann", title="Hello")
    post.title = "Hello, world"
    post.likes = 3
    post.save()
    post.delete()
    found = reader.changes()
    assert [c.kind for c in found] == ["created", "updated", "deleted"]
    created, updated, deleted = found
    assert created.entity is Post and created.old is None and isinstance(created.new, Post)
    assert created.new.title == "Hello" and created.new.version == 1
    assert set(created.changed_fields) >= {"post_id", "author", "title", "likes", "version"}
    assert updated.old.title == "Hello" and updated.new.title == "Hello, world"
    assert updated.changed_fields == ("title", "likes", "version")
    assert deleted.new is None and deleted.old.title == "Hello, world" and deleted.changed_fields
    rev = Feed._meta.revision_attribute
    assert updated.revision == updated.record["dynamodb"]["NewImage"][rev]["S"] != created.revision
    assert deleted.revision == updated.revision
    assert [c.sequence_number for c in found] == [c.record["dynamodb"]["SequenceNumber"] for c in found]


def test_update_expression_transaction_and_batch_writes(reader: streams.StreamReader) -> None:
    post = Post.objects.create(post_id="p1", author="ann", title="t")
    post.update(likes=dynorm.F("likes") + 2)
    with dynorm.transaction() as tx:
        tx.create(Like(post_id="p1", user_id="u1"))
        tx.create(Post(post_id="p2", author="bob", title="t2"))
    Like.objects.bulk_create([Like(post_id="p1", user_id=f"u{i}") for i in range(2, 5)])
    Like.objects.bulk_delete([Like(post_id="p1", user_id="u2")])
    found = reader.changes()
    assert kinds(found) == [
        ("created", "Post", {"post_id": "p1"}),
        ("updated", "Post", {"post_id": "p1"}),
        ("created", "Like", {"post_id": "p1", "user_id": "u1"}),
        ("created", "Post", {"post_id": "p2"}),
        ("created", "Like", {"post_id": "p1", "user_id": "u2"}),
        ("created", "Like", {"post_id": "p1", "user_id": "u3"}),
        ("created", "Like", {"post_id": "p1", "user_id": "u4"}),
        ("deleted", "Like", {"post_id": "p1", "user_id": "u2"}),
    ]
    assert found[1].changed_fields == ("likes", "version") and found[1].new.likes == 2


def raw_put(item: dict[str, Any]) -> None:
    backend.call("PutItem", {"TableName": Feed.table_name(), "Item": item})


def test_unknown_types_are_unknown_items_and_dynorm_items_are_hidden(reader: streams.StreamReader) -> None:
    raw_put({"PK": {"S": "X#1"}, "SK": {"S": "A"}, "entityType": {"S": "AUDIT"}, "n": {"N": "1"}})
    # a unique-constraint sentinel and a migration-ledger item, in the shapes dynorm writes them
    raw_put({"PK": {"S": "dynorm#unique#POST#title#Hello"}, "SK": {"S": "dynorm#unique"},
             "entityType": {"S": "dynorm#unique"}})
    raw_put({"PK": {"S": "dynorm#migrations"}, "SK": {"S": "keyversions"}, "entities": {"S": "{}"}})
    Post.objects.create(post_id="p1", author="ann", title="t")
    found = reader.changes()
    assert [(c.kind, c.entity) for c in found] == [("created", UnknownItem), ("created", Post)]
    assert found[0].new.entity_type == "AUDIT" and found[0].new.attributes["n"] == 1
    assert found[0].changed_fields == ("PK", "SK", "entityType", "n")
    assert reader.changes() == []  # nothing new since


def test_include_internal_shows_dynorm_items(reader: streams.StreamReader) -> None:
    raw_put({"PK": {"S": "dynorm#unique#POST#title#Hello"}, "SK": {"S": "dynorm#unique"},
             "entityType": {"S": "dynorm#unique"}})
    raw_put({"PK": {"S": "dynorm#migrations"}, "SK": {"S": "lock"}})
    found = reader.changes(include_internal=True)
    assert [(c.kind, c.entity, c.internal) for c in found] == [("created", UnknownItem, True)] * 2


def test_an_unreadable_item_is_a_change_not_an_error(reader: streams.StreamReader) -> None:
    raw_put({"PK": {"S": "v1#POST#p9"}, "SK": {"S": "METADATA"}, "entityType": {"S": "POST"},
             "post_id": {"S": "p9"}, "likes": {"S": "ten"}})
    Post.objects.create(post_id="p1", author="ann", title="t")
    bad, good = reader.changes()
    assert bad.entity is Post and bad.new is None and bad.unreadable[0].attribute == "likes"
    assert good.new.post_id == "p1"


def test_a_ttl_deletion_is_a_deleted_change_marked_expired(reader: streams.StreamReader) -> None:
    """DynamoDB Local deletes expired items lazily (not within a test): the REMOVE of a real delete
    is given the userIdentity AWS documents on the records of TTL deletions."""
    past = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    Post.objects.create(post_id="p1", author="ann", title="t", expires_at=past)
    Post.objects.get(post_id="p1").delete()
    records = reader.poll()
    records[1]["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    created, deleted = streams.changes(records)
    assert (deleted.kind, deleted.expired, deleted.old.post_id) == ("deleted", True, "p1")
    assert not created.expired


def lambda_event(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Records read from the stream, shaped as AWS Lambda passes them."""
    out = []
    for r in records:
        body = dict(r["dynamodb"])
        body["ApproximateCreationDateTime"] = body["ApproximateCreationDateTime"].timestamp()
        out.append({**r, "dynamodb": body, "eventSource": "aws:dynamodb"})
    return {"Records": out}


def lambda_json_event(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The event as AWS Lambda really delivers it: JSON, where a binary value is base64 text."""
    def default(value: Any) -> Any:
        if isinstance(value, (bytes, bytearray)):
            return base64.b64encode(value).decode()
        return value.timestamp() if isinstance(value, datetime.datetime) else str(value)
    return json.loads(json.dumps({"Records": records}, default=default))  # type: ignore[no-any-return]


def test_binary_values_of_a_lambda_json_event_are_bytes_as_from_get_records(reader: streams.StreamReader) -> None:
    item = {"PK": {"S": "X#1"}, "SK": {"S": "A"}, "entityType": {"S": "AUDIT"}, "blob": {"B": b"\x00\xff"},
            "blobs": {"BS": [b"\x01", b"\x02"]},
            "nested": {"M": {"b": {"B": b"\x03"}, "l": {"L": [{"B": b"\x04"}, {"S": "AP8="}]}}}}
    raw_put(item)
    records = reader.poll()
    want = {"blob": b"\x00\xff", "blobs": {b"\x01", b"\x02"}, "nested": {"b": b"\x03", "l": [b"\x04", "AP8="]}}
    for batch in (records, lambda_json_event(records)):
        (c,) = streams.changes(batch, table=Feed)
        assert {k: c.new.attributes[k] for k in want} == want
        assert c.new.raw["blob"] == {"B": b"\x00\xff"}
        assert {k: c.to_dict()["new"][k] for k in want} == want


def test_a_malformed_record_is_an_unreadable_change_not_a_lost_batch(reader: streams.StreamReader) -> None:
    for i in range(4):
        Post.objects.create(post_id=f"p{i}", author="ann", title="t")
    records = reader.poll()
    rev = Feed._meta.revision_attribute
    records[0]["dynamodb"]["NewImage"][rev] = "bare"                      # not {"S": ...}
    records[1]["dynamodb"]["NewImage"] = [records[1]["dynamodb"]["NewImage"]]  # not a map
    records[2]["dynamodb"]["NewImage"] = {"PK": {"S": "X#2"}, "SK": {"S": "A"}, "entityType": {"S": "AUDIT"},
                                          "n": {"N": "abc"}}                 # an unknown type, a bad number
    found = list(streams.changes(records, table=Feed))
    assert [c.kind for c in found] == ["created"] * 4
    assert all(c.entity is UnknownItem and c.new is None and len(c.unreadable) == 1 for c in found[:3])
    assert found[3].new.post_id == "p3" and not found[3].unreadable
    assert "cannot be read" in str(found[0].unreadable[0])


def test_the_handler_reports_the_first_failing_record_and_every_one_after_it(reader: streams.StreamReader) -> None:
    for i in range(4):
        Post.objects.create(post_id=f"p{i}", author="ann", title="t")
    event = lambda_event(reader.poll())
    seen: list[str] = []

    @streams.handler
    def on_change(change: streams.Change) -> None:
        if change.new.post_id == "p2":
            raise RuntimeError("downstream is down")
        seen.append(change.new.post_id)

    result = on_change(event, None)
    seqs = [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]
    assert seen == ["p0", "p1"]
    assert result == {"batchItemFailures": [{"itemIdentifier": s} for s in seqs[2:]]}
    assert streams.handler(lambda change: None)(event) == {"batchItemFailures": []}


def test_an_async_handler_runs_each_change_in_order(reader: streams.StreamReader) -> None:
    for i in range(3):
        Post.objects.create(post_id=f"p{i}", author="ann", title="t")
    event = lambda_event(reader.poll())
    seen: list[str] = []

    @streams.handler(table=Feed)
    async def on_change(change: streams.Change) -> None:
        await asyncio.sleep(0)
        if change.new.post_id == "p1":
            raise RuntimeError("no")
        seen.append(change.new.post_id)

    assert on_change.is_async
    result = on_change(event)
    assert seen == ["p0"]
    assert [f["itemIdentifier"] for f in result["batchItemFailures"]] == [
        r["dynamodb"]["SequenceNumber"] for r in event["Records"][1:]]
    assert asyncio.run(on_change.ahandle(event))["batchItemFailures"] == result["batchItemFailures"]


def test_an_async_callable_object_or_a_function_returning_an_awaitable_is_awaited(
        reader: streams.StreamReader) -> None:
    """Never report success for a change whose handling did not run: an object with ``async def
    __call__`` and a plain function returning a coroutine are awaited, and their failures reported."""
    for i in range(3):
        Post.objects.create(post_id=f"p{i}", author="ann", title="t")
    event = lambda_event(reader.poll())
    seqs = [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]
    seen: list[str] = []

    async def index(change: streams.Change) -> None:
        await asyncio.sleep(0)
        if change.new.post_id == "p1":
            raise RuntimeError("index down")
        seen.append(change.new.post_id)

    class Sink:
        async def __call__(self, change: streams.Change) -> None:
            await index(change)

    sink = streams.handler(Sink())
    assert sink.is_async
    assert sink(event) == {"batchItemFailures": [{"itemIdentifier": s} for s in seqs[1:]]} and seen == ["p0"]
    seen.clear()
    returning = streams.handler(lambda change: index(change))
    assert not returning.is_async
    assert returning(event) == {"batchItemFailures": [{"itemIdentifier": s} for s in seqs[1:]]} and seen == ["p0"]
    seen.clear()
    assert streams.handler(functools.partial(index))(event)["batchItemFailures"] and seen == ["p0"]


def test_a_rewrite_that_keeps_the_revision_is_a_move_only_when_it_changed_keys_alone(
        reader: streams.StreamReader) -> None:
    """An in-place rekey rewrites index keys and keeps the token: ``moved``; another writer that keeps
    the token while changing an attribute made an ``updated``."""
    Post.objects.create(post_id="p1", author="ann", title="t")
    key = {"PK": {"S": "v1#POST#p1"}, "SK": {"S": "METADATA"}}
    for expr, values in (("SET GSI1PK = :v", {":v": {"S": "v2#AUTHOR#ann"}}),
                         ("SET title = :v", {":v": {"S": "raw"}}), ("SET note = :v", {":v": {"S": "x"}})):
        backend.call("UpdateItem", {"TableName": Feed.table_name(), "Key": key, "UpdateExpression": expr,
                                    "ExpressionAttributeValues": values})
    found = reader.changes()
    assert [(c.kind, c.changed_fields) for c in found] == [
        ("created", ("post_id", "author", "title", "likes", "version")), ("moved", ()), ("updated", ("title",)),
        ("updated", ())]


def test_a_reader_opened_on_an_empty_shard_sees_the_first_write_after_others_tables_writes(
        dynorm_tables: Any) -> None:
    """DynamoDB Local gives a LATEST iterator on an empty shard the shard's first sequence number, and
    writes to other tables move the numbers on: GetRecords then refuses it (TrimmedDataAccessException).
    The reader takes it again at TRIM_HORIZON: the shard held nothing when the reader opened."""
    from tests.models import Store

    Feed.delete_table()
    Feed.create_table()  # a new stream: its one shard is empty
    reader = streams.StreamReader(Feed)
    Store.objects.create(store_id="s1", name="elsewhere")  # another table's write
    Post.objects.create(post_id="p1", author="ann", title="t")
    assert [(c.kind, c.new.post_id) for c in reader.changes()] == [("created", "p1")]
    assert reader.changes() == []
