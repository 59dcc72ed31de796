"""`dynorm patterns` renders access patterns that take a range (start, end) of strings, numbers or datetimes."""

from __future__ import annotations

from dynorm.patterns import build_document


def _requests(module: str) -> dict[str, str]:
    import importlib

    from dynorm.tables import all_tables

    mod = importlib.import_module(module)
    tables = [t for t in all_tables() if any(e.__module__ == mod.__name__ for e in t.entities().values())]
    return {r["call"]: r["request"] for r in build_document(tables)["_accessPatternRequests"]}


def test_a_string_range_pattern_is_rendered_with_its_placeholders() -> None:
    requests = _requests("demo_project.orders.models")
    call = next(c for c in requests if ".placed_between(" in c)
    text = requests[call]
    assert "not planned" not in text, text
    assert "<start>" in text and "<end>" in text and "<customer_id>" in text, text


def test_datetime_range_patterns_are_rendered() -> None:
    requests = _requests("demo_project.monithor.models")
    for call, text in requests.items():
        if "between(" in call:
            assert "not planned" not in text and "<start>" in text and "<end>" in text, (call, text)
