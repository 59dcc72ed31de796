"""Multi-attribute GSIs (issue 13) through key-version rollouts, lagging indexes and type changes.

count() counting only this entity type, an attribute declared with two types, copies under two
key versions returned once, GSI queries where the primary key names the item, writes and deletes
of items read at an older key version, and a migration that would make every item unreadable.
Below "Copies under older key versions": get()/get_or_create/update_or_create/create never
answering with or hiding a copy under an older key version, a narrowing condition keeping an item
read at an older version, collection() returning each item once, makemigrations refusing a GSI
another entity stores with another type, read-ahead behind foreign items, aggregate key sizes,
and explain(count=True).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import dynorm
from dynorm import Entity, Index, ModelError, Table, fields
from dynorm.migrations.executor import MigrateOptions
from dynorm.migrations.operations import MigrationError
from tests.migproject import (
    BY_MAKER_GSI,
    BY_MAKER_MULTI,
    BY_MAKER_TEMPLATE,
    GSIS_TABLES,
    MULTIKEY_MODELS_RV,
    MULTIKEY_TABLES,
    Project,
    stage_indexed,
    widgets,
)


class TenantKeys(Table):
    class Meta:
        table_name = "mk_tenant_keys"
        gsis = {"ByK": {"pk": {"tenant_id": "S", "region": "S"}, "sk": {"score": "N", "title": "S"}}}


class TenantItem(Entity):
    tenant_id = fields.String()
    item_id = fields.String()
    region = fields.String(null=True)
    score = fields.Number(null=True)
    title = fields.String(null=True)

    class Meta:
        table = TenantKeys
        entity_type = "item"
        pk = "T#{tenant_id}"
        sk = "I#{item_id}"
        indexes = {"by_k": Index("ByK", pk=("tenant_id", "region"), sk=("score", "title"))}


def _foreign(k: int) -> None:
    """An item of a type this process declares no model for (another service, another app
    version, a type since removed) holding the index's key attributes."""
    dynorm.backend.call("PutItem", {"TableName": TenantKeys.table_name(), "Item": {
        "PK": {"S": "T#t"}, "SK": {"S": f"G#{k}"}, TenantKeys._meta.type_attribute: {"S": "ghost"},
        "tenant_id": {"S": "t"}, "region": {"S": "eu"}, "score": {"N": "-1"}, "title": {"S": f"g{k}"}}})


def test_count_on_a_multi_attribute_index_counts_only_this_entity_type() -> None:
    """count() on a template path always filters on the type attribute ("iteration drops every
    item of another type ... so Select=COUNT must not count them"); on a multi-attribute GSI it
    does not, so count() disagrees with len(list(qs)) when a type no model declares holds the
    same attributes."""
    for i in range(3):
        TenantItem.objects.create(tenant_id="t", item_id=f"i{i}", region="eu", score=i, title="x")
    for k in range(2):
        _foreign(k)
    # using(): score and title may be missing, so ByK is read only when asked for by name
    qs = TenantItem.objects.using("by_k").filter(tenant_id="t", region="eu")
    assert qs.explain().index == "ByK"
    assert len(list(qs.all())) == 3
    assert qs.count() == 3  # actual: 5
    assert qs.filter(score__lt=1).count() == 1  # actual: 3
    assert TenantItem.objects.filter(tenant_id="t", region="eu", score__lt=1, title__exists=True).count() == 1


def test_a_table_declaring_one_attribute_with_two_types_is_refused() -> None:
    """Two multi-attribute GSIs declare `year` as N and as S: the declaration is accepted, check()
    says nothing, and create_table writes one AttributeDefinition (N): the live table is not the
    declared one (every write of a `year` string to IdxB's attribute would be refused)."""
    with pytest.raises(ModelError, match="year"):
        class TwoTypes(Table):
            class Meta:
                table_name = "mk_two_types"
                gsis = {"IdxA": {"pk": {"year": "N"}}, "IdxB": {"pk": {"year": "S"}}}


