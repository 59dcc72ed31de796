"""Streams and ``dynorm migrate``: a key-version move reads as moves, and ``Meta.stream`` is migrated.

A consumer mirroring the table elsewhere must not delete and re-insert every item while ``dynorm
migrate`` rewrites their keys: the REMOVE at v1 and the INSERT at v2 of one item (one transaction,
the same revision token) are one ``moved`` change when they are in one batch, and each half is
recognised on its own when they are not (a move's two records often land in different shards).
"""

from __future__ import annotations

from typing import Any

import pytest

from dynorm import UnknownItem, backend, streams
from dynorm.migrations.executor import MigrateOptions
from dynorm.migrations.loader import load_migrations
from dynorm.migrations.operations import AlterStream
from tests.migproject import MODELS_SRC, TABLE_SRC, V1, V2, Project

pytestmark = pytest.mark.dynamodb_local_only("DynamoDB Streams: moto's stream is not DynamoDB's")

STREAM_TABLE = TABLE_SRC.replace("gsi_count = 1", "gsi_count = 1\n        stream = 'NEW_AND_OLD_IMAGES'")
N = 6


def migrated_v1(project: Project, table_src: str = STREAM_TABLE) -> Any:
    models = project.stage(table_src, MODELS_SRC.format(pkg=project.pkg, **V1))
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i}", maker="m1", size=i) for i in range(N)])
    return models


def to_v2(project: Project, **options: Any) -> Any:
    models = project.stage(STREAM_TABLE, MODELS_SRC.format(pkg=project.pkg, **V2))
    project.makemigrations()
    project.executor().migrate(MigrateOptions(**options))
    return models


def test_a_move_mode_rekey_reads_as_one_moved_change_per_item(project: Project) -> None:
    migrated_v1(project)
    reader = streams.StreamReader(project.table)
    models = to_v2(project)
    records = reader.poll()
    assert {r["eventName"] for r in records} >= {"INSERT", "REMOVE"}
    found = list(streams.changes(records, table=project.table))
    assert [c.kind for c in found] == ["moved"] * N
    for c in found:
        assert c.entity is models.Widget and c.old.widget_id == c.new.widget_id
        assert c.old.size == c.new.size and c.changed_fields == ()
        assert [r["eventName"] for r in c.records] in (["INSERT", "REMOVE"], ["REMOVE", "INSERT"])
        assert c.records[0]["dynamodb"]["Keys"] != c.records[1]["dynamodb"]["Keys"]
        assert {r["dynamodb"]["Keys"]["PK"]["S"][:3] for r in c.records} == {"v1#", "v2#"}
    assert sorted(c.new.widget_id for c in found) == [f"w{i}" for i in range(N)]
    # the ledger's records were in the batch, and are hidden
    ledger = [r for r in records if r["dynamodb"]["Keys"]["PK"]["S"].startswith("dynorm#")]
    assert ledger and all(not c.internal for c in found)
    assert list(streams.changes(records, table=project.table, moves="hide")) == []
    internal = [c for c in streams.changes(records, table=project.table, include_internal=True) if c.internal]
    assert len(internal) == len(ledger) and {c.entity for c in internal} == {UnknownItem}


def test_each_half_of_a_move_is_a_move_on_its_own(project: Project) -> None:
    """One record per batch, as when the REMOVE and the INSERT land in different shards."""
    migrated_v1(project)
    reader = streams.StreamReader(project.table)
    to_v2(project)
    records = [r for r in reader.poll() if not r["dynamodb"]["Keys"]["PK"]["S"].startswith("dynorm#")]
    alone = [c for r in records for c in streams.changes([r], table=project.table)]
    assert len(alone) == 2 * N and {c.kind for c in alone} == {"moved"}
    inserts = [c for c in alone if c.record["eventName"] == "INSERT"]
    removes = [c for c in alone if c.record["eventName"] == "REMOVE"]
    assert all(c.old is None and c.new is not None for c in inserts)
    assert all(c.new is None and c.old is not None for c in removes)


def test_the_copies_of_a_copy_mode_rekey_read_as_moves(project: Project) -> None:
    migrated_v1(project)
    reader = streams.StreamReader(project.table)
    to_v2(project, mode="copy")
    copied = reader.changes()
    assert [c.kind for c in copied] == ["moved"] * N and all(c.old is None for c in copied)
    assert all(c.record["eventName"] == "INSERT" for c in copied)


