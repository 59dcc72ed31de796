"""order_by() a sort-key field follows the documented key encoding, and a Scan refuses any order
on DynamoDB Local.

docs/modelling.md: numbers in a key template get text that sorts numerically (``key_encoding =
"ordered"``), so ``order_by("sk")`` returns numeric order. ``order_by(field)`` must then be accepted for
such a field wherever its key text orders the results (the first sort-key field not pinned by an
equality), whatever the field's class is called: it hangs on the field's declared capability. A
Scan returns items in no order: ``order_by()`` on it, ``"sk"`` included, is refused before any request.
"""

from __future__ import annotations

import decimal
import random
from typing import Any

import pytest

import dynorm
from dynorm import Entity, Table, fields


class Boards(Table):
    """A table of its own: its entities share one partition-key template on purpose (``check()`` reports
    that), which must not show up in the checks of other tables' tests."""

    class Meta:
        table_name = "order_boards"


class Score(fields.Integer):
    """A user's subclass: it must order like its base."""


def _ranked(name: str, rank: Any, sk: str = "P#{part}#R#{rank}") -> Any:
    Meta = type("Meta", (), {"table": Boards, "entity_type": name.upper(), "pk": "{version}#BOARD#{board}",
                             "sk": sk})
    return type(name, (Entity,), {"__module__": __name__, "Meta": Meta, "board": fields.String(),
                                  "part": fields.String(), "rank": rank})


RankedInt = _ranked("RankedInt", fields.Integer())
RankedDec = _ranked("RankedDec", fields.Decimal())
RankedNum = _ranked("RankedNum", fields.Number())
RankedScore = _ranked("RankedScore", Score())
RankFirst = _ranked("RankFirst", fields.Integer(), sk="R#{rank}#P#{part}")

INTS = [-1000, -12, -5, -1, 0, 1, 2, 9, 10, 11, 100, 1234567, 10 ** 30]
CASES = [
    (RankedInt, INTS),
    (RankedDec, [decimal.Decimal(x) for x in ("-100", "-1.5", "-1.25", "-1", "0", "0.25", "2", "10.5", "10.05")]),
    (RankedNum, [-1e20, -3.5, -0.5, 0, 0.001, 2, 3.14, 20, 1e20]),
    (RankedScore, INTS),
]


def _load(model: Any, values: list[Any]) -> None:
    shuffled = list(values)
    random.Random(21).shuffle(shuffled)
    for v in shuffled:
        model.objects.create(board="b", part="x", rank=v)
        model.objects.create(board="b", part="w", rank=v)  # another part: not in part="x"'s results


@pytest.mark.parametrize("model, values", CASES, ids=[c[0].__name__ for c in CASES])
def test_order_by_a_numeric_sort_key_field_returns_numeric_order(model: Any, values: list[Any]) -> None:
    _load(model, values)
    qs = model.objects.filter(board="b", part="x")
    with dynorm.capture() as c:
        asc = [o.rank for o in qs.order_by("rank")]
    assert asc == sorted(values) and c.operations == ["Query"]
    assert [o.rank for o in qs.order_by("-rank")] == sorted(values, reverse=True)
    assert [o.rank for o in qs.order_by("sk")] == asc  # as docs/modelling.md says
    assert qs.order_by("-rank").explain().params["ScanIndexForward"] is False
    assert qs.latest("rank").rank == max(values) and qs.earliest("rank").rank == min(values)
    assert [o.rank for o in qs.filter(rank__gte=0).order_by("rank")] == sorted(v for v in values if v >= 0)


def test_order_by_the_first_sort_key_field_needs_nothing_pinned() -> None:
    _load(RankFirst, INTS)
    got = [(o.rank, o.part) for o in RankFirst.objects.filter(board="b").order_by("rank")]
    assert got == sorted((v, p) for v in INTS for p in ("w", "x"))


def test_order_by_a_sort_key_field_behind_an_unpinned_field_is_still_refused() -> None:
    with dynorm.capture() as c:
        with pytest.raises(dynorm.InvalidQuery, match=r"can order by: primary: sk, part\b"):
            list(RankedInt.objects.filter(board="b").order_by("rank"))
    assert c.count == 0


@pytest.mark.parametrize("order", ["sk", "-sk", "rank", "-rank", "pk", "part"])
@pytest.mark.parametrize("where", ["scan_then_order", "order_then_scan"])
def test_order_by_on_a_scan_is_refused_before_any_request(order: str, where: str) -> None:
    RankedInt.objects.create(board="b", part="x", rank=1)
    base = RankedInt.objects.all()
    qs = base.scan().order_by(order) if where == "scan_then_order" else base.order_by(order).scan()
    with dynorm.capture() as c:
        with pytest.raises(dynorm.InvalidQuery, match="a Scan returns items in no particular order"):
            list(qs)
        with pytest.raises(dynorm.InvalidQuery, match="a Scan returns items in no particular order"):
            qs.explain()
    assert c.count == 0
    assert [o.rank for o in base.scan()] == [1]  # a Scan without order_by() still runs
