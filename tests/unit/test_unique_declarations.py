"""Unique constraints declared as Django spells them, refused at class creation when they cannot work,
and their sentinel actions planned without I/O."""

from __future__ import annotations

import pytest

import dynorm
from dynorm import Entity, UniqueConstraint, fields
from dynorm.constraints import SENTINEL_PREFIX, sentinel_pk
from dynorm.transaction import MAX_ACTIONS, Transaction
from dynorm.writes import prepare_delete, prepare_put, prepare_update
from tests.models import Member, Retail


def _entity(name: str, constraints: list | None = None, **extra: object) -> type:
    attrs: dict = {"item_id": fields.String(), "email": fields.String(null=True), "tags": fields.Set(str),
                   **extra,
                   "Meta": type("Meta", (), {"table": Retail, "entity_type": name.upper(), "pk": "U#{item_id}",
                                             "sk": "METADATA", **({"constraints": constraints}
                                                                  if constraints is not None else {})})}
    return type(name, (Entity,), attrs)


def test_unique_field_and_meta_constraints_are_exported_and_resolved() -> None:
    assert dynorm.UniqueConstraint is UniqueConstraint and issubclass(dynorm.IntegrityError, dynorm.DynormError)
    assert [c.name for c in Member._meta.constraints] == ["unique_email", "unique_handle_per_tenant"]
    assert Member._meta.unique_fields == ("email", "tenant_id", "handle")


@pytest.mark.parametrize(("constraints", "extra", "message"), [
    ([UniqueConstraint(fields=["nope"], name="u")], {}, "'nope', which is not a field"),
    ([UniqueConstraint(fields=["tags"], name="u")], {}, "a Set field"),
    ([UniqueConstraint(fields=["item_id"], name="u")], {}, "already enforced by the key itself"),
    ([UniqueConstraint(fields=["email", "item_id"], name="u")], {}, "covers every primary-key field"),
    ([UniqueConstraint(fields=["email"], name="a"), UniqueConstraint(fields=["email"], name="b")], {},
     "constrain the same fields"),
    ([UniqueConstraint(fields=["email"], name="unique_code")], {"code": fields.String(unique=True)},
     "two unique constraints are named 'unique_code'"),
    ([UniqueConstraint(fields=[], name="u")], {}, "needs distinct field names"),
    (["email"], {}, "is not a dynorm.UniqueConstraint"),
])
def test_bad_declarations_are_refused_at_class_creation(constraints: list, extra: dict, message: str) -> None:
    with pytest.raises(dynorm.ModelError, match=message):
        _entity("Bad", constraints, **extra)


def test_sentinel_keys_escape_the_separator_and_refuse_oversized_values() -> None:
    c = Member._meta.constraints[1]
    a = sentinel_pk("MEMBER", c, Member._meta.fields, ["a#b", "c"])
    b = sentinel_pk("MEMBER", c, Member._meta.fields, ["a", "b#c"])
    assert a != b and a.startswith(SENTINEL_PREFIX) and a.count("#") == b.count("#") == 5
    with pytest.raises(dynorm.ValidationError, match="2048-byte partition-key limit") as info:
        prepare_put(Member(member_id="m1", tenant_id="t1", email="x" * 2100), create=True)
    assert info.value.entity == "Member" and info.value.field == "email" and "unique_email" in str(info.value)


def test_create_plans_one_put_per_value_and_none_claims_nothing() -> None:
    op = prepare_put(Member(member_id="m1", tenant_id="t1", email="a@x.io", handle=None), create=True)
    assert [(s.kind, s.params["Item"]["PK"]["S"]) for s in op.sentinels] == [
        ("Put", "dynorm#unique#MEMBER#unique_email#a@x.io")]
    assert op.sentinels[0].params["ConditionExpression"] == "attribute_not_exists(#upk)"


def test_an_unchanged_value_plans_no_sentinel_but_pins_the_stored_value() -> None:
    m = Member.from_raw_data({"PK": {"S": "v1#MEMBER#m1"}, "SK": {"S": "METADATA"}, "entityType": {"S": "MEMBER"},
                              "member_id": {"S": "m1"}, "tenant_id": {"S": "t1"}, "email": {"S": "a@x.io"}})
    m.note = "n"
    op = prepare_put(m)
    assert op.sentinels == []
    assert ":uf0" in op.params["ConditionExpression"]
    m.email = "b@x.io"
    op = prepare_put(m)
    assert [s.kind for s in op.sentinels] == ["Delete", "Put"]
    assert [s.kind for s in prepare_delete(Member, m).sentinels] == ["Delete"]
    with pytest.raises(dynorm.ValidationError, match="plain value"):
        prepare_update(Member, instance=m, changes={"email": dynorm.F("note")})


def test_transactions_count_sentinels_in_the_100_actions() -> None:
    tx = Transaction()
    for i in range(MAX_ACTIONS // 2):
        tx.create(Member(member_id=f"m{i}", tenant_id="t", email=f"{i}@x.io"))
    assert len(tx.actions) == MAX_ACTIONS
    with pytest.raises(dynorm.ValidationError, match="at most 100 actions"):
        tx.create(Member(member_id="extra", tenant_id="t", email="extra@x.io"))
