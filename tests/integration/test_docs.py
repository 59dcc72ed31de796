"""Every ```python block in docs/ runs, page by page, against DynamoDB Local."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dynorm import tables

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks(page: str) -> list[str]:
    return _BLOCK.findall((DOCS / page).read_text())


def test_model_pages_show_the_current_layout() -> None:
    from demo_project.layout import main

    assert main([]) == 0, "run: python -m demo_project.layout --write"


def test_docs_have_runnable_examples() -> None:
    assert sum(len(blocks(p)) for p in PAGES) >= 15
    for page in ("tutorial.md", "querying.md"):
        assert len(blocks(page)) >= 6, page


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(page: str) -> None:
    known = list(tables._TABLES)
    ns: dict[str, object] = {"__name__": f"docs_{page[:-3].replace('/', '_')}"}
    try:
        for i, code in enumerate(blocks(page)):
            exec(compile(code, f"docs/{page}#block{i + 1}", "exec"), ns)  # noqa: S102
        # pages that only define test functions: run them with the suite's fixtures
        for name, fn in list(ns.items()):
            if name.startswith("test_") and callable(fn):
                fn(dynorm_tables=None)  # type: ignore[operator]
    finally:
        for table in [t for t in tables._TABLES if t not in known]:
            if table.exists():
                table.delete_table()
            tables._TABLES.remove(table)
