"""The demo project the way a new user meets it (`make demo`): empty tables, `dynorm migrate`, every access pattern.

The integration fixture creates every table from the models, which hides a missing migration.
These tests use tables of their own, under a fresh prefix, that only the migrations in
``demo_project/migrations/`` create (through the real ``dynorm migrate``, with the repository's
``dynorm.yaml``). Then each seed model is loaded and each of its access patterns must return its
results in exactly one request; the migrated tables must carry exactly the indexes the models
declare; and ``makemigrations --check`` must be clean. A model change without its migration fails here.
"""

from __future__ import annotations

import importlib
import itertools
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner, Result

import dynorm
from demo_project.runner import run_pattern
from dynorm import backend, conf
from dynorm.cli import cli
from dynorm.migrations.api import make_migrations, pending_changes
from dynorm.migrations.loader import load_migrations
from dynorm.tables import Table, all_tables

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "dynorm.yaml"
DEMO_MIGRATIONS = "demo_project.migrations"
SEEDS = {  # app -> (number of access patterns, the operations they send)
    "kayak": (8, {"Query"}),
    "orders": (4, {"GetItem", "Query"}),
    "monithor": (7, {"GetItem", "Query"}),
    "library": (9, {"GetItem", "Query", "PutItem", "TransactWriteItems"}),
}
#: the catalog demo's two writes; its seven other patterns are reads
UPDATES = {"Decrease stock level", "Increase stock level"}
_n = itertools.count()


def dynorm_cmd(*args: str) -> Result:
    """Run ``dynorm --config dynorm.yaml ARGS`` (the repository's own config) in this process."""
    return CliRunner().invoke(cli, ["--config", str(CONFIG), *args], catch_exceptions=False)


def demo_tables() -> list[type[Table]]:
    """The tables of the models dynorm.yaml lists (the demo apps)."""
    mods = set(conf.load_file(CONFIG)["models"])
    return [t for t in all_tables() if t.__module__ in mods]


def _tables_named(prefix: str) -> list[str]:
    names: list[str] = []
    params: dict[str, Any] = {}
    while True:
        resp = backend.call("ListTables", params)
        names += [n for n in resp["TableNames"] if n.startswith(prefix)]
        if "LastEvaluatedTableName" not in resp:
            return names
        params["ExclusiveStartTableName"] = resp["LastEvaluatedTableName"]


@pytest.fixture
def empty_demo(dynamodb_local: str) -> Iterator[str]:
    """No demo table yet: a table prefix of this test's own (the fixture's tables are elsewhere).

    The commands read the repository's dynorm.yaml; the session's endpoint and this prefix override
    it. Afterwards every table under the prefix is deleted and the previous settings come back.
    """
    previous_prefix, previous_file = conf.get_settings().table_prefix, conf._config_file
    prefix = f"demo{os.getpid()}-{next(_n)}-"
    conf.configure(table_prefix=prefix)
    assert not _tables_named(prefix)
    try:
        yield prefix
    finally:
        for name in _tables_named(prefix):
            backend.call("DeleteTable", {"TableName": name})
        conf.use_file(previous_file)
        conf.configure(table_prefix=previous_prefix)


def migrate(*args: str) -> Result:
    """``dynorm migrate ARGS``: it must succeed and find nothing missing from the migrations."""
    result = dynorm_cmd("migrate", *args)
    assert result.exit_code == 0, result.output
    assert "WARNING" not in result.stderr, result.stderr
    return result


def assert_indexes_as_declared() -> None:
    """Each migrated demo table has exactly the GSIs and LSIs its model declares (DescribeTable)."""
    for table in demo_tables():
        desc = backend.call("DescribeTable", {"TableName": table.table_name()})["Table"]
        gsis = {g["IndexName"] for g in desc.get("GlobalSecondaryIndexes", [])}
        lsis = {i["IndexName"] for i in desc.get("LocalSecondaryIndexes", [])}
        m = table._meta
        assert gsis == {*m.gsis, *m.multi_gsis}, (table.table_name(), gsis)
        assert lsis == set(m.lsis), (table.table_name(), lsis)


# ---------------------------------------------------------------------------------------------------
# the demo, from empty tables
# ---------------------------------------------------------------------------------------------------

