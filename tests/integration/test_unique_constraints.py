"""Unique constraints (fields.String(unique=True), Meta.constraints): sentinels written in the same
TransactWriteItems as the entity, on DynamoDB Local; the table is read back raw."""

from __future__ import annotations

import threading

import pytest

import dynorm
from dynorm import backend
from dynorm.constraints import SENTINEL_PREFIX, SENTINEL_TYPE
from tests.models import Account, Member


def _sentinels() -> dict[str, dict]:
    """Every sentinel in the table (raw), by partition key."""
    resp = backend.client().scan(TableName=Member._meta.table.table_name(), ConsistentRead=True)
    return {i["PK"]["S"]: i for i in resp["Items"] if i.get("entityType") == {"S": SENTINEL_TYPE}}


def _emails() -> set[str]:
    return {pk.split("#")[4] for pk in _sentinels() if "#unique_email#" in pk}


def test_create_writes_the_item_and_its_sentinels_in_one_transaction() -> None:
    with dynorm.capture() as c:
        Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io", handle="ann")
    assert c.operations == ["TransactWriteItems"]
    s = _sentinels()
    assert set(s) == {f"{SENTINEL_PREFIX}MEMBER#unique_email#a@x.io",
                      f"{SENTINEL_PREFIX}MEMBER#unique_handle_per_tenant#t1#ann"}
    one = s[f"{SENTINEL_PREFIX}MEMBER#unique_email#a@x.io"]
    assert one["SK"] == {"S": "dynorm#unique"}
    assert one["_dynorm_owner_type"] == {"S": "MEMBER"}
    assert one["_dynorm_owner_key"] == {"M": {"member_id": {"S": "m1"}}}
    assert "_dynorm_rev" in one


def test_a_taken_value_raises_integrity_error_and_writes_nothing() -> None:
    Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io")
    before = _sentinels()
    with pytest.raises(dynorm.IntegrityError) as info:
        Member.objects.create(member_id="m2", tenant_id="t1", email="a@x.io")
    assert info.value.entity == "Member" and info.value.constraint == "unique_email"
    assert info.value.values == {"email": "a@x.io"}
    assert "a@x.io" in str(info.value) and "unique_email" in str(info.value)
    assert _sentinels() == before
    with pytest.raises(Member.DoesNotExist):
        Member.objects.get(member_id="m2")


def test_none_values_have_no_sentinel_and_many_items_may_hold_none() -> None:
    Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io", handle=None)
    Member.objects.create(member_id="m2", tenant_id="t1", email="b@x.io", handle=None)
    assert not [pk for pk in _sentinels() if "unique_handle_per_tenant" in pk]


def test_the_separator_in_a_value_is_escaped() -> None:
    Member.objects.create(member_id="m1", tenant_id="a#b", email="e1@x.io", handle="c")
    Member.objects.create(member_id="m2", tenant_id="a", email="e2@x.io", handle="b#c")
    assert len([pk for pk in _sentinels() if "unique_handle_per_tenant" in pk]) == 2


def test_save_of_a_changed_value_swaps_the_sentinels_and_unchanged_writes_none() -> None:
    m = Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io")
    m = Member.objects.get(member_id="m1")
    m.note = "hi"
    with dynorm.capture() as c:
        m.save()
    assert c.operations == ["UpdateItem"]  # no unique value changed: no sentinel action
    m.email = "b@x.io"
    with dynorm.capture() as c:
        m.save()
    assert c.operations == ["TransactWriteItems"]
    assert _emails() == {"b@x.io"}
    Member.objects.create(member_id="m2", tenant_id="t1", email="a@x.io")  # the old value is free again
    m.email = "a@x.io"
    with pytest.raises(dynorm.IntegrityError):
        m.save()
    assert Member.objects.get(member_id="m1").email == "b@x.io"
    assert _emails() == {"a@x.io", "b@x.io"}


def test_update_of_a_unique_field_swaps_and_f_is_refused() -> None:
    m = Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io")
    m.update(email="c@x.io")
    assert _emails() == {"c@x.io"}
    assert Member.objects.get(member_id="m1").email == "c@x.io"
    with pytest.raises(dynorm.ValidationError, match="email"):
        m.update(email=dynorm.F("note"))
    Member.objects.filter(member_id="m1").update(email="d@x.io")
    assert _emails() == {"d@x.io"}
    m.update(visits=dynorm.F("visits") + 1)  # other fields: unaffected
    assert _emails() == {"d@x.io"}


def test_delete_removes_the_sentinels() -> None:
    m = Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io", handle="h")
    m.delete()
    assert _sentinels() == {}
    Member.objects.create(member_id="m2", tenant_id="t1", email="a@x.io", handle="h")
    Member.objects.filter(member_id="m2").delete()
    assert _sentinels() == {}


def test_versioned_entity_swaps_too() -> None:
    a = Account.objects.create(account_id="a1", email="a@x.io")
    a.email = "b@x.io"
    a.save()
    assert a.version == 2
    with pytest.raises(dynorm.IntegrityError):
        Account.objects.create(account_id="a2", email="b@x.io")
    Account.objects.create(account_id="a2", email="a@x.io")