def test_a_multi_attribute_gsi_typing_a_template_key_attribute_as_n_is_refused() -> None:
    """GSI1PK is a template key attribute (always S text); a multi-attribute GSI declaring it N
    is accepted and silently created as S."""
    with pytest.raises(ModelError, match="GSI1PK"):
        class Mixed(Table):
            class Meta:
                table_name = "mk_mixed"
                gsis = {"GSI1": ("GSI1PK", "GSI1SK"), "IdxA": {"pk": {"GSI1PK": "N"}}}



def _stage(project: Project, version: str) -> Any:
    return project.stage(MULTIKEY_TABLES, MULTIKEY_MODELS_RV.format(pkg=project.pkg, version=version, rv=None))


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
    TenantItem.objects.create(tenant_id="t", item_id="g1", region="eu", score=1, title="x")
    qs = TenantItem.objects.filter(tenant_id="t", item_id="g1", region="eu", score=1, title="x")
    assert qs.explain().operation == "GetItem"  # actual: Query on ByK
    got = TenantItem.objects.filter(tenant_id="t", item_id="g1", region="eu").consistent().get()  # actual: InvalidQuery
    assert got.item_id == "g1"


def test_get_or_create_with_index_fields_survives_index_lag() -> None:
    """get_or_create(kwargs with the primary key and the index fields): the read goes to the GSI;
    while the GSI lags behind (simulated: the Query on ByK answers empty, as DynamoDB's GSI does
    right after a write) the conditional create finds the item and the consistent re-read is
    refused on the GSI: the call raises instead of returning the existing item."""
    from tests.faults import Hook, fake_response

    TenantItem.objects.create(tenant_id="t", item_id="g1", region="eu", score=1, title="x")

    def lagging(request: Any, **_: Any) -> Any:
        if b'"ByK"' in (request.body or b""):
            return fake_response(200, {"Items": [], "Count": 0, "ScannedCount": 0})
        return None

    with Hook("before-send.dynamodb.Query", lagging):
        obj, created = TenantItem.objects.get_or_create(tenant_id="t", item_id="g1", region="eu", score=1,
                                                       title="x")  # actual: InvalidQuery (ConsistentRead on GSI)
    assert not created and obj.item_id == "g1"
    raw = dynorm.backend.call("Scan", {"TableName": TenantKeys.table_name()})["Items"]
    assert len(raw) == 1




def _stage_rv(project: Project, version: str, rv: list[str] | None) -> Any:
    return project.stage(MULTIKEY_TABLES, MULTIKEY_MODELS_RV.format(pkg=project.pkg, version=version, rv=rv))


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


def test_queryset_delete_through_a_multi_attribute_gsi_deletes_what_it_reports(project: Project) -> None:
    """v2 app in the expand window (read_versions=["v2", "v1"], items still at v1): the
    multi-attribute GSI returns the v1 items; qs.delete() reports 2 deleted, but it deletes the
    v2 keys (which do not exist) and both items stay in the table."""
    m = _stage_rv(project, "v1", None)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    m.Widget.objects.bulk_create([m.Widget(widget_id=f"w{i}", maker="m", size=i) for i in range(3)])
    m = _stage_rv(project, "v2", ["v2", "v1"])
    n = m.Widget.objects.filter(maker="m", size__lt=2).delete()
    left = sorted(i["PK"]["S"] for i in widgets(project.table))
    assert (n, left) == (2, ["v1#W#w2"])  # actual: (2, ['v1#W#w0', 'v1#W#w1', 'v1#W#w2'])


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
    return project.stage(GSIS_TABLES.format(gsis=gsis),
                         MODELS_T.format(pkg=project.pkg, sizefield=sizefield, indexes=indexes))


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
    m = _stage_t(project, {"GSI1": ("GSI1PK", "GSI1SK"), "ByMaker": BY_MAKER_GSI},
                 "Integer", "{'by_maker': Index('ByMaker', pk=('maker',), sk=('size',)), "
                            "'old': Index('GSI1', pk='M#{maker}', sk='S#{size}')}")
    try:
        project.makemigrations()
        project.executor().migrate(MigrateOptions())
    except MigrationError:
        return  # refused before anything changed: acceptable
    got = [w.widget_id for w in m.Widget.objects.filter(maker="m")]  # actual: UnreadableItems
    assert got == ["w0", "w1", "w2"]


