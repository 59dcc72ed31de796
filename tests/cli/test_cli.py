"""The CLI through click's CliRunner: thin commands, one-line errors, exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from demo_project.catalog.models import Catalog, Product
from dynorm.cli import cli


@pytest.fixture
def config(tmp_path: Path, dynamodb_local: str) -> Path:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(f"models: [demo_project.catalog.models]\ntable_prefix: cli-{tmp_path.name}-\n"
                   f"connection: {{region: us-east-1, endpoint: '{dynamodb_local}'}}\n")
    return cfg


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_help_lists_commands() -> None:
    code, out = run("--help")
    assert code == 0
    for command in ("check", "migrate", "shell", "local"):
        assert command in out


def test_check_passes_for_demo(config: Path) -> None:
    code, out = run("--config", str(config), "check")
    assert code == 0 and "No problems found (" in out


@pytest.mark.integration
def test_migrate_plan_then_apply_then_up_to_date(config: Path) -> None:
    code, out = run("--config", str(config), "migrate", "--plan")
    assert code == 0 and "would CreateTable" in out and "nothing was changed" in out
    assert not Catalog.exists()
    code, out = run("--config", str(config), "migrate")
    assert code == 0 and "CreateTable: create table" in out
    assert Catalog.exists()
    code, out = run("--config", str(config), "migrate")
    assert code == 0 and "up to date" in out
    Catalog.delete_table()


@pytest.mark.integration
def test_shell_c_runs_code_with_entities_preloaded(config: Path) -> None:
    run("--config", str(config), "migrate")
    code, out = run("--config", str(config), "shell", "-c",
                    "Brand.objects.create(brand_id='1', name='Acme'); print([b.name for b in Brand.objects.all()]);"
                    "print(Product.objects.by_brand('1').explain())")
    assert code == 0, out
    assert "['Acme']" in out and "Query" in out and "GSI1" in out
    assert Product.objects.by_brand("1").count() == 0
    Catalog.delete_table()


def test_shell_banner_lists_entities_and_patterns() -> None:
    from dynorm.cli.shell import banner

    text = banner([Catalog])
    assert "Product [PRODUCT]" in text and ".using('by_brand') GSI1" in text
    assert "Product.objects.by_brand()" in text


def test_errors_are_one_line_and_nonzero(tmp_path: Path) -> None:
    bad = tmp_path / "dynorm.yaml"
    bad.write_text("models: [demo_project.catalog.models\n")
    code, out = run("--config", str(bad), "check")
    assert code == 1
    assert out.count("\n") == 1 and "ConfigurationError: invalid YAML" in out and "Traceback" not in out
    unknown = tmp_path / "u.yaml"
    unknown.write_text("colour: red\n")
    code, out = run("--config", str(unknown), "check")
    assert code == 1 and "unknown key(s) 'colour'" in out


def test_missing_models_module(tmp_path: Path) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("models: [no_such_module_xyz]\n")
    code, out = run("--config", str(cfg), "check")
    assert code == 1 and "cannot import models module 'no_such_module_xyz'" in out


def test_traceback_flag_shows_the_exception(tmp_path: Path) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("colour: red\n")
    result = CliRunner().invoke(cli, ["--traceback", "--config", str(cfg), "check"])
    assert result.exit_code == 1 and type(result.exception).__name__ == "ConfigurationError"


def test_unreachable_endpoint_is_one_clear_line(tmp_path: Path) -> None:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("models: [demo_project.catalog.models]\nconnection: {endpoint: 'http://127.0.0.1:9', "
                   "max_attempts: 1, connect_timeout: 1}\n")
    code, out = run("--config", str(cfg), "migrate")
    assert code == 1 and "could not reach DynamoDB at http://127.0.0.1:9" in out
    assert "Is DynamoDB Local running?" in out


@pytest.fixture
def migrating_config(tmp_path: Path, dynamodb_local: str) -> Path:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(f"models: [demo_project.catalog.models]\nmigrations: demo_project.migrations\n"
                   f"table_prefix: mig-{tmp_path.name}-\n"
                   f"connection: {{region: us-east-1, endpoint: '{dynamodb_local}'}}\n")
    return cfg


def test_demo_migrations_match_the_models(migrating_config: Path) -> None:
    code, out = run("--config", str(migrating_config), "makemigrations", "--check")
    assert code == 0 and "No changes detected." in out


@pytest.mark.integration
def test_migrate_plan_json_and_showmigrations(migrating_config: Path) -> None:
    code, out = run("--config", str(migrating_config), "migrate", "--plan")
    assert code == 0 and "0001_initial:" in out and "rekey PRODUCT in fromatoz from v1 to v2" in out
    code, out = run("--config", str(migrating_config), "showmigrations")
    assert code == 0 and "[ ] 0001_initial" in out and "[ ] 0002_catalog_v2" in out
    import json

    result = CliRunner().invoke(cli, ["--config", str(migrating_config), "migrate", "--json"], catch_exceptions=False)
    code, summary = result.exit_code, json.loads(result.stdout)  # stderr: JSON progress lines
    assert code == 0 and summary["applied"] == ["0001_initial", "0002_catalog_v2", "0003_seed_models",
                                                "0004_library_by_category"]
    code, out = run("--config", str(migrating_config), "showmigrations")
    assert "[X] 0001_initial" in out and "[X] 0002_catalog_v2" in out
    code, out = run("--config", str(migrating_config), "migrate")
    assert code == 0 and "No migrations to apply." in out
    from dynorm.tables import all_tables

    for table in all_tables():
        if table.exists():
            table.delete_table()


def test_makemigrations_without_package_is_a_clear_error(config: Path) -> None:
    code, out = run("--config", str(config), "makemigrations")
    assert code == 1 and "no migrations package configured" in out


def test_patterns_for_kayak_lists_all_eight_patterns_and_templates(tmp_path: Path) -> None:
    import json

    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text("models: [demo_project.kayak.models]\n")
    code, out = run("--config", str(cfg), "patterns")
    assert code == 0
    doc = json.loads(out)
    assert doc["Access Patterns"] and len(doc["Access Patterns"]) == 8
    for pattern in ("get the location of all rental stores", "get the inventory of a store",
                    "get the current employees of a store", "get all employees who have worked at a store",
                    "get all stores an employee has worked at", "get all rentals a customer has out",
                    "get customer rental history for a location", "get customer rental history for all locations"):
        assert pattern in doc["Access Patterns"]
    store = doc["store"][0]
    assert store["PK"] == "{version}#store#storeULID#{store_id}"
    assert store["SK"]["metadata"]["PK1"] == "{version}#stores"
    assert "activeRentals#personULID#{person_id}#inventoryULID#{inventory_id}" in store["SK"]
    rental = doc["rental"][0]["SK"]["metadata"]
    assert rental["PK5"] == "{version}#rentalInventoryPerson#{inventory_id}" and "_commentGSI6" in rental
    requests = {r["pattern"]: r["request"] for r in doc["_accessPatternRequests"]}
    assert requests["get all rentals a customer has out"].startswith("Query kayak index GSI4")
    assert "<person_id>" in requests["get customer rental history for a location"]
    code, out = run("--config", str(cfg), "patterns", "--format", "markdown", "--entity", "storeMetadata")
    assert code == 0 and "# Access patterns" in out and "get the location of all rental stores" in out
    code, out = run("--config", str(cfg), "patterns", "--format", "yaml")
    assert code == 0 and "Access Patterns:" in out
    code, out = run("--config", str(cfg), "patterns", "--entity", "Nope")
    assert code == 1 and "no entity 'Nope'" in out