def test_transaction_keeps_sentinels_and_two_items_swap_emails() -> None:
    a = Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io")
    b = Member.objects.create(member_id="m2", tenant_id="t1", email="b@x.io")
    a.email, b.email = "b@x.io", "a@x.io"
    with dynorm.transaction() as tx:
        tx.save(a)
        tx.save(b)
    assert len(tx.actions) == 4  # two saves, and per value one Put taking over the other's sentinel
    assert Member.objects.get(member_id="m1").email == "b@x.io"
    assert Member.objects.get(member_id="m2").email == "a@x.io"
    owners = {pk.split("#")[4]: s["_dynorm_owner_key"]["M"]["member_id"]["S"] for pk, s in _sentinels().items()}
    assert owners == {"a@x.io": "m2", "b@x.io": "m1"}


def test_transaction_violation_raises_unique_canceled_and_writes_nothing() -> None:
    Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io")
    before = _sentinels()
    with pytest.raises(dynorm.IntegrityError) as info:
        with dynorm.transaction() as tx:
            tx.create(Member(member_id="m2", tenant_id="t1", email="z@x.io"))
            tx.create(Member(member_id="m3", tenant_id="t1", email="a@x.io"))
    assert isinstance(info.value, dynorm.TransactionCanceled)
    assert info.value.constraint == "unique_email"
    assert _sentinels() == before
    with pytest.raises(dynorm.IntegrityError):  # two claims of one value: refused before any request
        with dynorm.transaction() as tx:
            tx.create(Member(member_id="m4", tenant_id="t1", email="q@x.io"))
            tx.create(Member(member_id="m5", tenant_id="t1", email="q@x.io"))


def test_transaction_delete_and_update_by_key_keep_sentinels() -> None:
    Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io")
    Member.objects.create(member_id="m2", tenant_id="t1", email="b@x.io")
    with dynorm.transaction() as tx:
        tx.update(Member, {"member_id": "m1"}, email="c@x.io")
        tx.delete(Member, {"member_id": "m2"})
    assert _emails() == {"c@x.io"}


def test_bulk_create_and_bulk_delete_keep_sentinels() -> None:
    objs = [Member(member_id=f"m{i}", tenant_id="t1", email=f"{i}@x.io") for i in range(3)]
    with dynorm.capture() as c:
        Member.objects.bulk_create(objs)
    assert c.operations == ["TransactWriteItems"] * 3
    assert _emails() == {"0@x.io", "1@x.io", "2@x.io"}
    m9 = Member(member_id="m9", tenant_id="t1", email="9@x.io")
    m8 = Member(member_id="m8", tenant_id="t1", email="1@x.io")
    with pytest.raises(dynorm.IntegrityError) as info:  # not atomic across items: m9 went in
        Member.objects.bulk_create([m9, m8])
    assert isinstance(info.value, dynorm.BatchIncomplete) and isinstance(info.value, dynorm.UniqueIncomplete)
    assert info.value.written == [m9] and info.value.unprocessed == [m8]
    assert (info.value.constraint, info.value.values) == ("unique_email", {"email": "1@x.io"})
    Member.objects.bulk_delete([{"member_id": "m0"}, objs[1]])
    assert _emails() == {"2@x.io", "9@x.io"}
    objs[2].email = "7@x.io"
    Member.objects.bulk_update([objs[2]], ["email"])
    assert _emails() == {"7@x.io", "9@x.io"}


def test_sixteen_threads_creating_one_email_one_wins() -> None:
    Member.objects.scan().count()  # the key-version record is read before the threads start
    results: list[object] = []

    def create(i: int) -> None:
        try:
            Member.objects.create(member_id=f"m{i}", tenant_id="t1", email="race@x.io")
            results.append("ok")
        except dynorm.IntegrityError as exc:
            results.append(exc)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("ok") == 1
    assert all(isinstance(r, dynorm.IntegrityError) for r in results if r != "ok")
    assert Member.objects.scan().count() == 1
    assert _emails() == {"race@x.io"}


def test_sentinels_are_invisible_to_scans_and_counts() -> None:
    Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io")
    assert [m.member_id for m in Member.objects.scan()] == ["m1"]
    assert Member.objects.scan().count() == 1


def test_get_by_a_unique_field_reads_the_sentinel_then_the_item() -> None:
    Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io", handle="ann")
    Member.objects.create(member_id="m2", tenant_id="t1", email="b@x.io")
    with dynorm.capture() as c:
        m = Member.objects.get(email="a@x.io")
    assert m.member_id == "m1"
    assert c.operations == ["GetItem", "GetItem"]
    assert c.requests[0].params["Key"]["PK"] == {"S": "dynorm#unique#MEMBER#unique_email#a@x.io"}
    assert c.requests[1].params["Key"]["PK"] == {"S": "v1#MEMBER#m1"}
    assert "ConsistentRead" not in c.requests[0].params
    assert Member.objects.consistent().get(tenant_id="t1", handle="ann").member_id == "m1"
    assert Member.objects.filter(email="b@x.io").count() == 1
    assert not Member.objects.filter(email="b@x.io", note="x").exists()  # checked on the item read
    with dynorm.capture() as c, pytest.raises(Member.DoesNotExist):
        Member.objects.get(email="nobody@x.io")
    assert c.operations == ["GetItem"]  # no sentinel: no second read
    plan = str(Member.objects.filter(email="a@x.io").explain())
    assert "sentinel of unique constraint 'unique_email'" in plan and "then GetItem" in plan
    with pytest.raises(dynorm.ScanRequired):
        Member.objects.filter(email__begins_with="a").first()  # not an equality: no sentinel serves it


