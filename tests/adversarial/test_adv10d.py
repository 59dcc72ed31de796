"""Adversary adv10d (issue 10): copies naming their source revision, tokenless items too large for one
condition, DeleteVersion after a live rollout. Each test fails on the code it was written against."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from dynorm import backend
from dynorm import exceptions as dynorm_errors
from dynorm.migrations import MigrationError
from dynorm.migrations.executor import MigrateOptions
from tests.migproject import V2, Project, load_v1, widgets

pytestmark = pytest.mark.integration


def _at(project: Project, version: str) -> dict[str, dict[str, Any]]:
    return {i["widget_id"]["S"]: i for i in widgets(project.table) if i["PK"]["S"].startswith(version + "#")}


def _rollout(project: Project, n: int) -> tuple[Any, str]:
    load_v1(project, n)
    models = project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    name = project.makemigrations().name
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == [name]
    return models, name


def _drop(project: Project, dep: str, version: str, extra: str = "", name: str = "0009_drop") -> None:
    (project.dir / "migrations" / f"{name}.py").write_text(textwrap.dedent(f'''
        from dynorm.migrations import operations as ops
        dependencies = ["{dep}"]
        operations = [ops.DeleteVersion(table="migshop", entity_type="WIDGET", version="{version}",
                                        pk="{{version}}#W#{{widget_id}}"{extra})]
        '''))


def test_a_tokenless_item_with_many_attributes_near_the_size_limit_does_not_abort_the_move(project: Project) -> None:
    """The stamp (UpdateItem adding _dynorm_rev) pushes an item near 400 KB over the limit: the
    ValidationException escapes and aborts `migrate` on every run, although the moved item (same
    key lengths) fits. Expected: the item is moved, or at least reported as a failed item."""
    load_v1(project, 3)
    name = project.table.table_name()
    key = {"PK": {"S": "v1#W#w00001"}, "SK": {"S": "METADATA"}}
    item = backend.call("GetItem", {"TableName": name, "Key": key, "ConsistentRead": True})["Item"]
    item.pop("_dynorm_rev")
    item.update({f"a{k}": {"S": "v"} for k in range(300)})  # too many to compare in one condition
    lo, hi = 300_000, 600_000  # the largest blob DynamoDB accepts on this item
    while hi - lo > 16:
        mid = (lo + hi) // 2
        try:
            backend.call("PutItem", {"TableName": name, "Item": {**item, "blob": {"S": "x" * mid}}})
            lo = mid
        except dynorm_errors.ServiceError:
            hi = mid
    backend.call("PutItem", {"TableName": name, "Item": {**item, "blob": {"S": "x" * lo}}})
    project.write_models(**{**V2, "gsi_sk": "W#{widget_id}"})  # same key lengths at v2: the moved item fits
    project.makemigrations()
    report = project.executor().migrate(MigrateOptions())  # raised ServiceError (ValidationException)
    moved, left = _at(project, "v2"), _at(project, "v1")
    assert ("w00001" in moved and "w00001" not in left) or any(
        "w00001" in str(f) for f in report.failed_items), (sorted(left), sorted(moved))
    assert {"w00000", "w00002"} <= set(moved)


def test_delete_version_deletes_an_old_item_whose_copy_the_current_app_replaced_with_bulk_create(
        project: Project) -> None:
    """The v2 app (read_versions listing v1) replaces a copy with bulk_create: the copy loses
    _dynorm_rev_src, so DeleteVersion refuses the unchanged v1 item, and the fix the refusal names
    (copy_missing=True) refuses as well: the contract step can never complete."""
    models, dep = _rollout(project, 6)
    W = models.Widget
    W.objects.bulk_create([W(widget_id="w00005", maker="bulk v2", size=1)])
    _drop(project, dep, "v1")
    try:
        project.executor().migrate(MigrateOptions())
    except MigrationError:
        _drop(project, dep, "v1", extra=", copy_missing=True")  # what the refusal says to do
        project.executor().migrate(MigrateOptions())  # raised MigrationError: "a copy of another revision"
    assert _at(project, "v1") == {}
    assert _at(project, "v2")["w00005"]["maker"] == {"S": "bulk v2"}


def test_delete_version_of_the_first_version_after_two_copy_rekeys(project: Project) -> None:
    """v1 -> v2 (copy), the v2 app writes one item, v2 -> v3 (copy): the v3 copy names the v2 revision
    it copied, so DeleteVersion v1 refuses that v1 item (unchanged since it was copied) forever,
    with or without copy_missing=True."""
    models, _ = _rollout(project, 4)
    models.Widget.objects.get(widget_id="w00001").update(maker="v2 wrote")
    project.write_models(**{**V2, "version": "v3", "read_versions": ["v3", "v2", "v1"]})
    dep = project.makemigrations().name
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == [dep]
    _drop(project, dep, "v1")
    try:
        project.executor().migrate(MigrateOptions())
    except MigrationError:
        _drop(project, dep, "v1", extra=", copy_missing=True")
        project.executor().migrate(MigrateOptions())  # raised MigrationError: "a copy of another revision"
    assert _at(project, "v1") == {}
    assert _at(project, "v3")["w00001"]["maker"] == {"S": "v2 wrote"}


def _tokenless(project: Project, wid: str, attributes: int) -> None:
    """Give the v1 item ``wid`` ``attributes`` more attributes (short names) and no revision token."""
    name = project.table.table_name()
    key = {"PK": {"S": f"v1#W#{wid}"}, "SK": {"S": "METADATA"}}
    item = backend.call("GetItem", {"TableName": name, "Key": key, "ConsistentRead": True})["Item"]
    item.pop("_dynorm_rev")
    item.update({f"a{k}": {"S": "v"} for k in range(attributes)})
    backend.call("PutItem", {"TableName": name, "Item": item})


def test_a_move_of_a_tokenless_item_with_160_attributes_does_not_abort(project: Project) -> None:
    """DynamoDB also refuses a condition with more than 300 operators: 160 attributes compared one by
    one (``#a = :a AND ...``) stay under 4 KB, so the item is not given a token first, and every run
    aborts with ValidationException ("too many operators"), as the 4 KB case used to."""
    load_v1(project, 3)
    _tokenless(project, "w00001", 160)
    project.write_models(**V2)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())  # raised ServiceError: ... operator count: 3xx
    assert sorted(_at(project, "v2")) == ["w00000", "w00001", "w00002"] and _at(project, "v1") == {}
    assert _at(project, "v2")["w00001"]["a159"] == {"S": "v"}


def test_delete_version_of_a_tokenless_item_with_160_attributes_does_not_abort(project: Project) -> None:
    load_v1(project, 3)
    _tokenless(project, "w00001", 160)
    project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    dep = project.makemigrations().name
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == [dep]
    _drop(project, dep, "v1")
    assert project.executor().migrate(MigrateOptions()).applied == ["0009_drop"]
    assert _at(project, "v1") == {} and len(_at(project, "v2")) == 3


def test_delete_version_deletes_a_tokenless_old_item_whose_copy_the_current_app_wrote_since(
        project: Project) -> None:
    """Items written before dynorm set a token (legacy data: the usual case for a rekey) are copied
    without _dynorm_rev_src, so once the v2 app updates the copy, DeleteVersion refuses the unchanged
    v1 item for good (copy_missing=True too): the case the _src change was made for."""
    models, dep = _rollout_tokenless(project)
    models.Widget.objects.get(widget_id="w00002").update(maker="v2 wrote")
    _drop(project, dep, "v1")
    try:
        project.executor().migrate(MigrateOptions())
    except MigrationError:
        _drop(project, dep, "v1", extra=", copy_missing=True")
        project.executor().migrate(MigrateOptions())
    assert _at(project, "v1") == {}
    assert _at(project, "v2")["w00002"]["maker"] == {"S": "v2 wrote"}


def _rollout_tokenless(project: Project) -> tuple[Any, str]:
    load_v1(project, 4)
    name = project.table.table_name()
    for i in range(4):  # as written before dynorm set a revision token
        backend.call("UpdateItem", {"TableName": name, "Key": {"PK": {"S": f"v1#W#w{i:05d}"}, "SK": {"S": "METADATA"}},
                                    "UpdateExpression": "REMOVE #r", "ExpressionAttributeNames": {"#r": "_dynorm_rev"}})
    models = project.write_models(**{**V2, "read_versions": ["v2", "v1"]})
    dep = project.makemigrations().name
    assert project.executor().migrate(MigrateOptions(mode="copy")).applied == [dep]
    return models, dep


def _fill_to_the_size_limit(project: Project, wid: str, tokenless_attributes: int | None = None) -> None:
    """Pad the v1 item ``wid`` with a blob as large as DynamoDB accepts (the item is then at 400 KB)."""
    name = project.table.table_name()
    key = {"PK": {"S": f"v1#W#{wid}"}, "SK": {"S": "METADATA"}}
    item = backend.call("GetItem", {"TableName": name, "Key": key, "ConsistentRead": True})["Item"]
    lo, hi = 300_000, 600_000
    while hi - lo > 4:
        mid = (lo + hi) // 2
        try:
            backend.call("PutItem", {"TableName": name, "Item": {**item, "blob": {"S": "x" * mid}}})
            lo = mid
        except dynorm_errors.ServiceError:
            hi = mid
    backend.call("PutItem", {"TableName": name, "Item": {**item, "blob": {"S": "x" * lo}}})


def test_a_copy_mode_rekey_copies_an_item_at_the_size_limit(project: Project) -> None:
    """A regression of _dynorm_rev_src: the copy of an item written by dynorm (with its token) at the
    400 KB limit gets ~50 more bytes, DynamoDB refuses the Put ("Item size has exceeded the maximum
    allowed size") and the ServiceError aborts every run of the copy, although the item under the v2
    keys (same lengths) fits, as it did before copies recorded their source."""
    load_v1(project, 3)
    _fill_to_the_size_limit(project, "w00001")
    project.write_models(**{**V2, "gsi_sk": "W#{widget_id}", "read_versions": ["v2", "v1"]})
    name = project.makemigrations().name
    report = project.executor().migrate(MigrateOptions(mode="copy"))  # raised ServiceError (ValidationException)
    assert report.applied == [name]
    assert sorted(_at(project, "v2")) == ["w00000", "w00001", "w00002"]
    assert len(_at(project, "v2")["w00001"]["blob"]["S"]) == len(_at(project, "v1")["w00001"]["blob"]["S"])