# -- Copies under older key versions, foreign items, aggregate key sizes ---------------------------

class RolloutRolls(Table):
    class Meta:
        table_name = "mk_rollout_rolls"
        gsis = {"ByMaker": {"pk": {"maker": "S"}, "sk": {"size": "N"}}}


class RolloutRoll(Entity):
    roll_id = fields.String()
    maker = fields.String(null=True)
    size = fields.Integer(null=True)
    note = fields.String(null=True)

    class Meta:
        table = RolloutRolls
        entity_type = "ROLL"
        key_version = "v3"
        read_versions = ["v3", "v2"]
        pk = "{version}#R#{roll_id}"
        sk = "METADATA"
        indexes = {"by_maker": Index("ByMaker", pk=("maker",), sk=("size",))}


def _put_roll(version: str, roll_id: str, size: int, note: str) -> None:
    dynorm.backend.call("PutItem", {"TableName": RolloutRolls.table_name(), "Item": {
        "PK": {"S": f"{version}#R#{roll_id}"}, "SK": {"S": "METADATA"}, "entityType": {"S": "ROLL"},
        "roll_id": {"S": roll_id}, "maker": {"S": "m"}, "size": {"N": str(size)}, "note": {"S": note}}})


def _raw_roll(version: str, roll_id: str) -> dict[str, Any] | None:
    return dynorm.backend.call("GetItem", {"TableName": RolloutRolls.table_name(), "ConsistentRead": True, "Key": {
        "PK": {"S": f"{version}#R#{roll_id}"}, "SK": {"S": "METADATA"}}}).get("Item")


def _rollout_leftover(roll_id: str) -> None:
    """The current (v3) item was updated to size 5 after a copy-mode rekey; the v2 copy is stale."""
    _put_roll("v3", roll_id, 5, "current")
    _put_roll("v2", roll_id, 2, "stale")


@pytest.mark.parametrize("extra", [{"size": 2}, {"note": "stale"}])
def test_get_with_whole_key_and_a_check_does_not_return_a_shadowed_older_copy(extra: dict[str, Any]) -> None:
    """get(<whole primary key>, size=2) is a GetItem with a check. The current item exists but
    fails the check, and get() then falls back to read_versions and returns the stale v2 copy,
    which iteration of the same queryset (and get() of the key alone) never returns: an item
    under the current keys exists, so the older copy is not the item."""
    _rollout_leftover("r1")
    assert list(RolloutRoll.objects.filter(roll_id="r1", **extra)) == []  # iteration: no match
    with pytest.raises(RolloutRoll.DoesNotExist):
        got = RolloutRoll.objects.get(roll_id="r1", **extra)
        pytest.fail(f"returned the shadowed copy: note={got.note!r} fallback={got._state.fallback!r}")


def test_aget_with_whole_key_and_a_check_does_not_return_a_shadowed_older_copy() -> None:
    _rollout_leftover("r1")

    async def run() -> Any:
        return await RolloutRoll.objects.aget(roll_id="r1", size=2)

    with pytest.raises(RolloutRoll.DoesNotExist):
        asyncio.run(run())


def test_saving_what_get_returned_does_not_overwrite_the_current_item_with_the_stale_copy() -> None:
    """The consequence: the instance get() returned is the stale copy marked as read at v2; its
    save() moves it (the current item exists, so the leftover is deleted) and writes its stale
    values over the current item: size 5 (acknowledged at v3) is replaced by the stale 2."""
    _rollout_leftover("r1")
    try:
        obj = RolloutRoll.objects.get(roll_id="r1", size=2)
    except RolloutRoll.DoesNotExist:
        return  # fixed: nothing stale to save
    obj.note = "edited"
    obj.save()
    cur = _raw_roll("v3", "r1")
    assert cur is not None and cur["size"] == {"N": "5"}, cur  # actual: {"N": "2"}


