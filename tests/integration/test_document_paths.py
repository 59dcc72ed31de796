"""Document paths inside Map/List fields (issue 26 §3), the way Django's JSONField key transforms read.

``filter(stock_by_warehouse__W01__gte=3)`` is a FilterExpression on ``#m.#k`` (never a key
condition), ``update(stock_by_warehouse__W01=F("stock_by_warehouse__W01") + 5)`` is
``SET #m.#k = #m.#k + :v``; ``F("a.b")`` and ``"a.b[0]"`` are the dotted spelling. Every
segment is a ``#name`` placeholder. Real requests to DynamoDB Local; the items are read back raw.
"""

from __future__ import annotations

from typing import Any

import pytest

import dynorm
from dynorm import F, Q, ValidationError
from dynorm.exceptions import ConditionFailed, InvalidQuery, TransactionCanceled
from tests.faults import stored_item
from tests.models import Depot, Order


def _depot(**values: Any) -> Depot:
    return Depot.objects.create(depot_id="s1", stock_by_warehouse={"W01": 2, "W02": 7},
                                lines=[{"sku": "A", "qty": 1}, {"sku": "B", "qty": 4}], **values)


def _sent(c: Any, key: str) -> tuple[str, dict[str, str]]:
    params = c.requests[-1].params
    if "TransactItems" in params:
        params = params["TransactItems"][0]["Update"]
    return params[key], params["ExpressionAttributeNames"]


# -- filter() ------------------------------------------------------------------------------------
def test_a_path_filters_with_a_filter_expression_of_placeholders(dynorm_tables: Any) -> None:
    _depot()
    Depot.objects.create(depot_id="s2", stock_by_warehouse={"W01": 9})
    with dynorm.capture() as c:
        got = sorted(s.depot_id for s in Depot.objects.filter(stock_by_warehouse__W01__gte=2).scan())
    assert got == ["s1", "s2"]
    expr, names = _sent(c, "FilterExpression")
    assert "W01" not in expr and "#n0.#n1 >= :v0" in expr
    assert names["#n0"] == "stock_by_warehouse" and names["#n1"] == "W01"
    assert [s.depot_id for s in Depot.objects.filter(stock_by_warehouse__W01=9).scan()] == ["s2"]
    assert [s.depot_id for s in Depot.objects.filter(lines__1__qty__gt=3).scan()] == ["s1"]
    assert [s.depot_id for s in Depot.objects.filter(lines__0__exists=False).scan()] == ["s2"]
    assert [s.depot_id for s in Depot.objects.exclude(stock_by_warehouse__W02__exists=True).scan()] == ["s2"]
    either = Q(stock_by_warehouse__W02=7) | Q(**{"stock_by_warehouse.W01": 9})  # the dotted form
    assert sorted(s.depot_id for s in Depot.objects.filter(either).scan()) == ["s1", "s2"]
    assert [s.depot_id for s in Depot.objects.filter(**{"lines[1].sku": "B"}).scan()] == ["s1"]


def test_a_path_beside_the_whole_key_is_a_query_filter_never_a_key_condition(dynorm_tables: Any) -> None:
    _depot()
    with dynorm.capture() as c:
        assert Depot.objects.filter(depot_id="s1", stock_by_warehouse__W01__lt=2).first() is None
        assert Depot.objects.filter(depot_id="s1", stock_by_warehouse__W01=2).get().depot_id == "s1"
    assert set(c.operations) == {"Query"}  # a GetItem takes no filter: the path never becomes a key
    key, _ = _sent(c, "KeyConditionExpression")
    expr, names = _sent(c, "FilterExpression")
    assert "stock_by_warehouse" not in [names[n] for n in names if n in key]
    assert expr == "#n2.#n3 = :v2" and (names["#n2"], names["#n3"]) == ("stock_by_warehouse", "W01")


def test_a_key_named_like_a_lookup_is_reached_with_the_dotted_form(dynorm_tables: Any) -> None:
    Depot.objects.create(depot_id="s1", stock_by_warehouse={"gt": 1, "a__b": 2})
    assert Depot.objects.filter(**{"stock_by_warehouse.gt": 1}).scan().count() == 1
    with pytest.raises(ValidationError, match="expected a dict"):  # gt is the lookup: the whole map > 1
        Depot.objects.filter(stock_by_warehouse__gt=1).scan().count()
    assert Depot.objects.filter(**{"stock_by_warehouse.a__b__gte": 2}).scan().count() == 1