def test_a_save_from_a_stale_read_leaves_no_sentinel_behind() -> None:
    Member.objects.create(member_id="m1", tenant_id="t1", email="x@x.io")
    stale = Member.objects.get(member_id="m1")
    other = Member.objects.get(member_id="m1")
    other.email = "y@x.io"
    other.save()
    stale.email = "z@x.io"
    with pytest.raises(dynorm.ConditionFailed) as info:  # the stored email is no longer the one read
        stale.save()
    assert "stored unique value changed since this instance read it" in str(info.value)
    assert "'y@x.io'" in str(info.value) and "refresh_from_db()" in str(info.value)
    assert _emails() == {"y@x.io"}
    assert Member.objects.get(member_id="m1").email == "y@x.io"


def test_a_decimal_claims_one_sentinel_whatever_its_trailing_zeros() -> None:
    from decimal import Decimal

    from tests.models import Voucher

    Voucher.objects.create(voucher_id="v1", amount=Decimal("1.50"))
    assert set(_sentinels()) == {f"{SENTINEL_PREFIX}VOUCHER#unique_amount#1.5"}  # as DynamoDB stores it
    for same in (Decimal("1.5"), Decimal("15E-1"), Decimal("1.500")):
        with pytest.raises(dynorm.IntegrityError):
            Voucher.objects.create(voucher_id="v2", amount=same)
    assert Voucher.objects.get(amount=Decimal("1.5")).voucher_id == "v1"
    assert Voucher.objects.get(amount=Decimal("1.50")).voucher_id == "v1"
    Voucher.objects.create(voucher_id="v3", amount=Decimal("1E+2"))
    assert f"{SENTINEL_PREFIX}VOUCHER#unique_amount#100" in _sentinels()
    assert Voucher.objects.get(amount=100).voucher_id == "v3"


def test_bulk_update_of_unique_values_chunks_by_actions_and_returns_the_items_updated() -> None:
    objs = [Member.objects.create(member_id=f"m{i:02d}", tenant_id="t1", email=f"{i}@x.io") for i in range(40)]
    for o in objs:
        o.email = f"new{o.member_id}@x.io"
    with dynorm.capture() as c:
        assert Member.objects.bulk_update(objs, ["email"]) == 40  # items, not the 120 actions
    assert [len(r.params["TransactItems"]) for r in c.requests] == [99, 21]  # 33 whole items, then 7
    assert _emails() == {f"newm{i:02d}@x.io" for i in range(40)}
    for o in objs[:8]:
        o.email = f"again{o.member_id}@x.io"
    objs[3].email, objs[4].email = "newm04@x.io", "newm03@x.io"  # a swap across a boundary of 4-item chunks
    with dynorm.capture() as c:
        assert Member.objects.bulk_update(objs[:8], ["email"], chunk_size=12) == 8
    assert [len(r.params["TransactItems"]) for r in c.requests] == [9, 10, 3]  # the swapping pair commits together
    assert Member.objects.get(member_id="m03").email == "newm04@x.io"
    assert Member.objects.get(member_id="m04").email == "newm03@x.io"
    objs[0].email = "z@x.io"
    with dynorm.capture() as c, pytest.raises(dynorm.ValidationError, match="chunk_size=2"):
        Member.objects.bulk_update(objs[:1], ["email"], chunk_size=2)
    assert c.operations == []


def test_pynamodb_batch_write_is_refused_on_an_entity_with_unique_constraints() -> None:
    m = Member.objects.create(member_id="m1", tenant_id="t1", email="a@x.io")
    with dynorm.capture() as c, pytest.raises(dynorm.ModelError, match="bulk_delete"):
        with Member.batch_write() as batch:
            batch.delete(m)  # BatchWriteItem would delete the item and leave its sentinel behind
    assert c.operations == []
    assert Member.objects.get(member_id="m1") and _emails() == {"a@x.io"}


@pytest.mark.parametrize("template, version", [("dynorm#unique#MEMBER#unique_email#{email}", "v1"),
                                         ("{version}#X#{member_id}", "dynorm")])
def test_a_partition_key_template_in_dynorms_reserved_prefix_is_refused(template: str, version: str) -> None:
    from dynorm import Entity, fields
    from tests.models import Retail

    with pytest.raises(dynorm.ModelError, match="reserved for dynorm's own items") as info:
        class Squatter(Entity):
            member_id = fields.String()
            email = fields.String()

            class Meta:
                table = Retail
                entity_type = "SQUATTER"
                key_version = version
                pk = template
                sk = "METADATA"

    assert "Squatter" in str(info.value) and template in str(info.value)
