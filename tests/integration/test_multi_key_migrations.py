"""Issue 13: an access pattern moves from a template GSI to a multi-attribute GSI without rewriting items.

Step 2 adds the multi-attribute GSI (DynamoDB backfills it from the attributes the items hold
already): makemigrations emits only SyncIndexes. Step 3 drops the old GSI and the entity stops
writing its key attributes: DropIndexes, again no item rewritten.
"""

from __future__ import annotations

import dynorm
from dynorm.migrations.executor import MigrateOptions
from tests.migproject import BY_MAKER_GSI, BY_MAKER_MULTI, BY_MAKER_TEMPLATE, Project, stage_indexed, widgets


def test_moving_a_pattern_to_a_multi_attribute_gsi_rewrites_no_item(private_dynamodb_local: str,
                                                                   project: Project) -> None:
    models = stage_indexed(project, {"GSI1": ("GSI1PK", "GSI1SK")}, "{'by_maker': " + BY_MAKER_TEMPLATE + "}")
    assert project.makemigrations().name == "0001_initial"
    project.executor().migrate(MigrateOptions())
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i:03d}", maker=f"m{i % 3}", size=i % 20)
                                       for i in range(120)])
    before = {i["widget_id"]["S"]: i for i in widgets(project.table)}
    assert all("GSI1PK" in i for i in before.values())

    # step 2: the pattern moves onto ByMaker; the old index keeps being written meanwhile
    models = stage_indexed(project, {"GSI1": ("GSI1PK", "GSI1SK"), "ByMaker": BY_MAKER_GSI},
                    "{'by_maker': " + BY_MAKER_MULTI + ", 'by_maker_old': " + BY_MAKER_TEMPLATE + "}")
    result = project.makemigrations()
    assert "SyncIndexes" in result.source and "ByMaker" in result.source
    assert "RekeyEntity" not in result.source and "CreateEntity" not in result.source
    with dynorm.capture() as cap:
        report = project.executor().migrate(MigrateOptions())
    assert report.applied == [result.name]
    writes = [r for r in cap.operations if r in ("PutItem", "UpdateItem", "BatchWriteItem", "TransactWriteItems",
                                                 "DeleteItem", "Scan")]
    assert writes == [] or set(writes) <= {"PutItem", "DeleteItem"}  # only the migration ledger's own items
    assert {i["widget_id"]["S"]: i for i in widgets(project.table)} == before  # no item touched
    qs = models.Widget.objects.filter(maker="m1", size__gte=15)
    assert qs.explain().index == "ByMaker"
    got = list(qs)
    assert sorted(w.widget_id for w in got) == [f"w{i:03d}" for i in range(120) if i % 3 == 1 and i % 20 >= 15]
    assert [w.size for w in got] == sorted(w.size for w in got)  # by the numeric sort attribute

    # step 3: drop the old GSI; new writes stop carrying its key attributes; still no rewrite
    models = stage_indexed(project, {"ByMaker": BY_MAKER_GSI}, "{'by_maker': " + BY_MAKER_MULTI + "}")
    result3 = project.makemigrations()
    assert "DropIndexes" in result3.source and "GSI1" in result3.source
    assert "RekeyEntity" not in result3.source and "SyncIndexes" not in result3.source
    project.executor().migrate(MigrateOptions())
    desc = project.table.describe()
    assert [g["IndexName"] for g in desc["GlobalSecondaryIndexes"]] == ["ByMaker"]
    assert {i["widget_id"]["S"]: i for i in widgets(project.table)} == before  # old attributes kept as-is
    w = models.Widget.objects.create(widget_id="new", maker="m1", size=3)
    raw = [i for i in widgets(project.table) if i["widget_id"]["S"] == "new"][0]
    assert "GSI1PK" not in raw and "GSI1SK" not in raw
    assert w.widget_id in [x.widget_id for x in models.Widget.objects.filter(maker="m1", size=3)]
    assert project.makemigrations(check=True).operations == []
