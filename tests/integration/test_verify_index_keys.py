"""``dynorm migrate --verify`` on a rekey that keeps its key version (index keys only), on DynamoDB Local.

Counting by key version cannot see an item an old process wrote after such a migration (it writes
the same version), so ``--verify`` renders every item's index keys under the migration's new layout
and compares them with the stored ones.
"""

from __future__ import annotations

import datetime
import json
import zlib
from typing import Any

import pytest
from click.testing import CliRunner

from dynorm import backend
from dynorm.cli import cli
from tests.migproject import GSIS_TABLES, Project, scan_all, stage_indexed, widgets

GSI1 = {"GSI1": ("GSI1PK", "GSI1SK")}
N = 12


def _cli(project: Project, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--config", str(project.config()), *args])


def _run(project: Project, *args: str) -> str:
    result = _cli(project, *args)
    assert result.exit_code == 0, result.output
    return str(result.output)


def _bucket(widget_id: str, n: int) -> int:
    return zlib.crc32(widget_id.encode()) % n


def _migrations(project: Project) -> list[str]:
    return sorted(p.stem for p in (project.dir / "migrations").glob("0*.py"))


def test_verify_finds_an_item_written_with_the_old_shard_count_after_an_in_place_rekey(
        dynamodb_local: str, project: Project) -> None:
    """Migrate ``shards=4`` to ``shards=7`` (same key version), then write an item with the old layout's
    bucket raw, as a process still on the old declaration would: ``--verify`` exits 1 and names it; the
    re-run of the rewrite the message gives (``--fake`` back, then forward) repairs it and ``--verify`` is
    clean again."""
    models = stage_indexed(project, GSI1, '{"by_maker": Index("GSI1", pk="M#{maker}", sk="{size}", shards=4)}')
    _run(project, "makemigrations")
    _run(project, "migrate")
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i:02d}", maker=f"m{i % 3}", size=i)
                                       for i in range(N)])
    stage_indexed(project, GSI1, '{"by_maker": Index("GSI1", pk="M#{maker}", sk="{size}", shards=7)}')
    assert "rekey WIDGET" in _run(project, "makemigrations")
    _run(project, "migrate")
    first, second = _migrations(project)

    clean = _run(project, "migrate", "--verify", second)
    assert f"0 of {N} item(s) differ" in clean and "the counts and the index keys match" in clean

    # an old process writes w99 with the bucket of 4 shards (not the one of 7)
    wid = next(f"w9{i}" for i in range(10) if _bucket(f"w9{i}", 4) != _bucket(f"w9{i}", 7))
    item = dict(next(i for i in widgets(project.table) if i["widget_id"]["S"] == "w00"))
    item.update({"PK": {"S": f"W#{wid}"}, "widget_id": {"S": wid}, "maker": {"S": "m1"},
                 "GSI1PK": {"S": f"M#m1#{_bucket(wid, 4)}"}})
    backend.call("PutItem", {"TableName": project.table.table_name(), "Item": item})

    result = _cli(project, "migrate", "--verify", second)
    assert result.exit_code == 1, result.output
    assert f"1 of {N + 1} item(s) differ" in result.output and f'"PK": "W#{wid}"' in result.output
    assert f"dynorm migrate {first} --fake" in result.output and f"dynorm migrate {second}" in result.output
    as_json = _cli(project, "migrate", "--verify", second, "--json")
    assert as_json.exit_code == 1
    row = json.loads(as_json.output[:as_json.output.rindex("}") + 1])["entities"][0]
    assert (row["index_keys_checked"], row["stale_index_keys"], row["ok"]) == (N + 1, 1, False)
    assert row["stale_examples"] == [{"PK": f"W#{wid}", "SK": "METADATA"}]

    # the way the message gives: record the migration as not applied, then run its rewrite again
    _run(project, "migrate", first, "--fake")
    _run(project, "migrate", second)
    assert _run(project, "migrate", "--verify", second).count("differ") == 1
    fixed = next(i for i in widgets(project.table) if i["widget_id"]["S"] == wid)
    assert fixed["GSI1PK"] == {"S": f"M#m1#{_bucket(wid, 7)}"}


