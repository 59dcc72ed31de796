"""makemigrations detects an added or removed unique constraint; AddConstraint backfills sentinels
(resumable, listing duplicates), RemoveConstraint deletes them; a rekey leaves sentinels pointing at
their items. On DynamoDB Local, the table read back raw."""

from __future__ import annotations

from typing import Any

import dynorm
from dynorm import backend
from dynorm.constraints import SENTINEL_TYPE
from dynorm.migrations.executor import MigrateOptions
from dynorm.migrations.verify import verify
from tests.migproject import Project

MODELS = '''
from dynorm import Entity, fields
from {pkg}.tables import MigShop

class Widget(Entity):
    widget_id = fields.String()
    email = fields.String({unique})

    class Meta:
        table = MigShop
        entity_type = "WIDGET"
        key_version = "{version}"
        read_versions = {read_versions!r}
        pk = "{{version}}#W#{{widget_id}}"
        sk = "METADATA"
'''


def _stage(project: Project, unique: bool, version: str = "v1", read_versions: Any = None) -> Any:
    return project.write_models_source(MODELS.format(pkg=project.pkg, unique="unique=True" if unique else "",
                                                     version=version, read_versions=read_versions))


def _raw(project: Project) -> list[dict[str, Any]]:
    return [i for r in backend.paginate("Scan", {"TableName": project.table.table_name(), "ConsistentRead": True})
            for i in r.get("Items", [])]


def _sentinels(project: Project) -> dict[str, str]:
    """email -> owner widget_id of every sentinel."""
    return {i["PK"]["S"].rsplit("#", 1)[1]: i["_dynorm_owner_key"]["M"]["widget_id"]["S"]
            for i in _raw(project) if i.get("entityType") == {"S": SENTINEL_TYPE}}


def test_add_constraint_backfills_lists_duplicates_and_a_rerun_finishes(project: Project) -> None:
    models = _stage(project, unique=False)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    for i in range(40):
        models.Widget.objects.create(widget_id=f"w{i:02d}", email=f"e{i % 38}@x.io")  # w38, w39: duplicates
    models = _stage(project, unique=True)
    result = project.makemigrations()
    assert "AddConstraint" in result.source and "unique_email" in result.source
    report = project.executor().migrate(MigrateOptions(segments=2))
    assert report.applied == []  # partial: the duplicates are listed
    errors = " ".join(e for r in report.operations for e in r.errors)
    assert "e0@x.io" in errors and "e1@x.io" in errors and "duplicate" in errors
    held = _sentinels(project)
    assert len(held) == 38  # every value has its sentinel, each held by one of its items
    # the operator fixes the duplicates (the items that never held a sentinel release nothing)
    w38 = models.Widget.objects.get(widget_id="w38")
    w38.email = "fixed38@x.io"
    w38.save()
    models.Widget.objects.get(widget_id="w39" if held["e1@x.io"] != "w39" else "w01").delete()
    again = project.executor().migrate(MigrateOptions())
    assert again.applied == [result.name]
    held = _sentinels(project)
    assert len(held) == 39 and held["fixed38@x.io"] == "w38"
    widgets = {i["widget_id"]["S"]: i["email"]["S"] for i in _raw(project) if i.get("entityType") == {"S": "WIDGET"}}
    assert {e: w for w, e in widgets.items()} == held  # one sentinel per item, each naming its item


def test_remove_constraint_deletes_the_sentinels(project: Project) -> None:
    models = _stage(project, unique=True)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    for i in range(5):
        models.Widget.objects.create(widget_id=f"w{i}", email=f"e{i}@x.io")
    assert len(_sentinels(project)) == 5
    _stage(project, unique=False)
    result = project.makemigrations()
    assert "RemoveConstraint" in result.source
    assert project.executor().migrate(MigrateOptions()).applied == [result.name]
    assert _sentinels(project) == {}


def test_a_rekey_leaves_every_sentinel_pointing_at_its_item(project: Project) -> None:
    models = _stage(project, unique=True)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    for i in range(20):
        models.Widget.objects.create(widget_id=f"w{i:02d}", email=f"e{i}@x.io")
    before = _sentinels(project)
    models = _stage(project, unique=True, version="v2")
    result = project.makemigrations()
    assert "RekeyEntity" in result.source
    assert project.executor().migrate(MigrateOptions(segments=2)).applied == [result.name]
    assert all(i["PK"]["S"].startswith("v2#") for i in _raw(project) if i.get("entityType") == {"S": "WIDGET"})
    assert _sentinels(project) == before
    for email, wid in before.items():  # each sentinel still finds its item, now under v2 keys
        assert models.Widget.objects.get(email=email).widget_id == wid


def test_a_rekey_keeps_the_constraint_in_the_migration_state(project: Project) -> None:
    _stage(project, unique=True)
    project.makemigrations()
    _stage(project, unique=True, version="v2")
    assert "RekeyEntity" in project.makemigrations().source
    again = project.makemigrations(check=True)
    assert again.operations == []  # "No changes detected": the constraint is still recorded after the rekey
    _stage(project, unique=False, version="v2")
    ops = project.makemigrations(check=True).operations
    assert [type(op).__name__ for op in ops] == ["RemoveConstraint"]
    assert ops[0].name == "unique_email"


