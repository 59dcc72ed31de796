"""A number is checked and rendered once per write, however many steps ask (issue 24).

``Reading(value=1.5)`` checks the value in ``__init__``, ``save()`` checks it again in
``full_clean()`` and ``serialize()`` renders it: the Decimal work behind :func:`dynorm._codec.number_text`
runs once for that number (an identity memo); every refusal still refuses, every time. No I/O.
"""

from __future__ import annotations

import decimal
from typing import Any

import pytest

import dynorm
from dynorm import _codec
from dynorm.writes import prepare_put
from tests.models import Reading


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []
    real = _codec._number_text

    def counting(value: Any) -> str:
        seen.append(value)
        return real(value)

    monkeypatch.setattr(_codec, "_number_text", counting)
    _codec._RENDERED.clear()
    return seen


def test_a_float_is_rendered_once_for_init_full_clean_and_serialize(renders: list[Any]) -> None:
    r = Reading(sensor="s", year=2026, seq=1, value=1.5)
    op = prepare_put(r, create=True)
    assert op.params["Item"]["value"] == {"N": "1.5"}
    assert renders == [1.5]  # the ints take the one-comparison path: nothing to render


@pytest.mark.parametrize("bad", [float("nan"), decimal.Decimal("1" * 39), 1e200, decimal.Decimal("1E-131")])
def test_a_refused_number_is_refused_every_time(renders: list[Any], bad: Any) -> None:
    for _ in range(3):
        with pytest.raises(_codec.BadValue):
            _codec.number_text(bad)
        with pytest.raises(dynorm.ValidationError, match="value"):
            Reading(sensor="s", year=2026, seq=1, value=bad)
    assert len(renders) == 6  # never remembered


def test_equal_numbers_of_other_forms_are_each_rendered_once_to_the_text_dynamodb_stores(renders: list[Any]) -> None:
    a, b = decimal.Decimal("1.50"), decimal.Decimal("1.5")
    assert [_codec.number_text(x) for x in (a, b, a, b)] == ["1.5", "1.5", "1.5", "1.5"]
    assert renders == [a, b]