def test_makemigrations_turns_the_stream_on_with_update_table(project: Project) -> None:
    migrated_v1(project, table_src=TABLE_SRC)
    assert "StreamSpecification" not in (project.table.describe() or {})
    project.stage(STREAM_TABLE, MODELS_SRC.format(pkg=project.pkg, **V1))
    result = project.makemigrations()
    ops = load_migrations(project.migrations)[-1].operations
    assert result.name.startswith("0002") and [type(op) for op in ops] == [AlterStream]
    assert ops[0].deconstruct() == {"table": "migshop", "stream": "NEW_AND_OLD_IMAGES"}
    with backend.capture() as c:
        project.executor().migrate(MigrateOptions())
    assert [r.params.get("StreamSpecification") for r in c.requests if r.operation == "UpdateTable"] == [
        {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}]
    assert project.table.describe()["StreamSpecification"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    assert project.makemigrations(check=True).operations == []


def test_a_read_versions_move_reads_as_moved_then_the_write_as_updated(project: Project) -> None:
    """An application write to an item read at an older key version moves it first (Put at v2 and
    Delete at v1 in one transaction), then writes: one ``moved`` and one ``updated``."""
    migrated_v1(project)
    models = project.stage(STREAM_TABLE, MODELS_SRC.format(pkg=project.pkg, **{**V2, "read_versions": ["v2", "v1"]}))
    project.makemigrations()
    w = models.Widget.objects.get(widget_id="w1")
    assert w._state.fallback == "v1"
    reader = streams.StreamReader(project.table)
    w.update(counter=5)
    records = reader.poll()
    moved, updated = streams.changes(records, table=project.table)
    assert (moved.kind, moved.old.counter, moved.new.counter, len(moved.records)) == ("moved", 0, 0, 2)
    assert updated.kind == "updated" and updated.changed_fields == ("counter", "version")
    alone = [c.kind for r in records for c in streams.changes([r], table=project.table)]
    assert sorted(alone) == ["moved", "moved", "updated"]  # the INSERT and the REMOVE, each on its own


def _mirror(batches: list[list[dict[str, Any]]], table: Any, **options: Any) -> dict[str, Any]:
    """A consumer keyed by entity fields, applying the changes in stream order."""
    mirror: dict[str, Any] = {}
    for batch in batches:
        for c in streams.changes(batch, table=table, **options):
            if c.entity is UnknownItem:
                continue
            if c.kind == "deleted":
                mirror.pop(c.old.widget_id, None)
            elif c.new is not None:
                mirror[c.new.widget_id] = c.new.size
    return mirror


@pytest.mark.parametrize("how", ["queryset", "bulk_delete_instance", "bulk_delete_key", "transaction_key",
                                 "atransaction_key"])
def test_a_delete_by_key_of_an_item_at_an_older_version_reads_as_deleted(project: Project, how: str) -> None:
    """During a ``read_versions`` rollout a delete that finds the item at v1 moves it first (as an
    instance's delete() does): the stream shows a move, then a delete at v2, never a lone REMOVE at
    v1 (which reads as a move's old half): a mirror applying the changes in stream order, in one
    batch or one record per batch, ends equal to the table."""
    import asyncio

    import dynorm

    migrated_v1(project)
    before = streams.StreamReader(project.table, start="TRIM_HORIZON").poll()
    models = project.stage(STREAM_TABLE, MODELS_SRC.format(pkg=project.pkg, **{**V2, "read_versions": ["v2", "v1"]}))
    project.makemigrations()
    W = models.Widget
    reader = streams.StreamReader(project.table)
    if how == "queryset":
        assert W.objects.filter(widget_id="w1").delete() == 1
    elif how == "bulk_delete_instance":
        W.objects.bulk_delete([W.objects.get(widget_id="w1")])
    elif how == "bulk_delete_key":
        W.objects.bulk_delete([{"widget_id": "w1"}])
    elif how == "transaction_key":
        with dynorm.transaction() as tx:
            tx.delete(W, {"widget_id": "w1"})
    else:
        async def run() -> None:
            async with dynorm.atransaction() as tx:
                tx.delete(W, {"widget_id": "w1"})
        asyncio.run(run())
    records = reader.poll()
    table = {w.widget_id: w.size for w in W.objects.scan()}
    assert "w1" not in table and len(table) == N - 1
    kinds = [c.kind for c in streams.changes(records, table=project.table)]
    assert kinds[-1] == "deleted" and "moved" in kinds
    assert _mirror([before, records], project.table) == table
    assert _mirror([before, *[[r] for r in records]], project.table) == table
    assert _mirror([before, *[[r] for r in records]], project.table, moves="hide") == table


def test_an_item_deleted_then_restored_from_a_raw_backup_in_one_batch_reads_as_created(project: Project) -> None:
    """A copy-mode copy scanned into a backup keeps its ``_dynorm_rev_src``: put back after the
    application deleted it, its INSERT is the copy's INSERT byte for byte. With its REMOVE in the same
    batch it is a create (the limit across batches is in docs/streams.md)."""
    migrated_v1(project)
    models = to_v2(project, mode="copy")
    backup = backend.call("GetItem", {"TableName": project.table.table_name(), "ConsistentRead": True,
                                      "Key": {"PK": {"S": "v2#W#w0"}, "SK": {"S": "METADATA"}}})["Item"]
    reader = streams.StreamReader(project.table)
    models.Widget.objects.get(widget_id="w0").delete()
    backend.call("PutItem", {"TableName": project.table.table_name(), "Item": backup})
    records = reader.poll()
    assert [c.kind for c in streams.changes(records, table=project.table)] == ["deleted", "created"]
    assert _mirror([records], project.table, moves="hide") == {"w0": 0}


def test_the_old_half_of_a_move_whose_image_no_longer_decodes_is_still_a_move(project: Project) -> None:
    """A transform that changed a field's stored type: the REMOVE's old image does not decode with
    the current models, but its key fields tell it is stored at an older key version."""
    migrated_v1(project)
    reader = streams.StreamReader(project.table)
    to_v2(project)
    records = [r for r in reader.poll() if not r["dynamodb"]["Keys"]["PK"]["S"].startswith("dynorm#")]
    for r in records:
        if r["eventName"] == "REMOVE":
            r["dynamodb"]["OldImage"]["size"] = {"S": "three"}
    alone = [c for r in records for c in streams.changes([r], table=project.table)]
    removes = [c for c in alone if c.record["eventName"] == "REMOVE"]
    assert len(removes) == N and {c.kind for c in alone} == {"moved"}
    assert all(c.old is None and c.unreadable and c.unreadable[0].attribute == "size" for c in removes)