def test_verify_finds_items_with_an_old_index_or_a_stale_sort_key_after_an_index_change_in_place(
        dynamodb_local: str, project: Project) -> None:
    """The entity's index moves from GSI2 to GSI1 (same key version): an item written as the old code
    writes it (GSI2's keys, none for GSI1) differs, and so does one whose GSI1 sort key is not the one
    its ``size`` renders."""
    gsis = {**GSI1, "GSI2": ("GSI2PK", "GSI2SK")}
    models = stage_indexed(project, gsis, '{"by_size": Index("GSI2", pk="Z#{size}", sk="{maker}")}')
    _run(project, "makemigrations")
    _run(project, "migrate")
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i:02d}", maker="m", size=i) for i in range(N)])
    stage_indexed(project, gsis, '{"by_maker": Index("GSI1", pk="M#{maker}", sk="{size}")}')
    assert "rekey WIDGET" in _run(project, "makemigrations")
    _run(project, "migrate")
    name = _migrations(project)[-1]
    assert f"0 of {N} item(s) differ" in _run(project, "migrate", "--verify", name)

    stored = {i["widget_id"]["S"]: i for i in widgets(project.table)}
    table = project.table.table_name()
    base = {k: v for k, v in stored["w00"].items() if not k.startswith("GSI")}
    old = {**base, "PK": {"S": "W#old"}, "widget_id": {"S": "old"}, "GSI2PK": {"S": "Z#x"}, "GSI2SK": {"S": "m"}}
    stale_sk = {**stored["w05"], "PK": {"S": "W#stale"}, "widget_id": {"S": "stale"}, "size": {"N": "9"}}
    for item in (old, stale_sk):
        backend.call("PutItem", {"TableName": table, "Item": item})
    result = _cli(project, "migrate", "--verify", name)
    assert result.exit_code == 1, result.output
    assert f"2 of {N + 2} item(s) differ" in result.output
    assert '"PK": "W#old"' in result.output and '"PK": "W#stale"' in result.output


_VALUE_MODELS = '''
from dynorm import Entity, Index, fields
from {pkg}.tables import MigShop

class Reading(Entity):
    reading_id = fields.String()
    maker = fields.String()
    score = fields.Number(null=True)
    expires = fields.TTL(null=True)

    class Meta:
        table = MigShop
        entity_type = "READING"
        pk = "R#{{reading_id}}"
        sk = "METADATA"
        indexes = {{"by_maker": Index("GSI1", pk="M#{{maker}}", sk="{sk}", shards={shards})}}
'''


@pytest.mark.parametrize("sk, values", [
    ("{expires}", [{"expires": datetime.datetime(2030, 1, 1, h, tzinfo=datetime.timezone.utc)} for h in range(3)]),
    ("{score:.1f}", [{"score": v} for v in (0.35, 2.675, 0.125)]),
])
def test_a_rekey_renders_index_keys_from_stored_values_as_the_application_does(
        dynamodb_local: str, project: Project, sk: str, values: list[dict[str, Any]]) -> None:
    """The rekey reads each stored value as the application reads it (the field's own ``deserialize``):
    a TTL is a datetime (it rendered epoch seconds, ``P5091893456``), a non-integral Number the float
    (``{score:.1f}`` of 0.35 rendered ``0.4`` from a Decimal where the application renders ``0.3``). So
    the rewritten items' keys equal the keys the application renders from them, and ``--verify`` finds
    nothing on a healthy table (it blamed the items the application wrote)."""
    def stage(shards: int) -> Any:
        return project.stage(GSIS_TABLES.format(gsis=GSI1),
                             _VALUE_MODELS.format(pkg=project.pkg, sk=sk, shards=shards))

    models = stage(4)
    _run(project, "makemigrations")
    _run(project, "migrate")
    models.Reading.objects.bulk_create([models.Reading(reading_id=f"a{i}", maker="m", **v)
                                        for i, v in enumerate(values)])
    models = stage(7)
    _run(project, "makemigrations")
    _run(project, "migrate")  # rewrites the a* items' index keys
    models.Reading.objects.bulk_create([models.Reading(reading_id=f"b{i}", maker="m", **v)
                                        for i, v in enumerate(values)])
    stored = {i["reading_id"]["S"]: i for i in scan_all(project.table) if i.get("entityType") == {"S": "READING"}}
    assert len(stored) == 2 * len(values)
    for rid, raw in stored.items():
        rendered = models.Reading.objects.get(reading_id=rid).key_attributes()
        assert (raw["GSI1PK"]["S"], raw["GSI1SK"]["S"]) == (rendered["GSI1PK"], rendered["GSI1SK"]), rid
    assert f"0 of {2 * len(values)} item(s) differ" in _run(project, "migrate", "--verify", _migrations(project)[-1])