def test_get_or_create_with_whole_key_does_not_answer_with_a_shadowed_older_copy() -> None:
    """get_or_create(roll_id, size=2): the item under the key has size 5. The docs: get_or_create
    says AlreadyExists when the item under the key differs; it returns the stale v2 copy
    (created=False) instead."""
    _rollout_leftover("r1")
    try:
        obj, created = RolloutRoll.objects.get_or_create(roll_id="r1", size=2, defaults={"note": "new"})
    except dynorm.AlreadyExists:
        return
    pytest.fail(f"got the stale copy: created={created} note={obj.note!r} fallback={obj._state.fallback!r}")


def test_update_or_create_with_whole_key_does_not_update_a_non_matching_current_item() -> None:
    """update_or_create(roll_id, size=2, defaults=...): the item under the key has size 5. get()
    answers with the shadowed v2 copy (size 2), so the defaults are written to the current item,
    which does not match the lookups (Django: the lookups name the row that is updated)."""
    _rollout_leftover("r1")
    try:
        RolloutRoll.objects.update_or_create(roll_id="r1", size=2, defaults={"note": "x"})
    except dynorm.AlreadyExists:
        pass
    cur = _raw_roll("v3", "r1")
    assert cur is not None and cur["note"] == {"S": "current"}, cur  # actual: note "x" on the size-5 item


def test_update_or_create_whose_lookups_differ_from_the_item_under_the_key_says_already_exists() -> None:
    """No version copies at all: update_or_create(roll_id="r2", size=2) while the item under the
    key has size 5. get_or_create says AlreadyExists for this; update_or_create retries 5 times
    and raises StaleWrite "lost the race 5 times" though nothing raced."""
    _put_roll("v3", "r2", 5, "current")
    with dynorm.capture() as cap:
        with pytest.raises(dynorm.AlreadyExists):
            RolloutRoll.objects.update_or_create(roll_id="r2", size=2, defaults={"note": "x"})
    assert len(cap.requests) <= 3, cap.operations
    cur = _raw_roll("v3", "r2")
    assert cur is not None and cur["note"] == {"S": "current"} and cur["size"] == {"N": "5"}


def _ghosts(n: int) -> None:
    """Items of a type this process declares no model for (a renamed type, another service)
    holding the index's attributes, sorted before every item of the entity."""
    for k in range(n):
        dynorm.backend.call("PutItem", {"TableName": TenantKeys.table_name(), "Item": {
            "PK": {"S": "T#t"}, "SK": {"S": f"G#{k}"}, "entityType": {"S": "ghost"},
            "tenant_id": {"S": "t"}, "region": {"S": "eu"}, "score": {"N": "-1"}, "title": {"S": f"g{k:02d}"}}})


@pytest.mark.parametrize("call", ["first", "exists", "slice", "page"])
def test_first_behind_foreign_items_on_a_multi_attribute_gsi_costs_a_few_requests(call: str) -> None:
    """No type filter is sent (no declared entity shares the attributes) and no read-ahead is
    done, while iteration drops the foreign items after reading them: first()/exists()/qs[:2]/
    page() send one Query with Limit 1 (or 2) per foreign item. The docs: behind anything that
    drops items "the following requests read ahead (8, 64, ... items), so a few requests find
    the first match"; count() already filters on the type attribute."""
    _ghosts(30)
    for i in range(3):
        TenantItem.objects.create(tenant_id="t", item_id=f"i{i}", region="eu", score=i, title="x")
    qs = TenantItem.objects.filter(tenant_id="t", region="eu")
    with dynorm.capture() as cap:
        if call == "first":
            assert qs.first().item_id == "i0"  # type: ignore[union-attr]
        elif call == "exists":
            assert qs.exists()
        elif call == "slice":
            assert [i.item_id for i in qs[:2]] == ["i0", "i1"]
        else:
            assert [i.item_id for i in qs.page(size=2).items] == ["i0", "i1"]
    assert len(cap.requests) <= 4, f"{len(cap.requests)} requests"  # actual: 31 / 31 / 16 / 11


