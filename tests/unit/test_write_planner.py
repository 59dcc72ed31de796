"""The pure write planners, without I/O: exact request parameters from (options, values).

Test-local entities (on tests.models' Retail table, so no extra table is created), not the demo's.
"""

from __future__ import annotations

import decimal
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dynorm
from dynorm import Entity, F, Index, Q, fields, registry
from dynorm.migrations.state import entity_state
from dynorm.options import build_options
from dynorm.schema import attribute_types, plan_sync
from dynorm.writes import prepare_check, prepare_delete, prepare_put, prepare_update
from tests.models import Retail


class MyInt(fields.Integer):
    """A user's subclass: keeps its base's capabilities."""


class MyVersion(fields.Version):
    pass


class Doc(Entity):
    doc_id = fields.String()
    title = fields.String()
    owner = fields.String(null=True)
    pages = MyInt(default=0)
    tags = fields.Set(str)
    rev = MyVersion()

    class Meta:
        table = Retail
        entity_type = "DOC"
        pk = "{version}#DOC#{doc_id}"
        sk = "METADATA"
        indexes = {"by_owner": Index("GSI1", pk="{version}#DOWNER#{owner}", sk="D#{doc_id}")}


class Memo(Entity):  # unversioned
    memo_id = fields.String()
    body = fields.String(null=True)
    hits = fields.Integer(default=0)

    class Meta:
        table = Retail
        entity_type = "MEMO"
        pk = "{version}#MEMO#{memo_id}"
        sk = "METADATA"


def _read(model: type[Entity], **values: Any) -> Any:
    """An instance as if read from the table (no I/O)."""
    obj = model(**values)
    item = {"PK": {"S": model._meta.key_attributes(obj.attribute_values)["PK"]},
            "SK": {"S": model._meta.key_attributes(obj.attribute_values)["SK"]},
            "entityType": {"S": model._meta.entity_type}}
    for name, value in obj.attribute_values.items():
        f = model._meta.fields.get(name)
        if f is not None and value is not None and f.serialize(value) is not None:
            item[f.attr_name] = {f.attr_type: f.serialize(value)}
    return model.from_raw_data(item)


def _expr(params: dict[str, Any], key: str) -> str:
    """An expression with its #name placeholders replaced by the attribute names."""
    text = params[key]
    for ph, name in sorted(params.get("ExpressionAttributeNames", {}).items(), key=lambda kv: -len(kv[0])):
        text = text.replace(ph, name)
    return str(text)


def test_a_new_versioned_instance_is_one_put_that_refuses_to_overwrite() -> None:
    doc = Doc(doc_id="d1", title="T", owner="ann")
    op = prepare_put(doc)
    assert op.kind == "Put" and op.verb == "save"
    item = op.params["Item"]
    assert item["PK"] == {"S": "v1#DOC#d1"} and item["GSI1PK"] == {"S": "v1#DOWNER#ann"}
    assert item["rev"] == {"N": "1"} and item["entityType"] == {"S": "DOC"}
    assert len(item["_dynorm_rev"]["S"]) == 16
    assert _expr(op.params, "ConditionExpression") == "attribute_not_exists(PK)"
    assert doc.rev is None and doc._state.adding  # planning changes nothing


def test_saving_a_read_instance_is_an_update_that_keeps_undeclared_attributes() -> None:
    doc = _read(Doc, doc_id="d1", title="T", owner="ann", rev=3)
    doc.owner = None
    op = prepare_put(doc)
    assert op.kind == "Update"
    expression = _expr(op.params, "UpdateExpression")
    assert re.match(r"SET entityType = :v\d+, doc_id = ", expression)
    assert "rev = " in expression and "_dynorm_rev = " in expression
    assert expression.endswith("REMOVE owner, tags, GSI1PK, GSI1SK")  # None, empty set, sparse index
    # the item read must still be there, a DOC (never another entity type's item under this key), at version 3
    assert _pinned(op) == "(entityType = 'DOC') AND (rev = '3')"
    values = op.params["ExpressionAttributeValues"]
    assert {"N": "4"} in values.values() and {"N": "3"} in values.values()
    assert doc.rev == 3  # only applied() changes it


