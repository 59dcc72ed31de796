"""The sparse-index rule against a brute-force oracle.

Random tracks (genre, year, title and rank each maybe missing) under fresh partition values;
random conditions over the indexed fields (equalities that pin a partition of the table, of the
template GSI, of the multi-attribute GSI; comparisons, ranges, begins_with, ne, exists, an OR),
maybe an ``order_by()``. The oracle filters every track written, a condition on a missing
attribute being false (``ne``: true), as in DynamoDB. The planner's answer must equal the oracle
(order included when asked for), or the query is refused with ``InvalidQuery`` before any
request; a query giving the table's partition key and no order is never refused.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

import dynorm
from dynorm import InvalidQuery, Q
from tests.integration.test_sparse_indexes import Track
from tests.tiers import examples

_runs = itertools.count()
TITLES = ["a", "ab", "b", "ba", "c"]
YEARS = [-2, 0, 1, 7, 2001]


def _holds(item: dict[str, Any], field: str, lookup: str, value: Any) -> bool:
    x = item.get(field)
    if lookup == "exists":
        return (x is not None) is bool(value)
    if lookup == "ne":
        return x is None or x != value
    if x is None:
        return False
    return bool({
        "exact": lambda: x == value, "lt": lambda: x < value, "lte": lambda: x <= value,
        "gt": lambda: x > value, "gte": lambda: x >= value, "between": lambda: value[0] <= x <= value[1],
        "begins_with": lambda: x.startswith(value), "in": lambda: x in value,
    }[lookup]())


def _cond(draw: Any, field: str, pool: list[Any]) -> tuple[str, str, Any]:
    lookups = ["exact", "exact", "exact", "ne", "lt", "gte", "between", "in", "exists"]
    if field == "title":
        lookups.append("begins_with")
    lk = draw(st.sampled_from(lookups))
    if lk == "exists":
        return (field, lk, draw(st.booleans()))
    if lk == "between":
        lo, hi = sorted((draw(st.sampled_from(pool)), draw(st.sampled_from(pool))))
        return (field, lk, (lo, hi))
    if lk == "in":
        return (field, lk, draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True)))
    if lk == "begins_with":
        return (field, lk, draw(st.sampled_from(["a", "b", "ab"])))
    return (field, lk, draw(st.sampled_from(pool)))


@pytest.mark.usefixtures("dynorm_tables")
@settings(max_examples=examples(80), deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_planner_equals_the_oracle_or_refuses_before_any_request(data: Any) -> None:
    draw = data.draw
    n = next(_runs)
    albums, genres, labels = [f"a{n}", f"b{n}"], [f"g{n}", f"h{n}"], [f"L{n}", f"M{n}"]
    rows = draw(st.lists(st.fixed_dictionaries({
        "album_id": st.sampled_from(albums), "label": st.sampled_from(labels),
        "genre": st.one_of(st.none(), st.sampled_from(genres)),
        "year": st.one_of(st.none(), st.sampled_from(YEARS)),
        "title": st.one_of(st.none(), st.sampled_from(TITLES)),
        "rank": st.one_of(st.none(), st.integers(0, 50))}), max_size=8))
    # unique sort values where an index orders by them (DynamoDB leaves the order of ties open)
    seen: set[Any] = set()
    for i, r in enumerate(rows):
        r["track_id"] = f"t{i}"
        if r["rank"] is not None:
            r["rank"] = r["rank"] * 100 + i
        if (r["label"], r["year"], r["title"]) in seen:
            r["title"] = None
        seen.add((r["label"], r["year"], r["title"]))
    Track.objects.bulk_create([Track(**r) for r in rows])

    for _ in range(3):
        conds: list[tuple[str, str, Any]] = []
        anchor = draw(st.sampled_from(["album_id", "genre", "label", None]))  # None: maybe no partition
        for field, pool in (("album_id", albums), ("genre", genres), ("label", labels)):
            if field == anchor or draw(st.integers(0, 3)) == 0:
                conds.append((field, "exact", draw(st.sampled_from(pool))))
        for field, pool in (("year", YEARS), ("title", TITLES), ("rank", [0, 150, 2500, 5000])):
            for _k in range(draw(st.sampled_from([0, 1, 1]))):
                conds.append(_cond(draw, field, pool))
        either = None
        if draw(st.integers(0, 3)) == 0:  # an OR of two conditions
            either = (_cond(draw, draw(st.sampled_from(["title", "year"])), TITLES),
                      _cond(draw, "title", TITLES))
            if either[0][0] == "year":
                either = (_cond(draw, "year", YEARS), either[1])
        excluded = _cond(draw, draw(st.sampled_from(["year", "title", "rank"])), YEARS) \
            if draw(st.integers(0, 3)) == 0 else None
        if excluded is not None and excluded[0] == "title":
            excluded = _cond(draw, "title", TITLES)
        qs = Track.objects.filter(*[Q(**{f"{f}__{lk}": v}) for f, lk, v in conds])
        if excluded is not None:  # exclude(): NOT, true for an item missing the attribute
            qs = qs.exclude(**{f"{excluded[0]}__{excluded[1]}": excluded[2]})
        if either is not None:
            qs = qs.filter(Q(**{f"{either[0][0]}__{either[0][1]}": either[0][2]})
                           | Q(**{f"{either[1][0]}__{either[1][1]}": either[1][2]}))
        expected = [r for r in rows if all(_holds(r, *c) for c in conds)
                    and (either is None or any(_holds(r, *c) for c in either))
                    and (excluded is None or not _holds(r, *excluded))]
        order = draw(st.sampled_from([None, None, ("rank",), ("-rank",), ("year", "title"), ("title",)]))
        if order is not None:
            qs = qs.order_by(*order)

        with dynorm.capture() as cap:
            try:
                got = list(qs)
                refused = None
            except InvalidQuery as exc:  # ScanRequired included
                refused = exc
        event(f"refused: {type(refused).__name__}" if refused is not None
              else f"served by {cap.requests[0].params.get('IndexName', 'the table')}")
        if refused is not None:
            assert cap.requests == [], refused
            given = {f for f, lk, _ in conds if lk == "exact"}
            assert not ("album_id" in given and order is None), (conds, either, excluded, refused)
            continue
        assert sorted(o.track_id for o in got) == sorted(r["track_id"] for r in expected), (
            conds, either, excluded, order)
        if order is not None:
            names = [o.lstrip("-") for o in order]
            key = [tuple(getattr(o, f) for f in names) for o in got]
            want = sorted(tuple(r[f] for f in names) for r in expected)
            assert key == (want[::-1] if order[0].startswith("-") else want), (conds, order)