def test_verify_of_a_rekey_superseded_by_a_later_one_checks_no_index_keys(
        dynamodb_local: str, project: Project) -> None:
    """Shards 4 -> 7 (0002), then 7 -> 9 (0003): ``--verify 0002`` does not render the items' keys
    under 0002's layout (every item 0003 rewrote would look stale, and the repair the message gave
    would have put them back in 7 buckets where the code queries 9); it says to verify 0003."""
    def stage(shards: int) -> Any:
        indexes = '{"by_maker": Index("GSI1", pk="M#{maker}", sk="{size}", shards=COUNT)}'
        return stage_indexed(project, GSI1, indexes.replace("COUNT", str(shards)))

    models = stage(4)
    _run(project, "makemigrations")
    _run(project, "migrate")
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i:02d}", maker="m", size=i) for i in range(6)])
    for shards in (7, 9):
        stage(shards)
        _run(project, "makemigrations")
        _run(project, "migrate")
    _, second, third = _migrations(project)
    out = _run(project, "migrate", "--verify", second)
    assert f"index keys not checked: {third} rekeyed this entity since; verify {third}" in out
    assert "0 of 6 item(s) differ" in _run(project, "migrate", "--verify", third)


def test_the_repair_message_names_later_applied_migrations_to_record_again(
        private_dynamodb_local: str, project: Project) -> None:
    """(On a DynamoDB Local of its own: it adds a GSI with UpdateTable, whose backfill has stayed CREATING
    on a worker's shared server after the rest of the suite; see ``private_dynamodb_local``.)

    The repair ``--verify`` gives (``migrate <previous> --fake``, then ``migrate NAME``) un-records every
    later migration too: the message names them and how to record them as applied again (``--fake``),
    so a plain ``dynorm migrate`` afterwards does not run them a second time."""
    indexes = '{"by_maker": Index("GSI1", pk="M#{maker}", sk="{size}", shards=COUNT)}'
    models = stage_indexed(project, GSI1, indexes.replace("COUNT", "4"))
    _run(project, "makemigrations")
    _run(project, "migrate")
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i:02d}", maker="m", size=i) for i in range(4)])
    stage_indexed(project, GSI1, indexes.replace("COUNT", "7"))
    _run(project, "makemigrations")
    _run(project, "migrate")
    # a later migration that changes the table only (adds GSI2)
    stage_indexed(project, {**GSI1, "GSI2": ("GSI2PK", "GSI2SK")}, indexes.replace("COUNT", "7"))
    _run(project, "makemigrations")
    _run(project, "migrate")
    first, second, third = _migrations(project)
    wid = next(f"w9{i}" for i in range(10) if _bucket(f"w9{i}", 4) != _bucket(f"w9{i}", 7))
    item = dict(next(i for i in widgets(project.table) if i["widget_id"]["S"] == "w00"))
    item.update({"PK": {"S": f"W#{wid}"}, "widget_id": {"S": wid}, "GSI1PK": {"S": f"M#m#{_bucket(wid, 4)}"}})
    backend.call("PutItem", {"TableName": project.table.table_name(), "Item": item})
    result = _cli(project, "migrate", "--verify", second)
    assert result.exit_code == 1, result.output
    message = " ".join(result.output.split())
    assert f"un-records the later applied migration(s) {third}" in message and "`dynorm migrate --fake`" in message