def test_collection_on_a_multi_attribute_gsi_reads_each_item_once_as_get_would() -> None:
    """collection(using=<multi-attribute GSI>) sets entity_types=None, so the version-copy logic
    (_versioned_reads) is skipped: it yields the stale v2 copy next to the current v3 item and a
    copy at v1, a version this entity does not read. filter() on the same index gives r1 (current)
    and r3 (only at v2); docs: "A read through it gives each item once, as get() would"."""
    _put_roll("v3", "r1", 1, "current")
    _put_roll("v2", "r1", 1, "stale")
    _put_roll("v1", "r2", 2, "ancient")
    _put_roll("v2", "r3", 3, "old-only")
    assert [(r.roll_id, r.note) for r in RolloutRoll.objects.using("by_maker").filter(maker="m")] == [
        ("r1", "current"), ("r3", "old-only")]
    got = [(type(r).__name__, r.roll_id, r.note) for r in RolloutRoll.objects.collection(using="by_maker", maker="m")]
    assert got == [("RolloutRoll", "r1", "current"), ("RolloutRoll", "r3", "old-only")], got
    assert RolloutRoll.objects.collection(using="by_maker", maker="m").count() == 2


def test_adding_a_condition_the_item_meets_does_not_lose_an_item_read_at_an_older_version() -> None:
    """During a rollout r3 exists only at v2 (read_versions). The multi-attribute GSI finds it:
    filter(maker="m", size__gte=2) == [r3]. Adding roll_id="r3", which r3 meets, makes the planner
    prefer the whole primary key: a Query on the v3 key with a filter, no read_versions fallback,
    and r3 is lost ([]). get(roll_id="r3") and get(roll_id="r3", size=3) find it;
    get(roll_id="r3", size__gte=2) raises DoesNotExist."""
    _put_roll("v2", "r3", 3, "old-only")
    assert [r.roll_id for r in RolloutRoll.objects.filter(maker="m", size__gte=2)] == ["r3"]
    assert RolloutRoll.objects.get(roll_id="r3", size=3).note == "old-only"
    assert RolloutRoll.objects.get(roll_id="r3", size__gte=2).note == "old-only"  # actual: DoesNotExist
    assert [r.roll_id for r in RolloutRoll.objects.filter(maker="m", size__gte=2, roll_id="r3")] == ["r3"]  # actual: []


def test_explain_count_shows_the_request_count_sends_on_a_versioned_multi_attribute_gsi() -> None:
    """docs/querying.md: "explain() returns the first request exactly": count() sends
    qs.explain(count=True). On a multi-attribute GSI of an entity whose primary key holds
    {version}, explain(count=True) shows Select=COUNT with a type filter, while count() sends a
    keys-only Query (ProjectionExpression, no Select, no filter) plus a BatchGetItem."""
    _put_roll("v3", "r1", 1, "current")
    _put_roll("v2", "r1", 1, "stale")
    _put_roll("v2", "r2", 2, "old")
    qs = RolloutRoll.objects.filter(maker="m", size__exists=True)  # a roll without a size is not in ByMaker
    with dynorm.capture() as cap:
        assert qs.count() == 2
    assert cap.requests[0].params == qs.explain(count=True).params


@pytest.mark.parametrize("how", ["get_or_create", "update_or_create"])
def test_get_or_create_with_a_check_does_not_shadow_an_item_stored_at_an_older_version(how: str) -> None:
    """r3 exists only at v2 (read_versions lists it) with size 4 and note "precious".
    get_or_create(roll_id="r3", size=3): the GetItem with a check misses at v3, the v2 fallback
    fails the check, so it creates r3 at v3 (attribute_not_exists holds there): created=True,
    and from then on get(roll_id="r3") and the index return the new item; "precious" is lost to
    every read. The item under the key differs: AlreadyExists, as without key versions."""
    _put_roll("v2", "r3", 4, "precious")
    with pytest.raises(dynorm.AlreadyExists):
        getattr(RolloutRoll.objects, how)(roll_id="r3", size=3, defaults={"maker": "m"})
    assert _raw_roll("v3", "r3") is None
    assert RolloutRoll.objects.get(roll_id="r3").note == "precious"