def test_a_key_holding_a_dot_or_bracket_is_reached_with_the_double_underscore_form(dynorm_tables: Any) -> None:
    # the __ form is taken whenever the name starts with field__ (the dotted parser read "a.b" as a lookup)
    Depot.objects.create(depot_id="s1", stock_by_warehouse={"a.b": 1, "a[0]": 2, "a": {"b": 9}})
    Depot.objects.create(depot_id="s2", stock_by_warehouse={"a": {"b": 1}})
    with dynorm.capture() as c:
        assert [d.depot_id for d in Depot.objects.filter(**{"stock_by_warehouse__a.b": 1}).scan()] == ["s1"]
    _, names = _sent(c, "FilterExpression")
    assert "a.b" in names.values()  # one key, one placeholder
    assert [d.depot_id for d in Depot.objects.filter(**{"stock_by_warehouse__a[0]__gte": 2}).scan()] == ["s1"]
    assert [d.depot_id for d in Depot.objects.filter(**{"stock_by_warehouse.a.b": 1}).scan()] == ["s2"]  # dotted
    d = Depot.objects.get(depot_id="s1")
    d.update(**{"stock_by_warehouse__a.b": F("stock_by_warehouse__a.b") + 4, "stock_by_warehouse__a[0]": None})
    assert stored_item(Depot, depot_id="s1")["stock_by_warehouse"] == {
        "M": {"a.b": {"N": "5"}, "a": {"M": {"b": {"N": "9"}}}}}
    assert Depot.objects.filter(**{"stock_by_warehouse__a.b__exists": True}).scan().count() == 1


def test_only_ascii_digits_are_list_indexes_and_an_index_stays_in_dynamodb_range(dynorm_tables: Any) -> None:
    s = _depot()
    before = stored_item(Depot, depot_id="s1")
    with dynorm.capture() as c:
        for name in ("lines__\u00b2", "lines__\u0661", "lines__\u0661__sku"):  # superscript two, Arabic-Indic one
            with pytest.raises(InvalidQuery, match=r"Depot.lines is a fields.List: its path starts with an index "
                                                   r"in ASCII digits"):
                Depot.objects.filter(**{name: 1}).scan().first()
            with pytest.raises(ValidationError, match=r"Depot.lines is a fields.List: .*ASCII digits"):
                s.update(**{name: 1})
        with pytest.raises(InvalidQuery, match=r"cannot read the document path 'lines\[\u00b2\]'"):
            Depot.objects.filter(**{"lines[\u00b2]": 1}).scan().first()
        for name in ("lines__2147483648", f"lines[{10**30}]"):
            with pytest.raises(ValidationError, match=r"the list index \d+ in .* is out of DynamoDB's range \(0 to "
                                                      r"2147483647\)"):
                s.update(**{name: 1})
            with pytest.raises(InvalidQuery, match=r"out of DynamoDB's range"):
                Depot.objects.filter(**{name: 1}).scan().first()
    assert c.requests == [] and stored_item(Depot, depot_id="s1") == before
    s.update(**{"stock_by_warehouse__\u0661": 3})  # inside a map, any digit is a key
    assert stored_item(Depot, depot_id="s1")["stock_by_warehouse"]["M"]["\u0661"] == {"N": "3"}


def test_bad_paths_are_refused_before_any_request(dynorm_tables: Any) -> None:
    with dynorm.capture() as c:
        with pytest.raises(InvalidQuery, match=r"'icontains' is not a dynorm lookup.*dotted form"):
            Depot.objects.filter(stock_by_warehouse__W01__icontains="x").scan().first()
        with pytest.raises(InvalidQuery, match=r"Depot.lines is a fields.List: its path starts with an index"):
            Depot.objects.filter(lines__sku="A").scan().first()
        with pytest.raises(InvalidQuery, match=r"Depot.depot_id: unknown lookup 'W01'"):
            Depot.objects.filter(depot_id__W01=1).scan().first()
        with pytest.raises(InvalidQuery, match=r"Depot.stock_by_warehouse.W01: cannot compare with None"):
            Depot.objects.filter(stock_by_warehouse__W01=None).scan().first()
        with pytest.raises(ValidationError, match=r"Depot.stock_by_warehouse.W01 .*NaN"):
            Depot.objects.filter(stock_by_warehouse__W01=float("nan")).scan().first()
        with pytest.raises(InvalidQuery, match=r"the document path 'stock_by_warehouse____W01' has an empty key"):
            Depot.objects.filter(stock_by_warehouse____W01=1).scan().first()
        with pytest.raises(InvalidQuery, match=r"cannot read the document path 'stock_by_warehouse..W01'"):
            Depot.objects.filter(**{"stock_by_warehouse..W01": 1}).scan().first()
    assert c.requests == []


