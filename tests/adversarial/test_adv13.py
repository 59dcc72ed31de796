"""Adversarial tests for issue 13 (multi-attribute GSI keys).

Each test fails on the code it was written against and passes once the bug is fixed.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest

import dynorm
from dynorm import Entity, Index, ModelError, Table, fields, tables
from dynorm.migrations.executor import MigrateOptions
from tests.migproject import Project, widgets

# Open findings of the adversarial pass on issue 13 (multi-attribute GSIs), kept as strict xfails
# until fixed: each one fails today; a fix makes it pass, and then strict=True turns it red so the
# marker is removed.
pytestmark = pytest.mark.xfail(strict=True, reason="issue 13: open adversarial finding (see the test)")


class Adv13(Table):
    class Meta:
        table_name = "adv13"
        gsis = {"ByK": {"pk": {"tenant_id": "S", "region": "S"}, "sk": {"score": "N", "title": "S"}}}


class Adv13Item(Entity):
    tenant_id = fields.String()
    item_id = fields.String()
    region = fields.String(null=True)
    score = fields.Number(null=True)
    title = fields.String(null=True)

    class Meta:
        table = Adv13
        entity_type = "item"
        pk = "T#{tenant_id}"
        sk = "I#{item_id}"
        indexes = {"by_k": Index("ByK", pk=("tenant_id", "region"), sk=("score", "title"))}


def _foreign(k: int) -> None:
    """An item of a type this process declares no model for (another service, another app
    version, a type since removed) holding the index's key attributes."""
    dynorm.backend.call("PutItem", {"TableName": Adv13.table_name(), "Item": {
        "PK": {"S": "T#t"}, "SK": {"S": f"G#{k}"}, Adv13._meta.type_attribute: {"S": "ghost"},
        "tenant_id": {"S": "t"}, "region": {"S": "eu"}, "score": {"N": "-1"}, "title": {"S": f"g{k}"}}})


def test_count_on_a_multi_attribute_index_counts_only_this_entity_type() -> None:
    """count() on a template path always filters on the type attribute ("iteration drops every
    item of another type ... so Select=COUNT must not count them"); on a multi-attribute GSI it
    does not, so count() disagrees with len(list(qs)) when a type no model declares holds the
    same attributes."""
    for i in range(3):
        Adv13Item.objects.create(tenant_id="t", item_id=f"i{i}", region="eu", score=i, title="x")
    for k in range(2):
        _foreign(k)
    qs = Adv13Item.objects.filter(tenant_id="t", region="eu")
    assert qs.explain().index == "ByK"
    assert len(list(qs.all())) == 3
    assert Adv13Item.objects.filter(tenant_id="t", region="eu").count() == 3  # actual: 5
    assert Adv13Item.objects.filter(tenant_id="t", region="eu", score__lt=1).count() == 1  # actual: 3


def test_a_table_declaring_one_attribute_with_two_types_is_refused() -> None:
    """Two multi-attribute GSIs declare `year` as N and as S: the declaration is accepted, check()
    says nothing, and create_table writes one AttributeDefinition (N): the live table is not the
    declared one (every write of a `year` string to IdxB's attribute would be refused)."""
    with pytest.raises(ModelError, match="year"):
        class TwoTypes(Table):
            class Meta:
                table_name = "adv13_two_types"
                gsis = {"IdxA": {"pk": {"year": "N"}}, "IdxB": {"pk": {"year": "S"}}}


def test_a_multi_attribute_gsi_typing_a_template_key_attribute_as_n_is_refused() -> None:
    """GSI1PK is a template key attribute (always S text); a multi-attribute GSI declaring it N
    is accepted and silently created as S."""
    with pytest.raises(ModelError, match="GSI1PK"):
        class Mixed(Table):
            class Meta:
                table_name = "adv13_mixed"
                gsis = {"GSI1": ("GSI1PK", "GSI1SK"), "IdxA": {"pk": {"GSI1PK": "N"}}}


TABLES = '''
from dynorm import Table

class MigShop(Table):
    class Meta:
        table_name = "migshop"
        gsis = {"ByMaker": {"pk": {"maker": "S"}, "sk": {"size": "N"}}}
'''

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
        indexes = {{"by_maker": Index("ByMaker", pk=("maker",), sk=("size",))}}