def test_create_does_not_shadow_an_item_stored_at_an_older_version() -> None:
    """(Not specific to multi-attribute GSIs.) create() is conditional on attribute_not_exists
    at the current key only: with r3 at v2 (read_versions), create(roll_id="r3") succeeds at v3
    and get() (and every index read) stops returning the v2 item: its note is lost to reads.
    Django: create() of an existing primary key fails (dynorm: AlreadyExists)."""
    _put_roll("v2", "r3", 4, "precious")
    with pytest.raises(dynorm.AlreadyExists):
        RolloutRoll.objects.create(roll_id="r3", size=1)
    assert RolloutRoll.objects.get(roll_id="r3").note == "precious"


_GIZMO = """

class Gizmo(Entity):
    gizmo_id = fields.String()
    size = fields.String(null=True)

    class Meta:
        table = MigShop
        entity_type = "GIZMO"
        pk = "G#{gizmo_id}"
        sk = "METADATA"
"""


def test_makemigrations_refuses_a_multi_attribute_gsi_that_another_entity_stores_with_another_type(
        project: Project) -> None:
    """Widget's pattern moves onto ByMaker (sk `size` N). Gizmo, another entity of the table,
    stores its own `size` as S. Table.check() says so ("DynamoDB would refuse every write of a
    Gizmo with a value there"), yet makemigrations emits the SyncIndexes and migrate applies it:
    from then on every Gizmo write with a size fails (ValidationException: Type mismatch for
    Index Key), and on DynamoDB the backfill leaves the stored Gizmo items out. makemigrations
    refuses a stored-type change of the moved entity's own field; it must refuse this too."""
    models = stage_indexed(project, {"GSI1": ("GSI1PK", "GSI1SK")}, "{'by_maker': " + BY_MAKER_TEMPLATE + "}" + _GIZMO)
    project.makemigrations()
    project.executor().migrate(MigrateOptions())
    models.Gizmo.objects.create(gizmo_id="g1", size="XL")
    models = stage_indexed(project, {"GSI1": ("GSI1PK", "GSI1SK"), "ByMaker": BY_MAKER_GSI},
                    "{'by_maker': " + BY_MAKER_MULTI + ", 'by_maker_old': " + BY_MAKER_TEMPLATE + "}" + _GIZMO)
    assert project.table.check()  # the conflict is known before any I/O
    refused = False
    try:
        project.makemigrations()
        project.executor().migrate(MigrateOptions())
    except MigrationError:
        refused = True
    models.Gizmo.objects.create(gizmo_id="g2", size="S")  # actual: ServiceError, Type mismatch for Index Key
    assert refused


def test_aggregate_key_size_of_a_multi_attribute_gsi_is_refused_before_any_request() -> None:
    """dynorm checks each key attribute against 2048 (partition) / 1024 (sort) bytes on its own
    (docs: "key-size limits: each attribute on its own") and refuses over-long values with
    InvalidKeyValue before the request. DynamoDB limits the aggregate of the HASH attributes
    (and of the RANGE attributes): tenant_id and region of 1100 bytes each pass dynorm's check
    and the PutItem fails with ValidationException "Aggregate size for HASH key attributes
    tenant_id, region of index ByK has exceeded limit 2048 bytes"."""
    with dynorm.capture() as cap:
        with pytest.raises(dynorm.InvalidKeyValue):
            TenantItem.objects.create(tenant_id="t" * 1100, item_id="i", region="r" * 1100, score=1, title="a")
    assert cap.operations == []
    with dynorm.capture() as cap:
        with pytest.raises(dynorm.InvalidKeyValue):
            TenantItem.objects.create(tenant_id="t", item_id="j", region="eu", score=1, title="x" * 1024)
    assert cap.operations == []