def test_reads_that_take_whole_fields_say_paths_are_not_supported_there(dynorm_tables: Any) -> None:
    _depot()
    qs = Depot.objects.filter(depot_id="s1")
    with dynorm.capture() as c:
        for read in (lambda: qs.values("stock_by_warehouse__W01"), lambda: qs.values_list("stock_by_warehouse.W01"),
                     lambda: qs.only("lines__0")):
            with pytest.raises(InvalidQuery, match=r"is a document path \((stock_by_warehouse.W01|lines\[0\])\), not "
                                                   r"a field.*read the whole field"):
                read()
        with pytest.raises(InvalidQuery, match=r"Depot.order_by\('-stock_by_warehouse__W01'\): .* is a document path"
                                               r".*sort key only"):
            qs.order_by("-stock_by_warehouse__W01")
    assert c.requests == []
    assert qs.values("stock_by_warehouse") == [{"stock_by_warehouse": {"W01": 2, "W02": 7}}]  # the remedy


def test_explain_quotes_a_key_that_is_not_a_plain_name(dynorm_tables: Any) -> None:
    plan = Depot.objects.filter(**{"stock_by_warehouse__W 01": 1, "stock_by_warehouse__a.b__exists": True}).scan()
    shown = plan.explain().readable(plan.explain().filter)
    assert 'stock_by_warehouse."W 01" = 1' in shown and 'attribute_exists(stock_by_warehouse."a.b")' in shown
    assert "stock_by_warehouse.W01" in str(Depot.objects.filter(stock_by_warehouse__W01=1).scan().explain())


# -- update() ------------------------------------------------------------------------------------
def test_an_increment_at_a_path_is_one_set_and_the_map_is_read_fresh(dynorm_tables: Any) -> None:
    s = _depot()
    with dynorm.capture() as c:
        s.update(stock_by_warehouse__W01=F("stock_by_warehouse__W01") + 5)
    assert c.operations == ["TransactWriteItems"]  # the one-request increment (exactly once), no read-back
    assert "stock_by_warehouse" not in s.attribute_values and s.lines[1]["qty"] == 4  # the map is deferred
    expr, names = _sent(c, "UpdateExpression")
    assert "#n0.#n1 = #n0.#n1 + :v" in expr and (names["#n0"], names["#n1"]) == ("stock_by_warehouse", "W01")
    assert stored_item(Depot, depot_id="s1")["stock_by_warehouse"] == {"M": {"W01": {"N": "7"}, "W02": {"N": "7"}}}
    with dynorm.capture() as c:  # never the map as it was before the write
        assert s.stock_by_warehouse == {"W01": 7, "W02": 7}
    assert c.operations == ["GetItem"]


def test_a_queryset_update_at_a_path_in_the_dotted_form(dynorm_tables: Any) -> None:
    _depot()
    got = Depot.objects.filter(depot_id="s1").update(**{"stock_by_warehouse.W02": F("stock_by_warehouse.W02") - 3})
    assert got.stock_by_warehouse == {"W01": 2, "W02": 4}
    assert stored_item(Depot, depot_id="s1")["stock_by_warehouse"]["M"]["W02"] == {"N": "4"}