'''


def _stage(project: Project, version: str) -> Any:
    (project.dir / "tables.py").write_text(TABLES)
    (project.dir / "models.py").write_text(MODELS.format(pkg=project.pkg, version=version))
    for name in (f"{project.pkg}.tables", f"{project.pkg}.models"):
        if name in sys.modules:
            importlib.reload(sys.modules[name])
        else:
            importlib.import_module(name)
    stale = [t for t in tables._TABLES if t.__module__ == f"{project.pkg}.tables" and t is not project.table]
    for t in stale:
        tables._TABLES.remove(t)
    return sys.modules[f"{project.pkg}.models"]


def test_copy_mode_rekey_does_not_duplicate_results_on_a_multi_attribute_gsi(project: Project) -> None:
    """A key-version bump migrated in copy mode leaves the old items (documented: expand/contract,
    DeleteVersion later). Template GSI keys carry the version, so the old copies stay out of the
    new version's queries; a multi-attribute GSI's keys are the plain attributes, which both
    copies hold: every item is returned twice by the v2 application."""
    models = _stage(project, "v1")
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    models.Widget.objects.bulk_create([models.Widget(widget_id=f"w{i}", maker="m", size=i) for i in range(4)])
    models = _stage(project, "v2")
    project.makemigrations()
    project.executor().migrate(MigrateOptions(mode="copy"))
    assert len(widgets(project.table)) == 8  # both copies stored, as documented for copy mode
    got = [w.widget_id for w in models.Widget.objects.filter(maker="m")]
    assert got == ["w0", "w1", "w2", "w3"]  # actual: each id twice
    assert models.Widget.objects.filter(maker="m").count() == 4


def test_full_primary_key_with_index_fields_is_one_getitem() -> None:
    """Given the whole primary key, one (strongly consistent when asked) GetItem serves the query;
    the planner picks the eventually consistent multi-attribute GSI instead because the extra
    equalities pin its sort fields, and `.consistent()` is then refused."""
    Adv13Item.objects.create(tenant_id="t", item_id="g1", region="eu", score=1, title="x")
    qs = Adv13Item.objects.filter(tenant_id="t", item_id="g1", region="eu", score=1, title="x")
    assert qs.explain().operation == "GetItem"  # actual: Query on ByK
    got = Adv13Item.objects.filter(tenant_id="t", item_id="g1", region="eu").consistent().get()  # actual: InvalidQuery
    assert got.item_id == "g1"


def test_get_or_create_with_index_fields_survives_index_lag() -> None:
    """get_or_create(kwargs with the primary key and the index fields): the read goes to the GSI;
    while the GSI lags behind (simulated: the Query on ByK answers empty, as DynamoDB's GSI does
    right after a write) the conditional create finds the item and the consistent re-read is
    refused on the GSI: the call raises instead of returning the existing item."""
    from tests.faults import Hook, fake_response

    Adv13Item.objects.create(tenant_id="t", item_id="g1", region="eu", score=1, title="x")

    def lagging(request: Any, **_: Any) -> Any:
        if b'"ByK"' in (request.body or b""):
            return fake_response(200, {"Items": [], "Count": 0, "ScannedCount": 0})
        return None

    with Hook("before-send.dynamodb.Query", lagging):
        obj, created = Adv13Item.objects.get_or_create(tenant_id="t", item_id="g1", region="eu", score=1,
                                                       title="x")  # actual: InvalidQuery (ConsistentRead on GSI)
    assert not created and obj.item_id == "g1"
    raw = dynorm.backend.call("Scan", {"TableName": Adv13.table_name()})["Items"]
    assert len(raw) == 1


MODELS_RV = '''
from dynorm import Entity, Index, fields
from {pkg}.tables import MigShop

class Widget(Entity):
    widget_id = fields.String()
    maker = fields.String()
    size = fields.Integer(default=0)
    counter = fields.Integer(default=0)

    class Meta:
        table = MigShop
        entity_type = "WIDGET"
        key_version = "{version}"
        read_versions = {rv!r}
        pk = "{{version}}#W#{{widget_id}}"
        sk = "METADATA"
        indexes = {{"by_maker": Index("ByMaker", pk=("maker",), sk=("size",))}}
