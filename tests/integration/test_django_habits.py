"""What Django users reach for (issue 12, section 4), on real requests: values_list, none(),
QuerySet.delete(), bulk_update(), latest()/earliest(), pk, filter(reference=instance), in_bulk(),
and the lookups typed by habit."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynorm import BatchIncomplete, InvalidQuery, KeyChangeError, Q, TransactionCanceled, ValidationError, capture
from tests.models import Counter, Depot, Employment, Order, Person, Reading, StoreEmployee


def _readings(sensor: str, n: int) -> list[Reading]:
    return Reading.objects.bulk_create([Reading(sensor=sensor, year=2020 + i % 3, seq=i) for i in range(n)])


def _stored(model: type, **key: Any) -> dict[str, Any] | None:
    """The raw item as stored (GetItem, ConsistentRead), or None."""
    from dynorm import backend

    resp = backend.call("GetItem", {"TableName": model._meta.table.table_name(),
                                    "Key": model(**key)._primary_key_av(), "ConsistentRead": True})
    return resp.get("Item")


def test_values_list_flat_and_tuples() -> None:
    _readings("s1", 3)
    qs = Reading.objects.filter(sensor="s1")
    with capture() as c:
        assert qs.values_list("seq", flat=True) == [0, 1, 2]
    assert c.operations == ["Query"] and "ProjectionExpression" in c.requests[0].params
    assert qs.values_list("seq", "year") == [(0, 2020), (1, 2021), (2, 2022)]
    assert qs.values_list("pk", flat=True) == [("s1", 2020, 0), ("s1", 2021, 1), ("s1", 2022, 2)]
    with capture() as c, pytest.raises(InvalidQuery, match="exactly one field"):
        qs.values_list("seq", "year", flat=True)
    assert c.count == 0


def test_none_sends_nothing_and_chains() -> None:
    _readings("s1", 2)
    with capture() as c:
        qs = Reading.objects.filter(sensor="s1").none()
        assert list(qs) == [] and qs.count() == 0 and not qs.exists() and qs.first() is None
        assert list(qs.filter(year=2020)) == [] and qs.values_list("seq", flat=True) == []
        assert qs.page(10).items == [] and qs.delete() == 0 and qs.in_bulk() == {}
        with pytest.raises(Reading.DoesNotExist):
            qs.get(year=2020, seq=0)
    assert c.count == 0
    assert Reading.objects.filter(sensor="s1").count() == 2


def test_queryset_delete_uses_batchwriteitem_and_returns_the_count() -> None:
    _readings("s1", 30)
    _readings("s2", 2)
    with capture() as c:
        assert Reading.objects.filter(sensor="s1", year=2020).delete() == 10
    assert c.operations == ["Query", "BatchWriteItem"]
    assert Reading.objects.filter(sensor="s1").count() == 20
    with capture() as c:
        assert Reading.objects.filter(sensor="s1").delete() == 20
    assert c.operations == ["Query", "BatchWriteItem"]  # 20 keys: one batch
    assert Reading.objects.filter(sensor="s1").count() == 0 and Reading.objects.filter(sensor="s2").count() == 2
    assert Reading.objects.filter(sensor="s3").delete() == 0
    assert not hasattr(Reading.objects, "delete")  # as in Django: no Entity.objects.delete()
    with pytest.raises(InvalidQuery, match="sliced"):
        Reading.objects.filter(sensor="s2")[:1].delete()


def test_bulk_update_writes_the_fields_in_transactions_and_bumps_versions() -> None:
    counters = Counter.objects.bulk_create([Counter(name=f"c{i}") for i in range(150)])
    for i, c in enumerate(counters):
        c.value = i * 10
    with capture() as cap:
        assert Counter.objects.bulk_update(counters, ["value"]) == 150
    assert cap.operations == ["TransactWriteItems", "TransactWriteItems"]  # 100 + 50
    assert [Counter.objects.get(name=f"c{i}").value for i in (0, 99, 149)] == [0, 990, 1490]
    assert {c.version for c in counters} == {2}
    assert Counter.objects.get(name="c7").version == 2
    stale = Counter.objects.get(name="c1")
    Counter.objects.get(name="c1").update(value=-1)
    stale.value = 7
    with pytest.raises(TransactionCanceled):
        Counter.objects.bulk_update([counters[0], stale], ["value"])
    assert Counter.objects.get(name="c1").value == -1  # nothing of the cancelled chunk was written


def test_bulk_update_reports_exactly_what_went_in_when_a_later_chunk_fails() -> None:
    counters = [Counter.objects.create(name=f"c{i}") for i in range(4)]
    Counter.objects.get(name="c3").update(value=99)  # counters[3] is now stale
    for c in counters:
        c.value = 5
    with pytest.raises(BatchIncomplete) as err:
        Counter.objects.bulk_update(counters, ["value"], chunk_size=2)
    assert "2 of 4 items were updated" in str(err.value) and err.value.unprocessed == counters[2:]
    assert [Counter.objects.get(name=f"c{i}").value for i in range(4)] == [5, 5, 0, 99]


def test_bulk_update_bad_input_fails_before_any_request() -> None:
    counters = [Counter.objects.create(name=f"c{i}") for i in range(2)]
    counters[1].value = "many"  # type: ignore[assignment]
    with capture() as c:
        with pytest.raises(ValidationError) as err:
            Counter.objects.bulk_update(counters, ["value"])
        assert "Counter" in str(err.value) and "value" in str(err.value) and "many" in str(err.value)
        with pytest.raises(KeyChangeError, match="primary key"):
            Counter.objects.bulk_update(counters[:1], ["name"])
        with pytest.raises(ValidationError, match="same item"):
            Counter.objects.bulk_update([counters[0], Counter(name="c0")], ["value"])
        with pytest.raises(ValidationError, match="field"):
            Counter.objects.bulk_update(counters[:1], [])
    assert c.count == 0
    assert [Counter.objects.get(name=f"c{i}").value for i in range(2)] == [0, 0]


def test_bulk_update_and_save_update_fields_refuse_a_document_path_and_write_whole_fields() -> None:
    # a path named in a field list used to be written as getattr(obj, "m__k", None): a REMOVE of the
    # key, reported as done; both calls take whole fields only (a path's value in memory is ambiguous)
    depot = Depot.objects.create(depot_id="d1", stock_by_warehouse={"W01": 2, "W02": 7})
    vorder = Order.objects.create(customer_id="c1", extra={"A": 1, "B": 2})
    before = (_stored(Depot, depot_id="d1"), _stored(Order, customer_id="c1", order_id=vorder.order_id))
    depot.stock_by_warehouse["W01"] = 5
    with capture() as c:
        for name in ("stock_by_warehouse__W01", "stock_by_warehouse.W01"):
            with pytest.raises(ValidationError, match=r"Depot.objects.bulk_update\(\): .* is a document path "
                                                      r"\(stock_by_warehouse.W01\).*whole field.*update\("):
                Depot.objects.bulk_update([depot], [name])
            with pytest.raises(ValidationError, match=r"Depot.save\(update_fields=...\): .* is a document path"):
                depot.save(update_fields=[name])
        with pytest.raises(ValidationError, match=r"Order.objects.bulk_update\(\): 'extra.A' is a document path"):
            asyncio.run(Order.objects.abulk_update([vorder], ["extra.A"]))
    assert c.count == 0
    assert (_stored(Depot, depot_id="d1"), _stored(Order, customer_id="c1", order_id=vorder.order_id)) == before
    assert Depot.objects.bulk_update([depot], ["stock_by_warehouse"]) == 1  # the whole map, as held
    assert Depot.objects.get(depot_id="d1").stock_by_warehouse == {"W01": 5, "W02": 7}


def test_latest_and_earliest_follow_the_sort_key() -> None:
    _readings("s1", 5)
    with capture() as c:
        assert Reading.objects.filter(sensor="s1").latest().seq == 2  # Y#2022#000002 sorts last
    assert c.operations == ["Query"] and c.requests[0].params["ScanIndexForward"] is False
    assert Reading.objects.filter(sensor="s1").earliest("year", "seq").seq == 0
    with pytest.raises(Reading.DoesNotExist):
        Reading.objects.filter(sensor="nothing").latest()
    with capture() as c, pytest.raises(InvalidQuery, match="sort key"):
        Reading.objects.filter(sensor="s1").latest("value")
    assert c.count == 0


def test_pk_alias() -> None:
    emp = StoreEmployee.objects.create(store_id="s1", employee_id="e1", name="Ann")
    assert emp.pk == ("s1", "e1")
    assert Person.objects.create(person_id="p1", name="Bo").pk == "p1"
    with capture() as c:
        assert Person.objects.get(pk="p1").name == "Bo"
    assert c.operations == ["GetItem"]
    assert StoreEmployee.objects.get(pk=("s1", "e1")).name == "Ann"
    assert [p.name for p in Person.objects.filter(pk="p1")] == ["Bo"]
    with pytest.raises(InvalidQuery, match="pk"):
        StoreEmployee.objects.get(pk="s1")


def test_filter_on_a_reference_with_an_instance() -> None:
    ann, bo = Person.objects.create(person_id="p1", name="Ann"), Person.objects.create(person_id="p2", name="Bo")
    Employment.objects.create(store_id="s1", person_id="p1", person=ann)
    Employment.objects.create(store_id="s1", person_id="p2", person=bo)
    assert [e.person_id for e in Employment.objects.filter(store_id="s1", person=bo)] == ["p2"]
    assert [e.person_id for e in Employment.objects.filter(store_id="s1", person={"person_id": "p1"})] == ["p1"]


def test_in_bulk_with_ids_tuples_and_without_arguments() -> None:
    for i in range(3):
        Person.objects.create(person_id=f"p{i}", name=f"n{i}")
    with capture() as c:
        found = Person.objects.in_bulk(["p0", "p2", "missing"])
    assert c.operations == ["BatchGetItem"] and sorted(found) == ["p0", "p2"] and found["p2"].name == "n2"
    StoreEmployee.objects.create(store_id="s1", employee_id="e1", name="Ann")
    assert StoreEmployee.objects.in_bulk([("s1", "e1")])[("s1", "e1")].name == "Ann"
    assert list(StoreEmployee.objects.filter(store_id="s1").in_bulk()) == [("s1", "e1")]


@pytest.mark.parametrize("lookup", ["icontains", "isnull", "year", "iexact", "startswith"])
def test_habit_lookups_list_dynorms_lookups_before_any_request(lookup: str) -> None:
    with capture() as c, pytest.raises(InvalidQuery) as err:
        list(Order.objects.filter(customer_id="c1", **{f"status__{lookup}": "x"}))
    msg = str(err.value)
    assert f"Order.status: unknown lookup {lookup!r}" in msg and "begins_with" in msg and "not_exists" in msg
    assert c.count == 0


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seqs=st.lists(st.integers(0, 999), min_size=0, max_size=12, unique=True),
       lo=st.integers(2019, 2023))
def test_delete_and_values_list_agree_with_a_python_oracle(seqs: list[int], lo: int) -> None:
    sensor = f"h{len(seqs)}-{lo}-{sum(seqs)}"
    rows = [Reading(sensor=sensor, year=2020 + s % 3, seq=s) for s in seqs]
    if rows:
        Reading.objects.bulk_create(rows)
    want = sorted((2020 + s % 3, s) for s in seqs if 2020 + s % 3 >= lo)
    qs = Reading.objects.filter(sensor=sensor, year__gte=lo)
    assert [tuple(r) for r in qs.values_list("year", "seq")] == want
    assert qs.delete() == len(want)
    assert sorted(Reading.objects.filter(sensor=sensor).values_list("seq", flat=True)) == sorted(
        s for s in seqs if 2020 + s % 3 < lo)
    Reading.objects.filter(sensor=sensor).delete()


# -- none(), latest/earliest, in_bulk, pk aliases, isnull hints, Django methods dynorm lacks ---

def test_none_writes_nothing_through_any_write_method() -> None:
    # Django: none().update() updates 0 rows; dynorm: none() never sends a request, writes included
    objs = _readings("s1", 2)
    objs[0].value = 7
    empty = Reading.objects.filter(sensor="s1", year=2020, seq=0).none()
    with capture() as c:
        assert empty.update(value=5) is None
        assert Reading.objects.none().bulk_update(objs[:1], ["value"]) == 0
        assert empty.delete() == 0 and empty.bulk_delete(objs) == 0
        assert empty.update_with_retry({"sensor": "s1", "year": 2020, "seq": 0}, lambda o: None) is None
        for write in ("create", "bulk_create", "get_or_create", "update_or_create"):
            with pytest.raises(InvalidQuery, match=f"none\\(\\).{write}"):
                getattr(empty, write)(**({} if write != "bulk_create" else {"objs": objs}))
    assert c.count == 0, c.operations
    assert _stored(Reading, sensor="s1", year=2020, seq=0)["value"] == {"N": "0"}  # type: ignore[index]


def test_latest_and_earliest_honour_a_leading_minus() -> None:
    _readings("s1", 6)  # year 2020: seq 0, 3; 2021: 1, 4; 2022: 2, 5
    qs = Reading.objects.filter(sensor="s1", year=2021)
    with capture() as c:
        assert (qs.latest("seq").seq, qs.earliest("seq").seq) == (4, 1)
        assert (qs.latest("-seq").seq, qs.earliest("-seq").seq) == (1, 4)
    assert c.operations == ["Query"] * 4
    everything = Reading.objects.filter(sensor="s1")
    assert (everything.latest("-year", "-seq").seq, everything.earliest("-year", "-seq").seq) == (0, 5)
    assert (everything.latest("year", "seq").seq, everything.earliest("year").seq) == (5, 0)


@pytest.mark.parametrize("fields", [("seq",), ("-seq",), ("seq", "year"), ("year", "-seq"), ("value",)])
def test_latest_refuses_fields_the_sort_key_does_not_order_by(fields: tuple[str, ...]) -> None:
    # Y#{year}#{seq}: without year pinned, the key orders by year first, so latest("seq") would be
    # the greatest seq of the latest year, not the greatest seq
    _readings("s1", 5)
    with capture() as c, pytest.raises(InvalidQuery, match="latest"):
        Reading.objects.filter(sensor="s1").latest(*fields)
    assert c.count == 0


def test_in_bulk_with_ids_on_a_filtered_queryset_is_refused_before_any_request() -> None:
    # BatchGetItem takes no condition: dynorm refuses rather than ignoring the filter
    _readings("s1", 5)
    with capture() as c, pytest.raises(InvalidQuery, match=r"Reading.objects.in_bulk\(ids\)"):
        Reading.objects.filter(sensor="s1", seq__gte=3).in_bulk([{"sensor": "s1", "year": 2021, "seq": 1}])
    assert c.count == 0
    assert sorted(Reading.objects.in_bulk([("s1", 2021, 1), ("s1", 2021, 4)])) == [("s1", 2021, 1), ("s1", 2021, 4)]


def test_pk_alias_inside_q_objects_values_only_and_order_by() -> None:
    for e in ("e1", "e2", "e3"):
        StoreEmployee.objects.create(store_id="s1", employee_id=e, name=e.upper())
    base = StoreEmployee.objects.filter(store_id="s1")
    assert sorted(o.employee_id for o in base.filter(Q(pk=("s1", "e1")) | Q(pk=("s1", "e3")))) == ["e1", "e3"]
    assert sorted(o.employee_id for o in base.exclude(Q(pk=("s1", "e1")))) == ["e2", "e3"]
    assert base.values("pk")[0] == {"pk": ("s1", "e1")}
    with capture() as c:
        assert [o.pk for o in base.only("pk").order_by("-pk")] == [("s1", "e3"), ("s1", "e2"), ("s1", "e1")]
    assert c.operations == ["Query"] and c.requests[0].params["ScanIndexForward"] is False
    assert [p for p in Person.objects.filter(Q(pk="p9")).scan()] == []


def test_the_isnull_hint_names_lookups_that_work() -> None:
    import datetime

    StoreEmployee.objects.create(store_id="s1", employee_id="e1", name="A")
    StoreEmployee.objects.create(store_id="s1", employee_id="e2", name="B",
                                 started=datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc))
    with pytest.raises(InvalidQuery) as err:
        list(StoreEmployee.objects.filter(store_id="s1", started__isnull=True))
    assert "exact=None" not in str(err.value) and "not_exists=True" in str(err.value)
    base = StoreEmployee.objects.filter(store_id="s1")
    assert [o.employee_id for o in base.filter(started__not_exists=True)] == ["e1"]
    assert [o.employee_id for o in base.filter(started__exists=True)] == ["e2"]


@pytest.mark.parametrize("habit, dynorm_way", [
    ("select_related", "prefetch"), ("aggregate", "count()"), ("annotate", "Python"), ("distinct", "distinct"),
    ("extra", "backend.call"), ("raw", "backend.call"), ("defer", "only("), ("select_for_update", "Version"),
])
def test_django_methods_dynorm_lacks_name_the_dynorm_way(habit: str, dynorm_way: str) -> None:
    with capture() as c, pytest.raises(InvalidQuery) as err:
        getattr(Reading.objects.filter(sensor="s1"), habit)("x")
    assert dynorm_way in str(err.value) and f"Reading.objects.{habit}()" in str(err.value)
    assert c.count == 0
