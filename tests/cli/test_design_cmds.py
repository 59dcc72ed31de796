"""``dynorm export workbench|cloudformation`` and ``dynorm import workbench`` through the CLI.

The round trip: the demo project's models exported, imported into a module, that module checked by
``dynorm check`` and exported again (in a fresh ``dynorm`` process: the generated classes never meet the
demo's in one registry) gives an equivalent model (:func:`equivalent`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from dynorm.cli import cli

DEMO_MODELS = ["demo_project.catalog.models", "demo_project.kayak.models", "demo_project.orders.models",
               "demo_project.monithor.models", "demo_project.library.models"]
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def dynorm_process(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m dynorm ARGS`` in ``workdir`` (its dynorm.yaml; its modules importable)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(workdir), str(ROOT)])}
    env.pop("DYNORM_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "dynorm", *args], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def demo_config(tmp_path: Path) -> Path:
    cfg = tmp_path / "dynorm.yaml"
    cfg.write_text(yaml.safe_dump({"models": DEMO_MODELS, "table_prefix": "prod-"}))
    return cfg


def equivalent(model: dict[str, Any]) -> dict[str, Any]:
    """What a round trip keeps: everything but the metadata (dates, the description listing the access
    patterns), the access patterns (a QuerySet method is code: the import lists them as comments) and the
    sample data (the import generates classes, not items)."""
    out = json.loads(json.dumps(model))
    out.pop("ModelMetadata")
    out["ModelSchema"].pop("accessPatterns")
    for table in out["DataModel"]:
        table.pop("TableData")
        for facet in table["TableFacets"]:
            facet.pop("TableData")
    return out


def test_workbench_round_trip_of_the_demo_project(demo_config: Path, tmp_path: Path) -> None:
    first = tmp_path / "model.json"
    code, out = run("--config", str(demo_config), "export", "workbench", "-o", str(first))
    assert code == 0, out
    model = json.loads(first.read_text())
    assert len(model["DataModel"]) == 5 and model["ModelSchema"]["accessPatterns"]

    code, out = run("import", "workbench", str(first), "-o", str(tmp_path / "generated_models.py"))
    assert code == 0, out
    source = (tmp_path / "generated_models.py").read_text()
    assert "class Product(Entity):" in source and "by_brand(<brand_id>)" in source  # the patterns, as comments

    (tmp_path / "dynorm.yaml").write_text("models: [generated_models]\n")
    checked = dynorm_process(tmp_path, "check")
    assert checked.returncode == 0, checked.stderr
    assert "No problems found (22 entities on 5 table(s))" in checked.stdout
    again = dynorm_process(tmp_path, "export", "workbench")
    assert again.returncode == 0, again.stderr
    second = json.loads(again.stdout)
    assert equivalent(second) == equivalent(model)
    # the comparison can fail: a changed template is a difference
    changed = json.loads(again.stdout)
    changed["ModelSchema"]["entities"][0]["pk"] += "#X"
    assert equivalent(changed) != equivalent(model)


def test_a_model_designed_in_workbench_becomes_classes_that_pass_check(tmp_path: Path) -> None:
    model = {"ModelName": "Offers", "DataModel": [{
        "TableName": "CreditCardOffers",
        "KeyAttributes": {"PartitionKey": {"AttributeName": "PK", "AttributeType": "S"},
                          "SortKey": {"AttributeName": "SK", "AttributeType": "S"}},
        "NonKeyAttributes": [{"AttributeName": "AccountId", "AttributeType": "N"},
                             {"AttributeName": "FirstName", "AttributeType": "S"},
                             {"AttributeName": "Addresses", "AttributeType": "M"},
                             {"AttributeName": "OfferId", "AttributeType": "S"},
                             {"AttributeName": "Tags", "AttributeType": "SS"},
                             {"AttributeName": "CreatedDate", "AttributeType": "S"}],
        "TableFacets": [
            {"FacetName": "Accounts", "KeyAttributeAlias": {"PartitionKeyAlias": "ACCT#<AccountId>",
                                                           "SortKeyAlias": "METADATA"},
             "NonKeyAttributes": ["AccountId", "FirstName", "Addresses", "CreatedDate"]},
            {"FacetName": "account-offers", "KeyAttributeAlias": {"PartitionKeyAlias": "ACCT#${AccountId}",
                                                                 "SortKeyAlias": "OFFER#{OfferId}"},
             "NonKeyAttributes": ["AccountId", "OfferId", "Tags", "GSI1PK"]}],
        "GlobalSecondaryIndexes": [
            {"IndexName": "GSI1", "KeyAttributes": {"PartitionKey": {"AttributeName": "GSI1PK", "AttributeType": "S"},
                                                    "SortKey": {"AttributeName": "GSI1SK", "AttributeType": "S"}},
             "Projection": {"ProjectionType": "ALL"}},
            {"IndexName": "ByAccount", "KeyAttributes": {
                "PartitionKey": {"AttributeName": "AccountId", "AttributeType": "N"},
                "SortKey": {"AttributeName": "CreatedDate", "AttributeType": "S"}},
             "Projection": {"ProjectionType": "ALL"}}],
        "BillingMode": "PAY_PER_REQUEST"}]}
    path = tmp_path / "offers.json"
    path.write_text(json.dumps(model))
    code, source = run("import", "workbench", str(path))
    assert code == 0, source
    assert "pk = 'ACCT#{account_id}'" in source and "sk = 'OFFER#{offer_id}'" in source
    assert "class AccountOffers(Entity):" in source
    assert "'by_account': Index('ByAccount', pk=('account_id',), sk=('created_date',))" in source
    (tmp_path / "offers_models.py").write_text(source)
    (tmp_path / "dynorm.yaml").write_text("models: [offers_models]\n")
    checked = dynorm_process(tmp_path, "check")
    assert checked.returncode == 0, checked.stderr
    exported = json.loads(dynorm_process(tmp_path, "export", "workbench").stdout)
    (table,) = exported["DataModel"]
    assert [g["IndexName"] for g in table["GlobalSecondaryIndexes"]] == ["GSI1", "ByAccount"]
    assert {f["FacetName"]: f["KeyAttributeAlias"]["PartitionKeyAlias"] for f in table["TableFacets"]} == {
        "Accounts": "ACCT#{account_id}", "AccountOffers": "ACCT#{account_id}"}


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t["TableFacets"][0]["KeyAttributeAlias"].update(PartitionKeyAlias="PK"),
     "facet Accounts: PartitionKeyAlias is 'PK', the key attribute's own name, not a key template"),
    (lambda t: t["KeyAttributes"]["PartitionKey"].update(AttributeType="N"),
     "the partition key 'PK' is of type N; dynorm writes the table's keys as key text (S)"),
    (lambda t: t["TableFacets"][0]["NonKeyAttributes"].append("Colour"),
     "facet Accounts: NonKeyAttributes lists 'Colour', which table Things does not define"),
    (lambda t: t["NonKeyAttributes"].append({"AttributeName": "Blobs", "AttributeType": "BS"})
     or t["TableFacets"][0]["NonKeyAttributes"].append("Blobs"),
     "facet Accounts: attribute 'Blobs' is of type BS, which no dynorm field stores"),
    (lambda t: t["TableFacets"][0]["KeyAttributeAlias"].pop("SortKeyAlias"),
     "facet Accounts: SortKeyAlias is missing"),
])
def test_a_model_dynorm_cannot_represent_is_refused_naming_what(tmp_path: Path, change: Any, message: str) -> None:
    table = {"TableName": "Things",
             "KeyAttributes": {"PartitionKey": {"AttributeName": "PK", "AttributeType": "S"},
                               "SortKey": {"AttributeName": "SK", "AttributeType": "S"}},
             "NonKeyAttributes": [{"AttributeName": "AccountId", "AttributeType": "S"}],
             "TableFacets": [{"FacetName": "Accounts", "NonKeyAttributes": ["AccountId"],
                              "KeyAttributeAlias": {"PartitionKeyAlias": "A#<AccountId>", "SortKeyAlias": "A"}}]}
    change(table)
    path = tmp_path / "things.json"
    path.write_text(json.dumps({"ModelName": "Things", "DataModel": [table]}))
    out_file = tmp_path / "things_models.py"
    code, out = run("import", "workbench", str(path), "-o", str(out_file))
    assert code == 1
    assert f"Error: ModelError: things.json: table Things: {message}" in out
    assert "Traceback" not in out and not out_file.exists()


def test_import_refuses_what_is_not_a_model_and_keeps_existing_files(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text("{ not json")
    code, out = run("import", "workbench", str(bad))
    assert code == 1 and f"{bad} is not JSON (line 1" in out
    bad.write_text(json.dumps({"ModelName": "x"}))
    code, out = run("import", "workbench", str(bad))
    assert code == 1 and "needs a non-empty \"DataModel\" list" in out
    code, out = run("import", "workbench", str(tmp_path / "missing.json"))
    assert code == 1 and "cannot read the Workbench model" in out

    good = tmp_path / "m.json"
    good.write_text(json.dumps({"DataModel": [{"TableName": "T1", "KeyAttributes": {
        "PartitionKey": {"AttributeName": "PK", "AttributeType": "S"}}, "TableFacets": [
        {"FacetName": "Thing", "KeyAttributeAlias": {"PartitionKeyAlias": "T#<thing_id>"}}]}]}))
    target = tmp_path / "mine.py"
    target.write_text("# my code\n")
    code, out = run("import", "workbench", str(good), "-o", str(target))
    assert code == 2 and "exists; pass --force" in out and target.read_text() == "# my code\n"
    code, out = run("import", "workbench", str(good), "-o", str(target), "--force")
    assert code == 0 and "thing_id = fields.String()" in target.read_text()


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_export_cloudformation_writes_the_prefixed_tables(demo_config: Path, tmp_path: Path, fmt: str) -> None:
    out_file = tmp_path / f"tables.{fmt}"
    code, out = run("--config", str(demo_config), "export", "cloudformation", "--format", fmt, "--table", "orders",
                    "--table", "Library", "--no-pitr", "-o", str(out_file))
    assert code == 0, out
    template = yaml.safe_load(out_file.read_text())  # JSON is YAML too
    assert {k: r["Properties"]["TableName"] for k, r in template["Resources"].items()} == {
        "OrdersTable": "prod-orders", "LibraryTable": "prod-library"}
    assert all(not r["Properties"]["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"]
               for r in template["Resources"].values())


def test_export_names_an_unknown_table(demo_config: Path) -> None:
    code, out = run("--config", str(demo_config), "export", "cloudformation", "--table", "nope")
    assert code == 1
    assert "no table 'nope' in the configured models; tables: fromatoz, kayak, library, monithor, orders." in out
