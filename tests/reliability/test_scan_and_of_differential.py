"""Explicit Scans and ``collection().of()`` against a brute-force oracle.

The two planner paths :mod:`tests.reliability.test_query_differential` does not draw: ``scan()``
(every condition in the FilterExpression, the type condition first; on the table or, through
``using()``, on a GSI) and an item collection narrowed to one entity type by its sort-key
prefix (``of(Ev)``, ``of(Rec)``, ``of(Rec, name=...)``). Random items under a fresh tenant,
random conditions; a Scan returns items in no order, so its results are compared as a multiset
(listed, counted, tested for existence, or paged with cursors), an item collection's in
sort-key order, reading no item of another type.
"""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import dynorm
from tests.reliability.test_query_differential import (
    Ev,
    Rec,
    filter_cond,
    holds,
    ios,
    moments,
    names,
    numbers,
    tags,
    to_q,
)
from tests.tiers import examples

__all__ = ["ios"]  # the module-scoped runners fixture (one sync, one asyncio), used here too

_tenants = itertools.count()


def _rkey(o: Any) -> Any:
    return ("REC", o["name"] if isinstance(o, dict) else o.name)


def _ekey(o: Any) -> Any:
    at = o["at"] if isinstance(o, dict) else o.at
    return ("EV", at.astimezone(dt.timezone.utc))


def _scan_shape(draw: Any, qs: Any, expected: list[Any], ios: dict[str, Any]) -> None:
    """Evaluate a Scan one drawn way; a Scan has no order, so compare multisets."""
    io = ios[draw(st.sampled_from(["sync", "async"]))]
    shape = draw(st.sampled_from(["list", "count", "exists", "pages"]))
    want = sorted(_rkey(r) for r in expected)
    if shape == "list":
        assert sorted(_rkey(o) for o in io.list(qs)) == want
    elif shape == "count":
        assert io(qs, "count") == len(expected)
    elif shape == "exists":
        assert io(qs, "exists") is bool(expected)
    else:
        size = draw(st.integers(1, 4))
        seen: list[Any] = []
        cursor = None
        for _ in range(len(expected) + 3):
            page = io(qs, "page", size, cursor)
            assert len(page.items) <= size
            seen += [_rkey(o) for o in page.items]
            cursor = page.cursor
            if cursor is None:
                break
        assert cursor is None
        assert sorted(seen) == want


@pytest.mark.usefixtures("dynorm_tables")
# no shrinking, as in test_query_differential: every example writes to DynamoDB Local
@settings(max_examples=examples(40), deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_scans_and_collection_of_match_a_brute_force_oracle(data: Any, ios: dict[str, Any]) -> None:
    draw = data.draw
    tenant = f"s{next(_tenants)}#\U0010ffff"
    recs = draw(st.lists(st.fixed_dictionaries({"name": names, "n": numbers, "tag": tags}), max_size=7,
                         unique_by=(lambda r: r["name"], lambda r: float(r["n"]) if abs(r["n"]) < 2**53 else r["n"])))
    evs = draw(st.lists(st.fixed_dictionaries({"at": moments, "tag": tags}), max_size=3,
                        unique_by=lambda e: e["at"].astimezone(dt.timezone.utc)))
    Rec.objects.bulk_create([Rec(tenant=tenant, **r) for r in recs])
    Ev.objects.bulk_create([Ev(tenant=tenant, **e) for e in evs])

    for _ in range(2):
        path = draw(st.sampled_from(["scan", "scan", "scan_index", "of_ev", "of_rec", "of_rec_name"]))
        if path.startswith("scan"):
            # the tenant condition keeps other examples' items (and the Ev items) out of the answer
            qs = Rec.objects.scan().filter(tenant=tenant)
            if path == "scan_index":
                qs = qs.using("by_n")
            cond = filter_cond(draw, recs)
            if draw(st.booleans()):
                qs = qs.exclude(to_q(cond))
                cond = ("not", cond)
            else:
                qs = qs.filter(to_q(cond))
            try:
                operation = qs.explain().operation
            except dynorm.InvalidQuery as exc:
                # contradictory equalities (tag='b' and tag='c') are refused before any request, as on
                # every path (test_query_differential): only ever for an empty answer
                assert "must equal both" in str(exc)
                assert not [r for r in recs if holds(cond, r)]
                continue
            assert operation == "Scan"
            _scan_shape(draw, qs, [r for r in recs if holds(cond, r)], ios)
            continue
        collection = Rec.objects.collection(tenant=tenant)
        if path == "of_ev":
            qs, expected = collection.of(Ev), [_ekey(e) for e in sorted(evs, key=lambda e: e["at"])]
        elif path == "of_rec":
            qs, expected = collection.of(Rec), [_rkey(r) for r in sorted(recs, key=lambda r: r["name"])]
        else:
            name = draw(st.sampled_from([r["name"] for r in recs])) if recs and draw(st.booleans()) else draw(names)
            qs, expected = collection.of(Rec, name=name), [_rkey(r) for r in recs if r["name"] == name]
        with dynorm.capture() as c:
            got = [(_ekey if isinstance(o, Ev) else _rkey)(o) for o in qs]
        assert got == expected
        # the sort-key prefix keeps the other type's items out of the read itself
        assert sum(r.scanned for r in c.requests) == len(expected)