def test_plain_values_removes_if_not_exists_and_appends_at_paths(dynorm_tables: Any) -> None:
    s = _depot()
    with dynorm.capture() as c:
        s.update(stock_by_warehouse__W03={"bin": "x", "n": 1}, stock_by_warehouse__W02=None,
                 stock_by_warehouse__W09=F("stock_by_warehouse__W09").if_not_exists(0),
                 lines__1__qty=40, lines__0__tags=F("lines__0__tags").if_not_exists([]))
    expr, names = _sent(c, "UpdateExpression")
    assert "REMOVE #n0.#n" in expr and "#n4[1].#n5 = :v" in expr and "if_not_exists(#n0.#n" in expr
    assert (names["#n0"], names["#n4"], names["#n5"]) == ("stock_by_warehouse", "lines", "qty")
    raw = stored_item(Depot, depot_id="s1")
    assert raw["stock_by_warehouse"] == {"M": {"W01": {"N": "2"}, "W03": {"M": {"bin": {"S": "x"}, "n": {"N": "1"}}},
                                                "W09": {"N": "0"}}}
    assert raw["lines"]["L"][1]["M"]["qty"] == {"N": "40"}
    assert c.operations == ["UpdateItem"]  # idempotent: one UpdateItem, the item as written (ALL_NEW) read back
    with dynorm.capture() as c:
        assert s.stock_by_warehouse == {"W01": 2, "W03": {"bin": "x", "n": 1}, "W09": 0}
    assert c.requests == []
    s.update(lines__0__tags=F("lines__0__tags").append(["red"]))
    assert Depot.objects.get(depot_id="s1").lines[0] == {"sku": "A", "qty": 1, "tags": ["red"]}


def test_a_versioned_instance_reads_the_whole_map_back_from_its_update(dynorm_tables: Any) -> None:
    o = Order.objects.create(customer_id="c1", extra={"points": 1})
    with dynorm.capture() as c:
        o.update(extra__points=F("extra__points") + 2)
    assert c.operations == ["UpdateItem"] and c.requests[0].params["ReturnValues"] == "ALL_NEW"
    with dynorm.capture() as c:
        assert (o.extra, o.version) == ({"points": 3}, 2)
    assert c.requests == []
    assert stored_item(Order, customer_id="c1", order_id=o.order_id)["extra"] == {"M": {"points": {"N": "3"}}}


def test_a_path_through_a_missing_map_is_a_clear_error_and_nothing_is_written(dynorm_tables: Any) -> None:
    s = Depot.objects.create(depot_id="s1")
    before = stored_item(Depot, depot_id="s1")
    for change in ({"stock_by_warehouse__W01": 3},
                   {"stock_by_warehouse__W01": F("stock_by_warehouse__W01") + 1}):  # the one-request increment
        with pytest.raises(ValidationError, match=r"update Depot depot_id='s1': DynamoDB refused the document path "
                                                  r"\(stock_by_warehouse.W01\).*Nothing was written. Set the parent "
                                                  r"first \(e.g. update\(stock_by_warehouse=\{...\}\)"):
            s.update(**change)
    assert stored_item(Depot, depot_id="s1") == before
    s.update(stock_by_warehouse={})  # the parent first, then inside it
    s.update(stock_by_warehouse__W01=3)
    assert stored_item(Depot, depot_id="s1")["stock_by_warehouse"] == {"M": {"W01": {"N": "3"}}}


def test_a_path_refused_in_a_transaction_is_the_same_clear_error_and_nothing_is_written(dynorm_tables: Any) -> None:
    s = Depot.objects.create(depot_id="s1", lines=[1])
    before, values = stored_item(Depot, depot_id="s1"), dict(s.attribute_values)
    with pytest.raises(ValidationError, match=r"transaction refused by DynamoDB .*update Depot depot_id='s1': "
                                              r"DynamoDB refused the document path \(stock_by_warehouse.W01\).*Nothing "
                                              r"was written. Set the parent first") as err:
        with dynorm.transaction() as tx:
            tx.update(s, stock_by_warehouse__W01=3)
            tx.create(Depot(depot_id="s2"))
    assert (err.value.entity, err.value.field, err.value.maybe_applied) == ("Depot", "stock_by_warehouse__W01", False)
    assert stored_item(Depot, depot_id="s1") == before and not Depot.objects.filter(depot_id="s2").exists()
    assert s.attribute_values == values and s.lines == [1]  # the instance is left as it was


def test_removing_a_key_of_a_missing_map_says_there_is_nothing_to_remove(dynorm_tables: Any) -> None:
    s = Depot.objects.create(depot_id="s1")
    before = stored_item(Depot, depot_id="s1")
    with pytest.raises(ValidationError) as err:
        s.update(stock_by_warehouse__W01=None)
    text = str(err.value)
    assert "refused to remove stock_by_warehouse.W01" in text and "nothing to remove there" in text
    assert "Set the parent first" not in text and "Nothing was written" in text
    assert stored_item(Depot, depot_id="s1") == before
    with pytest.raises(ConditionFailed):  # the conditional form the message offers
        s.update(stock_by_warehouse__W01=None, condition=Q(stock_by_warehouse__exists=True))


