"""``dynorm export cloudformation``: templates cfn-lint accepts, built from the CreateTable request dynorm plans."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from cfnlint.api import ManualArgs, lint

from dynorm import Entity, Table, fields, schema
from dynorm.design.cloudformation import build_template, logical_id, render, table_resource


def _demo_tables() -> list[Any]:
    from demo_project.catalog.models import Catalog
    from demo_project.kayak.models import Kayak
    from demo_project.library.models import Library
    from demo_project.monithor.models import Monithor
    from demo_project.orders.models import Shopfront

    return [Catalog, Kayak, Shopfront, Monithor, Library]


class Ledgerish(Table):
    """Provisioned, a four-attribute GSI key, an LSI on a number, TTL: every option the template renders."""

    class Meta:
        table_name = "cfn-ledgerish"
        billing_mode = "PROVISIONED"
        gsis = {"GSI1": ("GSI1PK", "GSI1SK"),
                "ByRegion": {"pk": {"tenant": "S", "region": "S"}, "sk": {"year": "N", "title": "S"}}}
        lsis = {"by_rank": "rank"}
        ttl_attribute = "expires"


class LedgerEntry(Entity):
    entry_id = fields.String()
    tenant = fields.String()
    region = fields.String()
    year = fields.Integer()
    title = fields.String()
    rank = fields.Integer()
    expires = fields.TTL(null=True)

    class Meta:
        table = Ledgerish
        pk = "E#{entry_id}"
        sk = "E"


def _findings(text: str) -> list[str]:
    """cfn-lint's errors, warnings and informational findings (``I`` rules included) on a template."""
    matches = lint(text, config=ManualArgs(regions=["us-east-1"], include_checks=["I"]))
    return [f"{m.rule.id} {m.message}" for m in matches]


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_cfn_lint_finds_nothing_in_the_demo_and_every_option(fmt: str) -> None:
    text = render(build_template([*_demo_tables(), Ledgerish]), fmt)
    assert _findings(text) == []


def test_cfn_lint_reports_a_broken_template() -> None:
    # the check above can fail: a key type CloudFormation does not know is reported
    text = render(build_template([Ledgerish]), "yaml").replace("KeyType: HASH", "KeyType: PARTITION", 1)
    assert any(f.startswith("E") for f in _findings(text))


def test_resource_properties_are_the_create_table_request() -> None:
    resource = table_resource(Ledgerish._meta, "dev-cfn-ledgerish", schema.attribute_types(Ledgerish))
    props = dict(resource["Properties"])
    assert props.pop("TimeToLiveSpecification") == {"AttributeName": "expires", "Enabled": True}
    assert props.pop("PointInTimeRecoverySpecification") == {"PointInTimeRecoveryEnabled": True}
    expected = schema.create_params(Ledgerish._meta, "dev-cfn-ledgerish", schema.attribute_types(Ledgerish))
    assert props == expected
    # the four-attribute key and the LSI's number type are there, as CreateTable sends them
    by_region = next(g for g in props["GlobalSecondaryIndexes"] if g["IndexName"] == "ByRegion")
    assert [(k["AttributeName"], k["KeyType"]) for k in by_region["KeySchema"]] == [
        ("tenant", "HASH"), ("region", "HASH"), ("year", "RANGE"), ("title", "RANGE")]
    assert {"AttributeName": "rank", "AttributeType": "N"} in props["AttributeDefinitions"]
    assert resource["DeletionPolicy"] == resource["UpdateReplacePolicy"] == "Retain"


def test_pitr_can_be_turned_off_and_a_declared_stream_is_emitted() -> None:
    import copy

    opts = copy.copy(Ledgerish._meta)
    props = table_resource(opts, "t1", pitr=False)["Properties"]
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": False}
    assert "StreamSpecification" not in props
    opts.stream = "NEW_AND_OLD_IMAGES"  # type: ignore[attr-defined]  # Table.Meta.stream, DESIGN §7
    assert table_resource(opts, "t1")["Properties"]["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}


def test_yaml_and_json_hold_one_template_with_outputs() -> None:
    template = build_template([Ledgerish])
    assert yaml.safe_load(render(template, "yaml")) == json.loads(render(template, "json")) == template
    assert template["Outputs"]["CfnLedgerishTableArn"]["Value"] == {"Fn::GetAtt": ["CfnLedgerishTable", "Arn"]}


def test_bad_input_is_refused_before_anything_is_written() -> None:
    with pytest.raises(ValueError, match="no tables to export"):
        build_template([])
    with pytest.raises(ValueError, match="unknown format 'toml'"):
        render(build_template([Ledgerish]), "toml")
    with pytest.raises(ValueError, match="no letter or digit"):
        logical_id("--")
    assert logical_id("my-app.orders") == "MyAppOrdersTable"
