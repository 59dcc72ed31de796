"""DeleteVersion after a live expand/contract rollout: copies record the revision they copied, and
items without a revision token too large to compare in one condition (issue 10, adversary adv10c).

* A copy-mode rekey stores on each copy the revision token of the item it copied
  (``_dynorm_rev_src``). The current application's writes to the copy keep it, so DeleteVersion
  deletes an old item that is unchanged since it was copied even after the copy was written
  (it used to refuse every such item: on a live table, most of them), and still keeps an old
  item written after the copy.
* An item no dynorm write touched is compared attribute by attribute, and DynamoDB refuses a
  condition over 4 KB: such items used to abort every run (ValidationException); they are now
  given a token first, then moved or deleted alone.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

import dynorm
from dynorm import ModelError, backend, fields
from dynorm.migrations import MigrationError
from dynorm.migrations.executor import MigrateOptions
from tests.migproject import V2, Project, load_v1, widgets

DROP_V1 = '''
from dynorm.migrations import operations as ops
dependencies = ["0002_widget_v2"]
operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="v1",
                                pk="{{version}}#W#{{widget_id}}"{extra})]
'''
SRC = "_dynorm_rev_src"


def _rollout(project: Project, n: int, read_versions: bool = True) -> Any:
    load_v1(project, n)
    models = project.write_models(**{**V2, "read_versions": ["v2", "v1"] if read_versions else None})
    project.makemigrations()
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == ["0002_widget_v2"]
    return models


def _drop(project: Project, extra: str = "") -> None:
    (project.dir / "migrations" / "0003_drop_v1.py").write_text(textwrap.dedent(DROP_V1.format(extra=extra)))


def _at(project: Project, version: str) -> dict[str, dict[str, Any]]:
    return {i["widget_id"]["S"]: i for i in widgets(project.table) if i["PK"]["S"].startswith(version + "#")}


def test_copies_record_the_revision_they_copied_and_current_writes_keep_it(project: Project) -> None:
    models = _rollout(project, 6)
    v1, v2 = _at(project, "v1"), _at(project, "v2")
    assert all(v2[w][SRC] == {"SS": [v1[w]["_dynorm_rev"]["S"]]} for w in v1)  # each copy names its source revision
    w = models.Widget.objects.get(widget_id="w00001")
    w.maker = "saved by v2"
    w.save()
    models.Widget.objects.get(widget_id="w00002").update(maker="updated by v2")
    after = _at(project, "v2")
    for wid in ("w00001", "w00002"):
        assert after[wid]["_dynorm_rev"] != v1[wid]["_dynorm_rev"]  # a new revision ...
        assert after[wid][SRC] == {"SS": [v1[wid]["_dynorm_rev"]["S"]]}  # ... that still names what was copied


def test_delete_version_deletes_old_items_whose_copies_the_current_app_wrote_since(project: Project) -> None:
    """The contract step on a live table: the v2 app has updated many copies since the backfill. Their
    v1 sources are unchanged since they were copied, so deleting them loses nothing: DeleteVersion used to
    refuse every one of them ("its copy is another revision")."""
    models = _rollout(project, 20)
    for i in range(0, 20, 2):
        models.Widget.objects.get(widget_id=f"w{i:05d}").update(maker="v2 wrote this")
    _drop(project)
    report = project.executor().migrate(MigrateOptions())
    assert report.applied == ["0003_drop_v1"], (report.partial, report.failed_items)
    assert _at(project, "v1") == {}
    v2 = _at(project, "v2")
    assert len(v2) == 20 and sum(1 for i in v2.values() if i["maker"] == {"S": "v2 wrote this"}) == 10


def test_delete_version_still_keeps_an_old_item_written_after_it_was_copied(project: Project) -> None:
    """Both copies written since the backfill: the v1 one by an application still on v1 (a fresh token,
    as every dynorm write sets), the v2 one by the current app. Neither is the revision that was copied."""
    from dynorm.writes import new_token

    models = _rollout(project, 10)
    name = project.table.table_name()
    backend.call("UpdateItem", {"TableName": name, "Key": {"PK": {"S": "v1#W#w00003"}, "SK": {"S": "METADATA"}},
                                "UpdateExpression": "SET maker = :m, #r = :r", "ExpressionAttributeNames": {
                                    "#r": "_dynorm_rev"}, "ExpressionAttributeValues": {
                                    ":m": {"S": "v1 wrote this"}, ":r": {"S": new_token()}}})
    models.Widget.objects.get(widget_id="w00003").update(maker="v2 wrote this")  # found at v2: the copy
    _drop(project)
    with pytest.raises(MigrationError) as err:
        project.executor().migrate(MigrateOptions())
    assert "another revision" in str(err.value) and "w00003" in str(err.value)
    assert _at(project, "v1")["w00003"]["maker"] == {"S": "v1 wrote this"}  # kept


def test_a_resumed_copy_skips_items_whose_copy_the_current_app_wrote_since(project: Project) -> None:
    """A copy-mode rekey run again (after a partial run, or with read_versions deployed first) meets
    copies the v2 app has written since: they are the current items, not "a different item" to fail on."""
    models = _rollout(project, 8)
    models.Widget.objects.get(widget_id="w00004").update(maker="v2 wrote this")
    from dynorm.migrations.rekey import Counts, Rekeyer

    executor = project.executor()
    migration = executor.migrations[-1]

    op = migration.operations[0]
    table = executor.final_state.tables[op.table]
    worker = Rekeyer(op, table, project.table.table_name(), "copy", Counts())
    result = worker.process(list(_at(project, "v1").values()))
    assert result.failed == [] and worker.counts.skipped == 8 and worker.counts.rewritten == 0
    assert _at(project, "v2")["w00004"]["maker"] == {"S": "v2 wrote this"}  # not overwritten


def test_following_the_contract_order_a_deleted_item_stays_deleted(project: Project) -> None:
    """docs/migrations.md, contract step: DeleteVersion runs while read_versions still lists v1, so the v2
    app's deletes remove both copies and nothing comes back. The refusal message names that cause too,
    because copy_missing=True would copy back an item deleted at v2 after read_versions was removed."""
    models = _rollout(project, 12)
    models.Widget.objects.get(widget_id="w00005").delete()
    assert "w00005" not in _at(project, "v1") and "w00005" not in _at(project, "v2")
    _drop(project)
    assert project.executor().migrate(MigrateOptions()).applied == ["0003_drop_v1"]
    assert not models.Widget.objects.filter(widget_id="w00005").exists()


def test_the_refusal_warns_that_copy_missing_brings_back_items_deleted_at_the_current_version(
        project: Project) -> None:
    models = _rollout(project, 6, read_versions=False)
    models.Widget.objects.get(widget_id="w00002").delete()  # read_versions gone: only the v2 copy is deleted
    _drop(project)
    with pytest.raises(MigrationError) as err:
        project.executor().migrate(MigrateOptions())
    message = str(err.value)
    assert "copy_missing=True" in message and "copy was deleted by an application on v2" in message, message
    assert "it comes back" in message
    assert "w00002" in _at(project, "v1")  # nothing deleted


def _many_attributes(project: Project, n: int, count: int = 300) -> None:
    """``count`` attributes another writer gave the v1 items, and no revision token."""
    name = project.table.table_name()
    for i in range(n):
        for lo in range(0, count, 100):
            backend.call("UpdateItem", {
                "TableName": name, "Key": {"PK": {"S": f"v1#W#w{i:05d}"}, "SK": {"S": "METADATA"}},
                "UpdateExpression": "SET " + ", ".join(f"a{k} = :v{k}" for k in range(lo, lo + 100)) + " REMOVE #r",
                "ExpressionAttributeNames": {"#r": "_dynorm_rev"},
                "ExpressionAttributeValues": {f":v{k}": {"N": str(k)} for k in range(lo, lo + 100)}})


@pytest.mark.parametrize("mode", ["move", "copy"])
def test_tokenless_items_with_many_attributes_are_rekeyed_and_their_old_version_deleted(
        project: Project, mode: str) -> None:
    """300 attributes compared one by one make a 5.4 KB condition (DynamoDB refuses over 4 KB): every run
    used to abort with ValidationException. The items now get a token first, then move or copy alone."""
    load_v1(project, 5)
    _many_attributes(project, 3)
    project.write_models(**V2)
    project.makemigrations()
    with dynorm.capture() as c:
        report = project.executor().migrate(MigrateOptions(mode=mode))
    assert report.applied == ["0002_widget_v2"], (report.partial, report.failed_items)
    assert sum(1 for r in c.requests if r.operation == "UpdateItem" and "SET #r = :t" in str(r.params)) == 3
    v2 = _at(project, "v2")
    assert len(v2) == 5 and all(v2[f"w{i:05d}"]["a299"] == {"N": "299"} for i in range(3))  # every attribute
    if mode == "move":
        assert _at(project, "v1") == {}
        return
    _drop(project)
    report = project.executor().migrate(MigrateOptions())
    assert report.applied == ["0003_drop_v1"], (report.partial, report.failed_items)
    assert _at(project, "v1") == {} and len(_at(project, "v2")) == 5


def test_no_field_may_be_stored_under_the_copied_revision_attribute() -> None:
    from dynorm import Entity, Table

    class SrcShop(Table):
        class Meta:
            table_name = "srcshop"

    with pytest.raises(ModelError, match="_dynorm_rev_src"):
        class Bad(Entity):  # noqa: F841
            item_id = fields.String()
            src = fields.String(attr_name="_dynorm_rev_src")

            class Meta:
                table = SrcShop
                entity_type = "BAD"
                pk = "B#{item_id}"
                sk = "B"