def _backfill_racing(project: Project, app_write: Any) -> Any:
    """Run the pending AddConstraint; ``app_write()`` runs once, just before its first sentinel write is sent
    (after the Scan read the item)."""
    done: list[int] = []

    def race(request: Any, **kwargs: Any) -> None:
        body = request.body if isinstance(request.body, bytes) else str(request.body).encode()
        if not done and b"_dynorm_owner_key" in body:  # a sentinel's write, not the ledger's
            done.append(1)
            app_write()

    events = ("before-send.dynamodb.TransactWriteItems", "before-send.dynamodb.PutItem")
    for event in events:
        backend.register_hook(event, race)
    try:
        return project.executor().migrate(MigrateOptions())
    finally:
        for event in events:
            backend.unregister_hook(event, race)
        assert done, "the application write never ran"


def test_the_backfill_claims_no_value_the_application_changed_or_deleted_since_the_scan(project: Project) -> None:
    models = _stage(project, unique=False)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    models.Widget.objects.create(widget_id="w1", email="old@x.io")  # the one item: the first sentinel write
    models = _stage(project, unique=True)
    result = project.makemigrations()

    def change() -> None:  # the application (with the constraint) changes the email after the Scan read it
        w = models.Widget.objects.get(widget_id="w1")
        w.email = "new@x.io"
        w.save()

    assert _backfill_racing(project, change).applied == [result.name]
    assert _sentinels(project) == {"new@x.io": "w1"}  # no orphan sentinel of old@x.io


def test_the_backfill_leaves_no_sentinel_of_an_item_deleted_since_the_scan(project: Project) -> None:
    models = _stage(project, unique=False)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    models.Widget.objects.create(widget_id="w1", email="gone@x.io")
    models = _stage(project, unique=True)
    result = project.makemigrations()
    assert _backfill_racing(project, lambda: models.Widget.objects.filter(widget_id="w1").delete()).applied == [
        result.name]
    assert _sentinels(project) == {}


def _old_app(project: Project, action: str, widget_id: str, email: str | None = None) -> None:
    """A write by an application version without the constraint: the item only, no sentinel."""
    key = {"PK": {"S": f"v1#W#{widget_id}"}, "SK": {"S": "METADATA"}}
    table, client = project.table.table_name(), backend.client()
    if action == "delete":
        client.delete_item(TableName=table, Key=key)
    else:
        client.put_item(TableName=table, Item={**key, "entityType": {"S": "WIDGET"}, "widget_id": {"S": widget_id},
                                               "email": {"S": email}})


def _held_by_items(project: Project) -> dict[str, str]:
    return {i["email"]["S"]: i["widget_id"]["S"] for i in _raw(project) if i.get("entityType") == {"S": "WIDGET"}}


def test_a_rerun_is_recorded_applied_only_once_every_item_has_its_sentinel_and_no_orphan(project: Project) -> None:
    models = _stage(project, unique=False)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    for i in range(10):
        models.Widget.objects.create(widget_id=f"w{i}", email=f"e{i}@x.io")
    models.Widget.objects.create(widget_id="w10", email="e0@x.io")  # a duplicate: the backfill stays partial
    _stage(project, unique=True)
    result = project.makemigrations()
    assert project.executor().migrate(MigrateOptions()).applied == []
    # meanwhile processes still running the old models write without sentinels
    _old_app(project, "put", "w1", "moved@x.io")  # e1's sentinel is now an orphan, moved@ has none
    _old_app(project, "delete", "w2")  # e2's sentinel names an item that is gone
    _old_app(project, "put", "w11", "new@x.io")  # a new item without a sentinel
    _old_app(project, "delete", "w10" if _sentinels(project)["e0@x.io"] != "w10" else "w0")  # the fix
    report = project.executor().migrate(MigrateOptions())
    assert report.applied == [result.name]
    assert _sentinels(project) == _held_by_items(project)  # one sentinel per item's value, naming it
    assert "moved@x.io" in _sentinels(project) and "e1@x.io" not in _sentinels(project)


def test_verify_counts_items_and_sentinels_and_lists_orphans_and_missing_ones(project: Project) -> None:
    models = _stage(project, unique=False)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    for i in range(4):
        models.Widget.objects.create(widget_id=f"w{i}", email=f"e{i}@x.io")
    _stage(project, unique=True)
    result = project.makemigrations()
    project.executor().migrate(MigrateOptions())
    ok, rows = verify(project.executor(), result.name)
    assert ok and [(r.constraint, r.old, r.new, r.problems) for r in rows] == [("unique_email", 4, 4, [])]
    _old_app(project, "put", "w1", "moved@x.io")  # an old process, after the migration
    _old_app(project, "delete", "w2")
    with dynorm.capture() as c:
        ok, rows = verify(project.executor(), result.name)
    assert "TransactWriteItems" not in c.operations and "DeleteItem" not in c.operations  # it only reads
    assert not ok and (rows[0].old, rows[0].new) == (3, 4)
    problems = " ".join(rows[0].problems)
    assert "missing sentinel of 'moved@x.io'" in problems and "v1#W#w1" in problems
    assert problems.count("orphan sentinel") == 2 and "e1@x.io" in problems and "e2@x.io" in problems


def test_migrate_left_partial_by_duplicates_says_to_fix_them_not_to_pick_a_rekey_mode(project: Project) -> None:
    from click.testing import CliRunner

    from dynorm.cli import cli

    models = _stage(project, unique=False)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    models.Widget.objects.create(widget_id="w1", email="same@x.io")
    models.Widget.objects.create(widget_id="w2", email="same@x.io")
    _stage(project, unique=True)
    project.makemigrations()
    result = CliRunner().invoke(cli, ["--config", str(project.config()), "migrate", "--yes"])
    assert result.exit_code == 1, result.output
    assert "NOT applied (partial)" in result.output and "duplicate value email='same@x.io'" in result.output
    assert "change or delete the extra items" in result.output
    assert "--mode" not in result.output and "--resolve" not in result.output