def test_a_condition_beyond_the_key_does_not_return_a_shadowed_older_copy() -> None:
    """A Query on the whole primary key (a range condition GetItem cannot check) falls back to
    read_versions only when nothing is stored under the current key: the v3 item (size 5) fails
    size__lte=3 and shadows the stale v2 copy (size 2)."""
    _rollout_leftover("r1")
    qs = RolloutRoll.objects.filter(roll_id="r1", size__lte=3)
    assert qs.explain().operation == "Query" and qs.explain().index is None
    with dynorm.capture() as cap:
        assert list(qs) == []
    assert cap.operations == ["Query"]  # something is stored under v3: no fallback request
    with pytest.raises(RolloutRoll.DoesNotExist):
        RolloutRoll.objects.get(roll_id="r1", size__lte=3)


def test_an_item_found_by_the_whole_key_query_at_an_older_version_is_moved_on_save() -> None:
    _put_roll("v2", "r3", 3, "old-only")
    with dynorm.capture() as cap:
        obj = RolloutRoll.objects.get(roll_id="r3", size__gte=2)
    assert cap.operations == ["Query", "Query"]  # v3 (nothing stored), then v2
    assert obj._state.fallback == "v2"
    obj.note = "edited"
    obj.save()
    assert _raw_roll("v2", "r3") is None
    cur = _raw_roll("v3", "r3")
    assert cur is not None and cur["note"] == {"S": "edited"} and cur["size"] == {"N": "3"}


def test_create_during_a_rollout_is_one_transaction_and_without_read_versions_one_putitem(io: Any) -> None:
    with dynorm.capture() as cap:
        io(RolloutRoll.objects, "create", roll_id="new", size=1)
    assert cap.operations == ["TransactWriteItems"]
    cur = _raw_roll("v3", "new")
    assert cur is not None and cur["size"] == {"N": "1"}
    with dynorm.capture() as cap:
        TenantItem.objects.create(tenant_id="t", item_id="i", region="eu", score=1, title="a")
    assert cap.operations == ["PutItem"]


def test_create_and_get_or_create_do_not_shadow_an_item_stored_at_an_older_version(io: Any) -> None:
    _put_roll("v2", "r3", 4, "precious")
    with pytest.raises(dynorm.AlreadyExists, match="older key version 'v2'"):
        io(RolloutRoll.objects, "create", roll_id="r3", size=1)
    with pytest.raises(dynorm.AlreadyExists):
        io(RolloutRoll.objects, "get_or_create", roll_id="r3", size=3)
    assert _raw_roll("v3", "r3") is None
    assert RolloutRoll.objects.get(roll_id="r3").note == "precious"


def test_update_past_the_aggregate_key_size_is_refused_before_any_request() -> None:
    obj = TenantItem.objects.create(tenant_id="t", item_id="u", region="eu", score=1, title="x" * 1000)
    with dynorm.capture() as cap:
        with pytest.raises(dynorm.InvalidKeyValue, match="score .*title|title .*score"):
            obj.update(title="x" * 1023)
        with pytest.raises(dynorm.InvalidKeyValue):
            obj.title = "y" * 1023
            obj.save()
    assert cap.operations == []
    obj = TenantItem.objects.get(tenant_id="t", item_id="u")
    assert obj.title == "x" * 1000
    obj.update(title="z" * 1022)  # 2 bytes for the number 1 + 1022: exactly the limit
    assert TenantItem.objects.get(tenant_id="t", item_id="u").title == "z" * 1022


def test_count_and_exists_on_the_whole_key_with_a_condition_fall_back_as_iteration_does(io: Any) -> None:
    _put_roll("v2", "r3", 3, "old-only")
    _rollout_leftover("r1")
    qs = RolloutRoll.objects.filter(roll_id="r3", size__gte=2)
    with dynorm.capture() as cap:
        assert io(qs, "count") == 1
    assert cap.operations == ["Query", "Query"]
    assert cap.requests[0].params == qs.explain(count=True).params
    assert io(qs, "exists")
    shadowed = RolloutRoll.objects.filter(roll_id="r1", size__lte=3)  # v3 exists (size 5): no fallback
    with dynorm.capture() as cap:
        assert io(shadowed, "count") == 0
    assert cap.operations == ["Query"]
    assert not io(shadowed, "exists")
