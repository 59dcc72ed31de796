"""A template GSI whose partition key leaves out ``{version}`` during a key-version rollout.

Its key text is the same at every version (``M#m``), so the copies of one item under two key
versions (a copy-mode rekey, the expand step of a rollout) sit side by side in one partition of
it, next to items under a version this app does not read. Reads through it used to return every
copy (the dedupe of version copies applied only to multi-attribute GSIs): each logical item is
now returned once, as ``get()`` would, by filter(), count(), collection(using=) and the async twins.
"""

from __future__ import annotations

import asyncio
from typing import Any

import dynorm
from dynorm import Entity, Index, Table, fields
from dynorm.migrations.executor import MigrateOptions
from tests.migproject import TABLE_SRC, Project, widgets


class BlindRolls(Table):
    class Meta:
        table_name = "blind_rolls"
        gsi_count = 1


class BlindRoll(Entity):
    roll_id = fields.String()
    maker = fields.String(null=True)
    size = fields.Integer()  # every item has one: the index holds every item of a maker (no sparse omission)
    note = fields.String(null=True)

    class Meta:
        table = BlindRolls
        entity_type = "ROLL"
        key_version = "v3"
        read_versions = ["v3", "v2"]
        pk = "{version}#R#{roll_id}"
        sk = "METADATA"
        indexes = {"by_maker": Index("GSI1", pk="M#{maker}", sk="S#{size:04d}")}


def _put(version: str, roll_id: str, size: int, note: str) -> None:
    dynorm.backend.call("PutItem", {"TableName": BlindRolls.table_name(), "Item": {
        "PK": {"S": f"{version}#R#{roll_id}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
        "GSI1PK": {"S": "M#m"}, "GSI1SK": {"S": f"S#{size:04d}"},
        "roll_id": {"S": roll_id}, "maker": {"S": "m"}, "size": {"N": str(size)}, "note": {"S": note}}})


def _stage_rollout() -> None:
    _put("v3", "r1", 1, "current")
    _put("v2", "r1", 1, "stale")      # r1's copy at v2: shadowed by the current item
    _put("v1", "r2", 2, "ancient")    # a version this app does not read
    _put("v2", "r3", 3, "old-only")   # only at v2: read, marked as read at v2


def test_reads_through_a_version_blind_template_gsi_give_each_item_once_as_get_would() -> None:
    _stage_rollout()
    qs = BlindRoll.objects.filter(maker="m")
    assert [(r.roll_id, r.note) for r in qs] == [("r1", "current"), ("r3", "old-only")]  # was r1 twice, r2, r3
    assert qs.count() == 2 and qs.exists()
    assert [r.roll_id for r in qs.order_by("-size")] == ["r3", "r1"]
    assert qs.first().note == "current"  # type: ignore[union-attr]
    got = [(r.roll_id, r.note) for r in BlindRoll.objects.collection(using="by_maker", maker="m")]
    assert got == [("r1", "current"), ("r3", "old-only")]
    assert {r.roll_id: r.note for r in qs} == {r: BlindRoll.objects.get(roll_id=r).note for r in ("r1", "r3")}
    fresh = BlindRoll.objects.filter(maker="m")  # qs holds its results (as Django's): count() reads none
    with dynorm.capture() as cap:
        assert fresh.count() == 2
    assert cap.requests[0].params == fresh.explain(count=True).params  # explain shows what count() sends


def test_a_write_on_an_item_read_at_an_older_version_through_it_moves_the_item() -> None:
    _stage_rollout()
    r3 = next(r for r in BlindRoll.objects.filter(maker="m") if r.roll_id == "r3")
    r3.note = "saved"
    r3.save()
    assert BlindRoll.objects.get(roll_id="r3").note == "saved"
    keys = sorted(i["PK"]["S"] for i in dynorm.backend.call("Scan", {"TableName": BlindRolls.table_name()})["Items"]
                  if i["roll_id"]["S"] == "r3")
    assert keys == ["v3#R#r3"]  # moved, not written beside its v2 copy
    assert [(r.roll_id, r.note) for r in BlindRoll.objects.filter(maker="m")] == [("r1", "current"), ("r3", "saved")]


def test_async_reads_through_it_give_each_item_once() -> None:
    _stage_rollout()

    async def run() -> tuple[list[str], int]:
        qs = BlindRoll.objects.filter(maker="m")
        return [r.roll_id async for r in qs], await qs.acount()

    assert asyncio.run(run()) == (["r1", "r3"], 2)


MODELS = '''
from dynorm import Entity, Index, fields
from {pkg}.tables import MigShop

class Widget(Entity):
    widget_id = fields.String()
    maker = fields.String()
    size = fields.Integer(default=0)

    class Meta:
        table = MigShop
        entity_type = "WIDGET"
        key_version = "{version}"
        pk = "{{version}}#W#{{widget_id}}"
        sk = "METADATA"
        indexes = {{"by_maker": Index("GSI1", pk="M#{{maker}}", sk="S#{{size:04d}}")}}
'''

def test_copy_mode_rekey_does_not_duplicate_results_on_a_version_blind_template_gsi(project: Project) -> None:
    models: Any = project.stage(TABLE_SRC, MODELS.format(pkg=project.pkg, version="v1"))
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i}", maker="m", size=i) for i in range(4)])
    models = project.stage(TABLE_SRC, MODELS.format(pkg=project.pkg, version="v2"))
    project.makemigrations()
    project.executor().migrate(MigrateOptions(mode="copy"))
    assert len(widgets(project.table)) == 8  # both copies stored, as documented for copy mode
    assert [w.widget_id for w in models.Widget.objects.filter(maker="m")] == ["w0", "w1", "w2", "w3"]
    assert models.Widget.objects.filter(maker="m").count() == 4