'''


def _stage_rv(project: Project, version: str, rv: list[str] | None) -> Any:
    (project.dir / "tables.py").write_text(TABLES)
    (project.dir / "models.py").write_text(MODELS_RV.format(pkg=project.pkg, version=version, rv=rv))
    for name in (f"{project.pkg}.tables", f"{project.pkg}.models"):
        if name in sys.modules:
            importlib.reload(sys.modules[name])
        else:
            importlib.import_module(name)
    stale = [t for t in tables._TABLES if t.__module__ == f"{project.pkg}.tables" and t is not project.table]
    for t in stale:
        tables._TABLES.remove(t)
    return sys.modules[f"{project.pkg}.models"]


def test_save_of_an_item_read_at_an_older_version_through_a_multi_attribute_gsi(project: Project) -> None:
    """docs/migrations.md, expand step: with read_versions, "any write on an instance read at v1
    first moves the item to its v2 keys". A multi-attribute GSI returns the v1 items to the v2 app
    (their keys hold no version), but the instance is not marked as read at v1: save() raises
    KeyChangeError ("keys are immutable") and the acknowledged-by-docs write cannot be made."""
    m = _stage_rv(project, "v1", None)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    m.Widget.objects.bulk_create([m.Widget(widget_id=f"w{i}", maker="m", size=i) for i in range(3)])
    m = _stage_rv(project, "v2", ["v2", "v1"])
    w = [x for x in m.Widget.objects.filter(maker="m") if x.widget_id == "w1"][0]
    w.counter = 5
    w.save()  # actual: KeyChangeError v1#W#w1 -> v2#W#w1
    raw = {i["PK"]["S"]: i for i in widgets(project.table)}
    assert "v1#W#w1" not in raw and raw["v2#W#w1"]["counter"] == {"N": "5"}
    assert sorted((x.widget_id, x.counter) for x in m.Widget.objects.filter(maker="m")) == [
        ("w0", 0), ("w1", 5), ("w2", 0)]


TABLES_T = '''
from dynorm import Table
class MigShop(Table):
    class Meta:
        table_name = "migshop"
        gsis = {gsis!r}
'''
MODELS_T = '''
from dynorm import Entity, Index, fields
from {pkg}.tables import MigShop
class Widget(Entity):
    widget_id = fields.String()
    maker = fields.String()
    size = fields.{sizefield}(null=True)
    class Meta:
        table = MigShop
        entity_type = "WIDGET"
        pk = "W#{{widget_id}}"
        sk = "METADATA"
        indexes = {indexes}
'''


def _stage_t(project: Project, gsis: dict[str, Any], sizefield: str, indexes: str) -> Any:
    (project.dir / "tables.py").write_text(TABLES_T.format(gsis=gsis))
    (project.dir / "models.py").write_text(MODELS_T.format(pkg=project.pkg, sizefield=sizefield, indexes=indexes))
    for name in (f"{project.pkg}.tables", f"{project.pkg}.models"):
        if name in sys.modules:
            importlib.reload(sys.modules[name])
        else:
            importlib.import_module(name)
    for t in [t for t in tables._TABLES if t.__module__ == f"{project.pkg}.tables" and t is not project.table]:
        tables._TABLES.remove(t)
    return sys.modules[f"{project.pkg}.models"]


def test_moving_a_pattern_onto_a_numeric_sort_attribute_the_items_hold_as_text(project: Project) -> None:
    """v1 stores `size` as a String (a template GSI "S#{size}"); v2 moves the pattern onto a
    multi-attribute GSI with size N and makes the field an Integer. makemigrations emits only
    SyncIndexes (no rewrite, no refusal), migrate succeeds, check() is silent, and every existing
    item is now unreadable through the new access path (UnreadableItems: stored as S)."""
    from dynorm.migrations.operations import MigrationError

    m = _stage_t(project, {"GSI1": ("GSI1PK", "GSI1SK")}, "String",
                 "{'by_maker': Index('GSI1', pk='M#{maker}', sk='S#{size}')}")
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    m.Widget.objects.bulk_create([m.Widget(widget_id=f"w{i}", maker="m", size=f"{i:02d}") for i in range(3)])
    m = _stage_t(project, {"GSI1": ("GSI1PK", "GSI1SK"), "ByMaker": {"pk": {"maker": "S"}, "sk": {"size": "N"}}},
                 "Integer", "{'by_maker': Index('ByMaker', pk=('maker',), sk=('size',)), "
                            "'old': Index('GSI1', pk='M#{maker}', sk='S#{size}')}")
    try:
        project.makemigrations()
        project.executor().migrate(MigrateOptions())
    except MigrationError:
        return  # refused before anything changed: acceptable
    got = [w.widget_id for w in m.Widget.objects.filter(maker="m")]  # actual: UnreadableItems
    assert got == ["w0", "w1", "w2"]
