"""Migrations of write-sharded GSIs on DynamoDB Local, through the CLI as docs/querying.md names the steps.

``makemigrations`` writes a RekeyEntity when an index becomes sharded, when its ``shards`` or
``shard_by`` change, and when another index of a sharded entity changes; ``migrate`` rewrites
every item's index keys, bucket included. Each item is read back raw and its bucket checked against
CRC-32 of its primary-key text computed here; ``makemigrations --check`` is clean after each step.
"""

from __future__ import annotations

import zlib
from typing import Any

import pytest
from click.testing import CliRunner

import dynorm
from dynorm.cli import cli
from tests.migproject import Project, stage_indexed, widgets

GSI1 = {"GSI1": ("GSI1PK", "GSI1SK")}
GSI2 = {"GSI2": ("GSI2PK", "GSI2SK")}

N = 30


def _run(project: Project, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--config", str(project.config()), *args])
    assert result.exit_code == 0, result.output
    return str(result.output)


def _step(project: Project, gsis: dict[str, Any], indexes: str, *expected_ops: str) -> Any:
    """Stage the table's GSIs and the Widget's indexes, then ``dynorm makemigrations`` and ``dynorm migrate``
    as the docs say."""
    models = stage_indexed(project, gsis, indexes)
    made = _run(project, "makemigrations")
    for op in expected_ops:
        assert op in made, made
    _run(project, "migrate")
    assert "No changes detected" in _run(project, "makemigrations", "--check")
    return models


def _bucket(widget_id: str, n: int) -> int:
    """CRC-32 of the shard_by fields' key text (the primary key's one field, a plain string here), mod n."""
    return zlib.crc32(widget_id.encode()) % n


def _keys(project: Project, attr: str) -> dict[str, str | None]:
    return {i["widget_id"]["S"]: i.get(attr, {}).get("S") for i in widgets(project.table)}


def test_the_documented_way_to_change_a_shard_count(dynamodb_local: str, private_dynamodb_local: str,
                                                    project: Project) -> None:
    """On a DynamoDB Local of its own: step 2 adds a GSI with UpdateTable, whose backfill has stayed
    CREATING past 300 s on a worker's server after the rest of the suite ran there (tests/conftest.py)."""
    # an entity with an unsharded index, and items
    models = _step(project, GSI1, '{"by_maker": Index("GSI1", pk="M#{maker}", sk="{size}")}',
                   "create table migshop")
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i:02d}", maker=f"m{i % 3}", size=i)
                                       for i in range(N)])
    makers = {f"w{i:02d}": f"m{i % 3}" for i in range(N)}

    # 1. shard the existing index: a rekey appends every item's bucket
    models = _step(project, GSI1,
                   '{"by_maker": Index("GSI1", pk="M#{maker}", sk="{size}", shards=4)}', "rekey WIDGET")
    assert _keys(project, "GSI1PK") == {w: f"M#{m}#{_bucket(w, 4)}" for w, m in makers.items()}
    with dynorm.capture() as c:
        assert sorted(w.widget_id for w in models.Widget.objects.filter(maker="m1")) == sorted(
            w for w, m in makers.items() if m == "m1")
    assert c.operations == ["Query"] * 4

    # 2. the new count on a new GSI, filled by the migration (the old index keeps serving meanwhile)
    models = _step(project, {**GSI1, **GSI2},
                   '{"by_maker": Index("GSI1", pk="M#{maker}", sk="{size}", shards=4), '
                   '"by_maker8": Index("GSI2", pk="M#{maker}", sk="{size}", shards=8)}',
                   "GSI2", "rekey WIDGET")
    assert _keys(project, "GSI2PK") == {w: f"M#{m}#{_bucket(w, 8)}" for w, m in makers.items()}
    assert _keys(project, "GSI1PK") == {w: f"M#{m}#{_bucket(w, 4)}" for w, m in makers.items()}

    # 3. switch the reads to the new index
    with dynorm.capture() as c:
        got = [w.size for w in models.Widget.objects.using("by_maker8").filter(maker="m2")]
    assert got == sorted(i for i in range(N) if i % 3 == 2) and c.operations == ["Query"] * 8

    # 4. drop the old index: the entity stops writing GSI1's keys and the table drops GSI1
    models = _step(project, GSI2,
                   '{"by_maker8": Index("GSI2", pk="M#{maker}", sk="{size}", shards=8)}', "drop GSI(s) GSI1")
    assert "GSI1" not in [g["IndexName"] for g in project.table.describe().get("GlobalSecondaryIndexes", [])]
    models.Widget.objects.create(widget_id="w99", maker="m2", size=99)
    assert _keys(project, "GSI1PK")["w99"] is None and _keys(project, "GSI2PK")["w99"] == f"M#m2#{_bucket('w99', 8)}"
    assert [w.size for w in models.Widget.objects.filter(maker="m2")][-1] == 99


@pytest.mark.parametrize("change, indexes, attr, n", [
    ("shards", '{"by_maker": Index("GSI1", pk="M#{maker}", sk="{size}", shards=7)}', "GSI1PK", 7),
    ("another index", '{"by_maker": Index("GSI1", pk="M#{maker}", sk="{size}", shards=4), '
                      '"by_size": Index("GSI2", pk="Z#{size}", sk="{maker}")}', "GSI2PK", 4),
])
def test_a_change_of_a_sharded_entitys_indexes_rekeys_every_item_in_place(
        dynamodb_local: str, project: Project, change: str, indexes: str, attr: str, n: int) -> None:
    models = _step(project, {**GSI1, **GSI2},
                   '{"by_maker": Index("GSI1", pk="M#{maker}", sk="{size}", shards=4)}', "create table migshop")
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i:02d}", maker=f"m{i % 3}", size=i)
                                       for i in range(N)])
    makers = {f"w{i:02d}": f"m{i % 3}" for i in range(N)}
    models = _step(project, {**GSI1, **GSI2}, indexes, "rekey WIDGET")
    assert _keys(project, "GSI1PK") == {w: f"M#{m}#{_bucket(w, n)}" for w, m in makers.items()}
    if change == "another index":
        by_size = models.Widget._meta.indexes["by_size"].pk
        assert _keys(project, attr) == {f"w{i:02d}": by_size.fill({"size": i}, "v1") for i in range(N)}
    got = sorted(w.widget_id for w in models.Widget.objects.using("by_maker").filter(maker="m0"))
    assert got == sorted(w for w, m in makers.items() if m == "m0")