def test_make_demo_catalog_from_empty_tables(empty_demo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from demo_project.catalog import demo
    from demo_project.catalog.models import Brand, Category, Product

    names = [m.name for m in load_migrations(DEMO_MIGRATIONS)]
    # as `make demo` runs it: the catalog at v1, its data under v1 keys, then every later migration
    assert "Applied 1 migration(s)" in migrate("0001_initial").stdout
    assert demo.main(["load-v1"]) == 0
    shown = dynorm_cmd("showmigrations")
    assert shown.exit_code == 0 and "WARNING" not in shown.stderr and "[X] 0001_initial" in shown.stdout
    out = migrate().stdout
    assert f"Applied {len(names) - 1} migration(s)" in out and ", ".join(names[1:]) in out
    assert "failed=0" in out and "rewritten=300" in out  # every product moved from v1 to v2 keys
    assert_indexes_as_declared()

    runs: list[tuple[str, int, list[str], Any]] = []

    def run(number: int, title: str, call: str, fn: Any, plan: Any) -> Any:
        with dynorm.capture() as c:
            result = fn()
        runs.append((title, c.count, list(c.operations), result))
        return result

    monkeypatch.setattr(demo, "_run", run)
    assert demo.main(["patterns"]) == 0
    assert len(runs) == 9
    results = {title: result for title, _, _, result in runs}
    for title, count, operations, _ in runs:
        assert count == 1, (title, operations)
        if title in UPDATES:
            # a queryset update() without a read: one one-action transaction (applied once, however
            # often the SDK retries it); the new stock level is read when first read (test_writes.py)
            assert operations == ["TransactWriteItems"], (title, operations)
    assert (results["Decrease stock level"].stock_level, results["Increase stock level"].stock_level) == \
        (results["Get product by id"].stock_level - 2, results["Get product by id"].stock_level + 3)
    assert len(results["Get all brands"]) == 10 and len(results["Get all categories"]) == 8
    product = results["Get product by id"]
    by_brand = results["Get products by brand"]
    assert by_brand and {p.brand_id for p in by_brand} == {product.brand_id}
    both = results["Get products by brand and category"]
    assert product.product_id in {p.product_id for p in both}
    assert {(p.brand_id, p.category_id) for p in both} == {(product.brand_id, product.category_id)}
    assert {p.product_id for p in both} == {p.product_id for p in results["Get products by category and brand"]}
    assert {p.category_id for p in results["Get products by category"]} == {product.category_id}
    assert Brand.objects.count() == 10 and Category.objects.count() == 8 and Product.objects.scan().count() == 300


@pytest.mark.parametrize("app", sorted(SEEDS))
def test_make_demo_seed_model_from_empty_tables(app: str, empty_demo: str) -> None:
    names = [m.name for m in load_migrations(DEMO_MIGRATIONS)]
    out = migrate().stdout
    assert f"Applied {len(names)} migration(s)" in out and ", ".join(names) in out
    assert_indexes_as_declared()
    loader = importlib.import_module(f"demo_project.{app}.load")
    demo = importlib.import_module(f"demo_project.{app}.demo")
    ids = loader.load()
    patterns = demo.patterns(ids)
    count, operations = SEEDS[app]
    assert len(patterns) == count
    seen: set[str] = set()
    results: dict[str, Any] = {}
    for i, pattern in enumerate(patterns, start=1):
        result, capture = run_pattern(i, pattern)
        assert capture.count == 1, (pattern.title, capture.operations)
        seen |= set(capture.operations)
        if isinstance(result, list):
            assert result, f"{pattern.title}: no results"
        results[pattern.title] = result
    assert seen == operations
    if app == "library":  # the pattern the missing migration broke: the multi-attribute GSI ByCategory
        articles = results["look up all articles of a category in chronological order"]
        assert {a.category for a in articles} == {ids["category"]}
        assert [a.year for a in articles] == sorted(a.year for a in articles)


# ---------------------------------------------------------------------------------------------------
# the guard: the models and the migrations agree, and a change without its migration is caught
# ---------------------------------------------------------------------------------------------------

def test_makemigrations_check_is_clean_on_the_demo_project(empty_demo: str) -> None:
    result = dynorm_cmd("makemigrations", "--check")
    assert result.exit_code == 0 and "No changes detected." in result.output
    assert pending_changes(load_migrations(DEMO_MIGRATIONS), demo_tables()) == []


def test_a_model_change_without_its_migration_fails_the_check_and_migrate_warns(
        empty_demo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from demo_project.catalog.models import Product

    # a new key version (its templates hold {version}: a real rekey), and no migration for it
    monkeypatch.setattr(Product._meta, "key_version", "v3")
    op = "rekey PRODUCT in fromatoz from v2 to v3"
    check = dynorm_cmd("makemigrations", "--check")
    assert check.exit_code == 1 and op in check.output and "models have changes with no migration" in check.output
    for args in (["showmigrations"], ["migrate", "--plan"]):
        result = dynorm_cmd(*args)
        assert result.exit_code == 0, result.output
        assert ("WARNING: Your models in app(s) 'catalog' have changes that are not yet reflected in a migration"
                in result.stderr), args
        assert f"  catalog: {op}" in result.stderr and "Run `dynorm makemigrations`" in result.stderr


def test_without_0004_the_library_index_change_is_pending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 20: the library models moved onto the multi-attribute GSI ByCategory with no migration
    pkg = f"demomig{os.getpid()}_{next(_n)}"
    src = REPO / "demo_project" / "migrations"
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text("")
    shutil.copytree(src, tmp_path / pkg / "migrations",
                    ignore=lambda _d, files: [f for f in files if f[:4].isdigit() and int(f[:4]) >= 4])
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        migrations = load_migrations(f"{pkg}.migrations")
        assert [m.name for m in migrations][-1] == "0003_seed_models"
        changes = pending_changes(migrations, demo_tables())
        assert [(c.app, c.table) for c in changes] == [("library", "library")]
        assert [op.describe() for op in changes[0].operations] == [
            "add GSI(s) ByCategory to library", "drop GSI(s) GSI1 of library (items are not rewritten)"]
        made = make_migrations(f"{pkg}.migrations", demo_tables(), check=True)  # what --check reports
        assert [op.describe() for op in made.operations] == [op.describe() for op in changes[0].operations]
    finally:
        for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
            del sys.modules[name]
