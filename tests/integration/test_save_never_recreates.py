"""`save()`/`update()` of an instance read from the table never re-creates an item deleted or
moved since it was read: an unversioned v1 application doing get() then save() while
`migrate --mode move` runs used to write the item again at its v1 key (an UpdateItem without a
condition), leaving a partial migration that no re-run could finish."""

from __future__ import annotations

import pytest

from dynorm import backend, keyguard
from dynorm.exceptions import StaleWrite
from dynorm.migrations.executor import MigrateOptions
from tests.migproject import UNVERSIONED, V2, VERSIONED, Project, load_v1, widgets


def _raw(project: Project, pk: str) -> dict | None:
    return backend.call("GetItem", {"TableName": project.table.table_name(), "ConsistentRead": True,
                                    "Key": {"PK": {"S": pk}, "SK": {"S": "METADATA"}}}).get("Item")


def test_a_v1_save_after_the_move_raises_does_not_exist_and_writes_nothing(project: Project) -> None:
    models = load_v1(project, 5, version_field=UNVERSIONED)
    old = models.Widget
    read = old.objects.get(widget_id="w00001")
    updated = old.objects.get(widget_id="w00002")
    project.write_models(**{**V2, "version_field": UNVERSIONED})
    project.makemigrations()
    assert project.executor().migrate(MigrateOptions(mode="move")).applied == ["0002_widget_v2"]
    # the v1 application is a process that was running before the move: it read the table's key-version
    # record then (none) and keeps that answer for its life, so the key-version check does not stop it
    # (the migrate run in this process refreshed this process's record: a fresh v1 process is refused,
    # tests/integration/test_retired_key_versions.py); the write itself must still not re-create the item
    keyguard.note(project.table.table_name(), {})
    read.note = "written by the v1 app"
    with pytest.raises(old.DoesNotExist, match="moved to another key version by a migration"):
        read.save()
    with pytest.raises(old.DoesNotExist):
        updated.update(note="also v1")
    assert _raw(project, "v1#W#w00001") is None and _raw(project, "v1#W#w00002") is None
    assert all(i["PK"]["S"].startswith("v2#") for i in widgets(project.table))
    assert "note" not in (_raw(project, "v2#W#w00001") or {})  # the v2 copy untouched


def test_a_deleted_unversioned_item_is_not_brought_back_by_save(project: Project) -> None:
    models = load_v1(project, 2, version_field=UNVERSIONED)
    obj = models.Widget.objects.get(widget_id="w00000")
    models.Widget.objects.get(widget_id="w00000").delete()
    obj.size = 9
    with pytest.raises(models.Widget.DoesNotExist):
        obj.save()
    assert _raw(project, "v1#W#w00000") is None
    fresh = models.Widget(widget_id="w00000", maker="m", size=3)
    fresh.save()  # a new instance still saves (an upsert of what was never read)
    assert _raw(project, "v1#W#w00000") is not None


@pytest.mark.parametrize("version_field", [UNVERSIONED, VERSIONED], ids=["unversioned", "versioned"])
def test_a_new_instance_loaded_by_refresh_from_db_counts_as_read(project: Project, version_field: str) -> None:
    """``Widget(widget_id=...)`` then ``refresh_from_db()`` holds what the table holds: once the item is
    deleted elsewhere, ``save()`` fails as it does for an instance from ``get()`` (DoesNotExist; with a
    ``fields.Version()``, StaleWrite "it was deleted"), writing nothing."""
    models = load_v1(project, 3, version_field=version_field)
    raised: list[type[BaseException]] = []
    for wid, read in (("w00001", lambda w: models.Widget.objects.get(widget_id=w)),
                      ("w00002", lambda w: models.Widget(widget_id=w))):
        obj = read(wid)
        obj.refresh_from_db()
        models.Widget.objects.get(widget_id=wid).delete()
        obj.size = 9
        with pytest.raises((models.Widget.DoesNotExist, StaleWrite)) as exc:
            obj.save()
        raised.append(exc.type)
        assert _raw(project, f"v1#W#{wid}") is None
    assert raised[0] is raised[1] is (StaleWrite if version_field == VERSIONED else models.Widget.DoesNotExist)
    partly = models.Widget(widget_id="w00000", maker="m", size=4)
    partly.refresh_from_db(fields=["size"])  # only some fields read: still the caller's instance
    assert partly._state.adding


def test_an_item_read_without_its_version_attribute_is_not_brought_back_by_save() -> None:
    """An item stored without the version attribute (written before the model had ``fields.Version()``,
    or by another writer) is saved on condition ``attribute_not_exists(version)``, which a deleted item
    meets too: its ``save()`` re-created it. The entity-type condition beside it needs the item there."""
    from tests.models import Counter

    key = {"PK": {"S": "v1#COUNTER#c1"}, "SK": {"S": "METADATA"}}
    table = Counter._meta.table.table_name()
    backend.call("PutItem", {"TableName": table, "Item": {**key, "entityType": {"S": "COUNTER"},
                                                          "name": {"S": "c1"}, "value": {"N": "5"}}})
    obj = Counter.objects.get(name="c1")
    assert obj.version is None
    backend.call("DeleteItem", {"TableName": table, "Key": key})
    obj.value = 6
    with pytest.raises(StaleWrite, match="it was deleted"):
        obj.save()
    assert backend.call("GetItem", {"TableName": table, "Key": key, "ConsistentRead": True}).get("Item") is None