def test_a_missing_source_path_is_a_clear_error_naming_it(dynorm_tables: Any) -> None:
    s = _depot()
    before = stored_item(Depot, depot_id="s1")
    for change in ({"stock_by_warehouse__W03": F("stock_by_warehouse__nope")},          # one UpdateItem
                   {"stock_by_warehouse__W03": F("stock_by_warehouse__nope") + 1}):     # the one-request increment
        with pytest.raises(ValidationError, match=r"update Depot depot_id='s1': an F\(\) source "
                                                  r"\(stock_by_warehouse.nope\) is missing on the stored item.*"
                                                  r"Nothing was written.*if_not_exists"):
            s.update(**change)
    assert stored_item(Depot, depot_id="s1") == before


def test_overlapping_paths_index_sources_and_bad_values_are_refused_before_any_request(dynorm_tables: Any) -> None:
    s = _depot()
    with dynorm.capture() as c:
        with pytest.raises(ValidationError, match=r"stock_by_warehouse and stock_by_warehouse.W01 overlap"):
            s.update(stock_by_warehouse={}, stock_by_warehouse__W01=1)
        with pytest.raises(ValidationError, match=r"lines\[0\].sku and lines\[0\] overlap"):
            s.update(lines__0__sku="Z", **{"lines[0]": {}})
        with pytest.raises(ValidationError, match=r"stock_by_warehouse.bins\[0\] and stock_by_warehouse.bins.\"0\" "
                                                  r"conflict .*as a list index, the other as a map key"):
            s.update(**{"stock_by_warehouse.bins[0]": 5, "stock_by_warehouse__bins__0": 6})  # sent, DynamoDB refused
        with pytest.raises(ValidationError, match=r"Depot.label.color: label is part of index by_label .*whole"):
            s.update(label__color="red")
        with pytest.raises(ValidationError, match=r"Depot.stock_by_warehouse.W01: .*NaN"):
            s.update(stock_by_warehouse__W01=float("nan"))
        with pytest.raises(ValidationError, match=r"Depot.stock_by_warehouse.W01: \+ needs a number"):
            s.update(stock_by_warehouse__W01=F("stock_by_warehouse__W01") + "1")
        with pytest.raises(ValidationError, match=r"Depot has no field 'stok__W01'"):
            s.update(stok__W01=1)
        with pytest.raises(ValidationError, match=r"add\(\)/discard\(\) work on a whole fields.Set"):
            s.update(stock_by_warehouse__W01=F("stock_by_warehouse__W01").add(["x"]))
    assert c.requests == []


# -- conditions ----------------------------------------------------------------------------------
def test_conditions_on_paths_guard_updates_transaction_checks_and_deletes(dynorm_tables: Any) -> None:
    s = _depot()
    with dynorm.capture() as c:
        s.update(stock_by_warehouse__W01=F("stock_by_warehouse__W01") - 2, condition=Q(stock_by_warehouse__W01__gte=2))
    cond, names = _sent(c, "ConditionExpression")
    assert "#n0.#n1 >= :v" in cond
    assert stored_item(Depot, depot_id="s1")["stock_by_warehouse"]["M"]["W01"] == {"N": "0"}
    with pytest.raises(ConditionFailed):
        s.update(stock_by_warehouse__W01=F("stock_by_warehouse__W01") - 2, condition=Q(stock_by_warehouse__W01__gte=2))
    assert stored_item(Depot, depot_id="s1")["stock_by_warehouse"]["M"]["W01"] == {"N": "0"}
    with pytest.raises(TransactionCanceled):
        with dynorm.transaction() as tx:
            tx.check(s, condition=Q(lines__0__sku="Z"))
            tx.create(Depot(depot_id="s2"))
    with dynorm.capture() as c:
        with dynorm.transaction() as tx:
            tx.check(s, condition=Q(lines__0__sku="A"))
            tx.create(Depot(depot_id="s2"))
    assert "#n0[0].#n1 = :v0" in c.requests[-1].params["TransactItems"][0]["ConditionCheck"]["ConditionExpression"]
    assert Depot.objects.filter(depot_id="s2").exists()
    with pytest.raises(ConditionFailed):
        s.delete(condition=Q(stock_by_warehouse__W02__lt=7))
    s.delete(condition=~Q(stock_by_warehouse__W02__lt=7))
    with pytest.raises(KeyError):
        stored_item(Depot, depot_id="s1")