def test_update_fields_plans_only_those_fields_and_their_index_keys() -> None:
    doc = _read(Doc, doc_id="d1", title="T", owner="ann", rev=1)
    doc.owner = "bob"
    doc.title = "not written"
    op = prepare_put(doc, update_fields=["owner"])
    expression = _expr(op.params, "UpdateExpression")
    assert "title" not in expression
    assert "owner = " in expression and "GSI1PK = " in expression and "GSI1SK = " in expression
    assert {"S": "v1#DOWNER#bob"} in op.params["ExpressionAttributeValues"].values()
    assert _pinned(op) == "(entityType = 'DOC') AND (rev = '1')"  # there, a DOC, at the version read


def test_an_unversioned_idempotent_update_carries_the_token_guard() -> None:
    op = prepare_update(Memo, key={"memo_id": "m"}, changes={"hits": 5})
    cond = _expr(op.params, "ConditionExpression")
    assert "attribute_not_exists(_dynorm_rev) OR _dynorm_rev <> " in cond
    assert op.params["ExpressionAttributeValues"][cond.rsplit(" ", 1)[-1].rstrip(")")] == {"S": op.token}
    assert op.request()[1]["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
    assert not op.once


def test_an_unversioned_increment_is_planned_once_only() -> None:
    # F() arithmetic without a version condition: applied exactly once through a TransactWriteItems
    # with a ClientRequestToken (the token guard cannot close the lost-response window)
    op = prepare_update(Memo, key={"memo_id": "m"}, changes={"hits": F("hits") + 1})
    assert op.once
    assert "_dynorm_rev <>" not in _expr(op.params, "ConditionExpression")


def test_a_versioned_update_relies_on_the_version_check() -> None:
    doc = _read(Doc, doc_id="d1", title="T", rev=2)
    op = prepare_update(Doc, instance=doc, changes={"pages": F("pages") + 1})
    assert "_dynorm_rev <>" not in _expr(op.params, "ConditionExpression")
    assert "_dynorm_rev = " in _expr(op.params, "UpdateExpression")


def test_set_subclass_and_delete_and_check_plans() -> None:
    doc = _read(Doc, doc_id="d1", title="T", rev=2)
    op = prepare_update(Doc, instance=doc, changes={"tags": F("tags").add({"a"})})
    assert " ADD tags :v" in _expr(op.params, "UpdateExpression")
    d = prepare_delete(Doc, doc)
    assert d.kind == "Delete" and d.token is None and _pinned(d) == "(entityType = 'DOC') AND (rev = '2')"
    c = prepare_check(Memo, {"memo_id": "m"}, Q(hits__gte=1))
    assert c.kind == "ConditionCheck"
    assert _pinned(c) == "(attribute_not_exists(PK) OR entityType = 'MEMO') AND (hits >= '1')"


def _placeholders_agree(params: dict[str, Any]) -> None:
    """Every #name/:value placeholder the expressions use is defined once, and every one defined is used."""
    text = " ".join(params.get(k, "") for k in ("UpdateExpression", "ConditionExpression"))
    used = set(re.findall(r"[#:][A-Za-z0-9_]+", text))
    defined = [*params.get("ExpressionAttributeNames", {}), *params.get("ExpressionAttributeValues", {})]
    assert len(defined) == len(set(defined)) and used == set(defined), (used, defined)


def test_the_entity_type_condition_is_a_group_of_its_own_beside_the_version_token_and_a_users_condition() -> None:
    """Writes by key are conditional on the stored entity type; an OR inside any condition never binds
    to the AND around it, and no group is wrapped twice (DynamoDB refuses redundant parentheses)."""
    memo = prepare_update(Memo, key={"memo_id": "m"}, changes={"body": "x"}, condition=Q(hits=0) | ~Q(body="y"))
    assert _pinned(memo) == ("(entityType = 'MEMO') AND (attribute_not_exists(_dynorm_rev) OR _dynorm_rev <> "
                             f"'{memo.token}') AND (hits = '0' OR (NOT body = 'y'))")
    doc = prepare_update(Doc, instance=_read(Doc, doc_id="d1", title="T", rev=2), changes={"title": "x"},
                         condition=Q(pages=1) | Q(owner="a"))
    assert _pinned(doc) == "(entityType = 'DOC') AND (rev = '2') AND (pages = '1' OR owner = 'a')"
    gone = prepare_delete(Memo, {"memo_id": "m"}, condition=Q(hits=0) | Q(body="b"))
    assert _pinned(gone) == "(attribute_not_exists(PK) OR entityType = 'MEMO') AND (hits = '0' OR body = 'b')"
    assert _pinned(prepare_delete(Memo, {"memo_id": "m"})) == "attribute_not_exists(PK) OR entityType = 'MEMO'"
    upsert = prepare_put(Memo(memo_id="m", body="b"))  # a new unversioned instance: may create the item
    assert upsert.kind == "Update" and upsert.may_create
    assert _pinned(upsert) == "attribute_not_exists(PK) OR entityType = 'MEMO'"
    read = prepare_put(_read(Memo, memo_id="m", body="b"))  # read from the table: must still be there
    assert not read.may_create and _pinned(read) == "entityType = 'MEMO'"
    check = prepare_check(Memo, {"memo_id": "m"}, ~(Q(hits=0) & Q(body="b")))
    assert _pinned(check) == "(attribute_not_exists(PK) OR entityType = 'MEMO') AND (NOT (hits = '0' AND body = 'b'))"
    for op in (memo, doc, gone, upsert, read, check):
        _placeholders_agree(op.params)


def test_tokens_are_fresh_per_write() -> None:
    doc = Doc(doc_id="d1", title="T")
    assert len({prepare_put(doc).token for _ in range(100)}) == 100


def test_capabilities_not_class_names() -> None:
    assert Doc._meta.version_field == "rev"
    assert entity_state(Doc).fields["doc_id"] == ["doc_id", "String"]
    meta = build_options("X", type("Meta", (), {"table": Retail, "pk": "X#{n}", "sk": "S"}),
                         {"n": MyInt(), "v": MyVersion()})
    assert meta.version_field == "v"
    assert attribute_types(Retail)["pages"] == "N"
    assert MyInt.kind == "Integer" and MyVersion.is_version and not MyInt.is_version


def test_plan_sync_of_a_missing_table_is_create_plus_ttl() -> None:
    actions = plan_sync(Retail, None)
    assert [a.operation for a in actions] == ["CreateTable", "UpdateTimeToLive"]


def test_a_field_stored_as_the_revision_attribute_is_refused() -> None:
    with pytest.raises(dynorm.ModelError, match="revision attribute"):
        type("BadRev", (Entity,), {"__module__": __name__, "a": fields.String(),
                                   "b": fields.String(attr_name="_dynorm_rev"),
                                   "Meta": type("Meta", (), {"table": Retail, "pk": "BR#{a}", "sk": "S",
                                                             "entity_type": "BADREV"})})


def test_an_ambiguous_reference_name_is_refused() -> None:
    def declare(et: str, pk: str) -> type:
        return type("Twin", (Entity,), {"__module__": f"{__name__}_{et}", "a": fields.String(),
                                        "Meta": type("Meta", (), {"table": Retail, "pk": pk, "sk": "S",
                                                                  "entity_type": et})})

    declare("TWIN_A", "TWA#{a}")
    ref = fields.Reference("Twin")
    assert ref.target.__module__.endswith("TWIN_A")
    with pytest.raises(dynorm.ModelError, match="ambiguous"):
        declare("TWIN_B", "TWB#{a}")
    assert "TWIN_B" not in Retail._entities
    assert registry.entity_named(f"{__name__}_TWIN_A.Twin") is ref.target


@settings(deadline=None)  # a shared machine: the first example may be slow
@given(st.dictionaries(st.sampled_from(["title", "owner", "pages"]),
                       st.one_of(st.none(), st.text(min_size=1, max_size=8), st.integers(0, 10**6)), max_size=3))
def test_save_update_sets_exactly_the_put_item(changes: dict[str, Any]) -> None:
    # differential: the UpdateItem of a read instance writes what a PutItem of it would hold
    doc = _read(Doc, doc_id="d1", title="T", owner="ann", pages=1, rev=1)
    for name, value in changes.items():
        if name == "pages" and not isinstance(value, int) or name != "pages" and isinstance(value, int):
            continue
        if name == "title" and value is None:
            continue
        setattr(doc, name, value)
    op = prepare_put(doc)
    put = prepare_put(doc, create=True)
    values, names = op.params["ExpressionAttributeValues"], op.params["ExpressionAttributeNames"]
    set_part = op.params["UpdateExpression"].split(" REMOVE ")[0][4:]
    written = {names[a.split(" = ")[0]]: values[a.split(" = ")[1]] for a in set_part.split(", ")}
    expected = {k: v for k, v in put.params["Item"].items() if k not in ("PK", "SK")}
    written["rev"] = expected["rev"] = {"N": "x"}
    written["_dynorm_rev"] = expected["_dynorm_rev"] = {"S": "x"}
    assert written == expected
    removed = set(names[p] for p in op.params["UpdateExpression"].split(" REMOVE ")[1].split(", ")) \
        if " REMOVE " in op.params["UpdateExpression"] else set()
    assert removed.isdisjoint(written) and removed <= {"owner", "GSI1PK", "GSI1SK", "tags"}


def test_decimal_subclass_kind_is_inherited() -> None:
    class Money(fields.Decimal):
        pass

    assert Money.kind == "Decimal" and Money().serialize(decimal.Decimal("1.50")) in ("1.50", "1.5")


def test_a_save_expression_over_4_kb_is_refused_before_any_request() -> None:
    ns: dict[str, Any] = {"__module__": __name__, "k": fields.String(),
                          "Meta": type("Meta", (), {"table": Retail, "pk": "WIDE#{k}", "sk": "S",
                                                    "entity_type": "WIDE"})}
    ns.update({f"f{i}": fields.String(null=True) for i in range(400)})
    wide = type("Wide", (Entity,), ns)
    obj = _read(wide, k="a", **{f"f{i}": "x" for i in range(400)})
    with pytest.raises(dynorm.ValidationError, match="over DynamoDB's 4096-byte limit"):
        prepare_put(obj)
    assert prepare_put(obj, update_fields=["f1"]).kind == "Update"


class RolloutPart(Entity):
    """Written at v3 while v2 and v1 are still read (and v1 listed twice: checked once)."""

    part_id = fields.String()
    version = fields.Version()

    class Meta:
        table = Retail
        entity_type = "W_ROLLOUT_PART"
        key_version = "v3"
        read_versions = ["v3", "v2", "v1", "v2"]
        pk = "{version}#PART#{part_id}"
        sk = "METADATA"


def test_a_create_during_a_rollout_plans_one_check_per_older_key_and_an_update_none() -> None:
    from dynorm.writes import prepare_create_checks, prepare_older_checks

    put = prepare_put(RolloutPart(part_id="a"), create=True)
    checks = prepare_create_checks(put)
    assert [(c.kind, c.older_version, c.key["PK"]["S"]) for c in checks] == [
        ("ConditionCheck", "v2", "v2#PART#a"), ("ConditionCheck", "v1", "v1#PART#a")]
    assert all(c.params["ConditionExpression"] == "attribute_not_exists(#k) OR #t <> :t" for c in checks)
    err = checks[1].error(None)
    assert isinstance(err, dynorm.AlreadyExists) and "older key version 'v1'" in str(err)
    assert "RolloutPart" in str(err)
    assert len(prepare_create_checks(prepare_put(RolloutPart(part_id="b")))) == 2  # a new versioned instance
    read = RolloutPart.from_raw_data({"PK": {"S": "v3#PART#c"}, "SK": {"S": "METADATA"}, "part_id": {"S": "c"},
                                      "version": {"N": "1"}})
    update = prepare_put(read)
    assert update.kind == "Update" and prepare_create_checks(update) == []  # may overwrite: not a create
    assert len(prepare_older_checks(update)) == 2


class Shelf(Entity):  # unversioned; its GSI1 keys are built from three non-key fields
    shelf_id = fields.String()
    aisle = fields.String(null=True)
    label = fields.String(null=True)
    size = fields.Integer(default=0)
    note = fields.String(null=True)

    class Meta:
        table = Retail
        entity_type = "W21_SHELF"
        pk = "{version}#SHELF#{shelf_id}"
        sk = "METADATA"
        indexes = {"by_aisle": Index("GSI1", pk="{version}#AISLE#{aisle}", sk="L#{label}#S#{size}")}


def _pinned(op: Any) -> str:
    """The op's condition with placeholders replaced: names by attribute names, values by their text."""
    text = _expr(op.params, "ConditionExpression")
    for ph, av in sorted(op.params.get("ExpressionAttributeValues", {}).items(), key=lambda kv: -len(kv[0])):
        text = text.replace(ph, repr(next(iter(av.values()))))
    return text


def test_a_rewritten_index_key_pins_the_fields_it_is_built_from_at_the_values_read() -> None:
    shelf = _read(Shelf, shelf_id="s", aisle="a", label="x", size=3)
    op = prepare_update(Shelf, instance=shelf, changes={"aisle": "b"})
    cond = _pinned(op)
    assert "(label = 'x')" in cond and "(size = '3')" in cond
    assert op.pins == {"label": "x", "size": 3}
    assert {"S": "v1#AISLE#b"} in op.params["ExpressionAttributeValues"].values()
    shelf.aisle = "b"
    op = prepare_put(shelf, update_fields=["aisle"])  # save(update_fields): the same pins
    assert op.pins == {"label": "x", "size": 3} and "(label = 'x')" in _pinned(op)


def test_a_none_read_is_pinned_as_absent_and_a_default_also_matches_an_absent_attribute() -> None:
    shelf = _read(Shelf, shelf_id="s", aisle="a", size=0)
    cond = _pinned(prepare_update(Shelf, instance=shelf, changes={"aisle": "b"}))
    assert "(attribute_not_exists(label))" in cond
    assert "(size = '0')" in cond  # read as stored: pinned as stored
    item = {"PK": {"S": "v1#SHELF#t"}, "SK": {"S": "METADATA"}, "entityType": {"S": "W21_SHELF"},
            "shelf_id": {"S": "t"}, "aisle": {"S": "a"}}
    cond = _pinned(prepare_update(Shelf, instance=Shelf.from_raw_data(item), changes={"aisle": "b"}))
    assert "(attribute_not_exists(size))" in cond  # stored without it (read as the default 0)
    # a value the write did not read (a claim in the key) equal to the default also matches an absent one
    cond = _pinned(prepare_update(Shelf, key={"shelf_id": "t", "label": None, "size": 0}, changes={"aisle": "b"}))
    assert "(size = '0' OR attribute_not_exists(size))" in cond


def test_a_write_of_every_source_field_or_of_none_pins_nothing() -> None:
    shelf = _read(Shelf, shelf_id="s", aisle="a", label="x", size=3)
    assert prepare_update(Shelf, instance=shelf, changes={"aisle": "b", "label": "y", "size": 4}).pins == {}
    op = prepare_update(Shelf, instance=shelf, changes={"note": "n"})  # no index key rewritten
    assert op.pins == {} and "GSI1" not in _expr(op.params, "UpdateExpression")
    blind = Shelf(shelf_id="s", note="n")  # never read, but nothing derived from what it does not know
    assert prepare_put(blind, update_fields=["note"]).pins == {}


@pytest.mark.parametrize("plan", [
    lambda: prepare_put(Shelf(shelf_id="s", aisle="b"), update_fields=["aisle"]),
    lambda: prepare_put(Shelf(shelf_id="s", aisle="b", label=None, size=0), update_fields=["aisle"]),
    lambda: prepare_update(Shelf, key={"shelf_id": "s"}, changes={"aisle": "b"}),
    lambda: prepare_update(Shelf, key={"shelf_id": "s"}, changes={"aisle": "b", "label": "x"}),
    lambda: prepare_update(Shelf, instance=Shelf(shelf_id="s"), changes={"aisle": "b"}),
])
def test_a_source_field_the_write_does_not_know_refuses_it(plan: Any) -> None:
    with pytest.raises(dynorm.ValidationError) as err:
        plan()
    assert err.value.entity == "Shelf" and err.value.field in ("label", "size")
    message = str(err.value)
    assert "by_aisle (GSI1: GSI1PK, GSI1SK)" in message and "read the item first" in message


def test_a_key_dict_naming_the_other_fields_pins_them() -> None:
    op = prepare_update(Shelf, key={"shelf_id": "s", "label": "x", "size": 3}, changes={"aisle": "b"})
    assert op.pins == {"label": "x", "size": 3}


def test_a_broken_pin_maps_to_stale_write_naming_the_field_and_both_values() -> None:
    shelf = _read(Shelf, shelf_id="s", aisle="a", label="x", size=3)
    op = prepare_update(Shelf, instance=shelf, changes={"aisle": "b"})
    now = _read(Shelf, shelf_id="s", aisle="a", label="y", size=3)
    raw = {"PK": {"S": "v1#SHELF#s"}, "SK": {"S": "METADATA"}, "entityType": {"S": "W21_SHELF"},
           "shelf_id": {"S": "s"}, "aisle": {"S": "a"}, "label": {"S": now.label}, "size": {"N": "3"}}
    error = op.error(None, raw_item=raw)
    assert isinstance(error, dynorm.StaleWrite)
    assert "label is 'y' in the table, not 'x'" in str(error) and "refresh_from_db()" in str(error)
    raw["label"] = {"S": "x"}  # the pins hold: another condition failed
    assert isinstance(prepare_update(Shelf, instance=shelf, changes={"aisle": "b"}, condition=Q(note="z")).error(
        None, raw_item=raw), dynorm.ConditionFailed)
