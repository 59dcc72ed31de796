"""CloudFormation for dynorm tables: one ``AWS::DynamoDB::Table`` resource per ``Table`` class.

The resource's key schema, attribute definitions, GSIs, LSIs, billing mode and provisioned throughput
are the CreateTable request :func:`dynorm.schema.create_params` plans for ``Table.create_table()``,
renamed to CloudFormation's properties (the same dictionaries: nothing is derived twice). Added on top:
``TimeToLiveSpecification`` (``Meta.ttl_attribute``), ``StreamSpecification`` (``Meta.stream``, once
tables declare streams), ``PointInTimeRecoverySpecification`` (``pitr``, on by default: production
tables want backups), and ``DeletionPolicy``/``UpdateReplacePolicy: Retain`` (deleting a stack or
replacing the resource never drops the items). Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from ..schema import attribute_types, create_params

if TYPE_CHECKING:  # pragma: no cover
    from ..table_options import TableOptions
    from ..tables import Table

__all__ = ["table_resource", "build_template", "render", "logical_id", "FORMATS"]

#: the formats :func:`render` writes
FORMATS = ("yaml", "json")

#: CreateTable parameters that are CloudFormation properties of the same name and shape
_SAME = ("TableName", "KeySchema", "AttributeDefinitions", "BillingMode", "ProvisionedThroughput",
         "GlobalSecondaryIndexes", "LocalSecondaryIndexes")


def logical_id(table_name: str) -> str:
    """The resource's logical id: ``"fromatoz"`` -> ``"FromatozTable"`` (letters and digits only).

    Raises:
        ValueError: the name holds no letter or digit (CloudFormation needs an alphanumeric id).
    """
    words = [w for w in re.split(r"[^A-Za-z0-9]+", table_name) if w]
    if not words:
        raise ValueError(f"table name {table_name!r} gives no CloudFormation logical id (no letter or digit).")
    ident = "".join(w[:1].upper() + w[1:] for w in words) + "Table"
    return ident if ident[0].isalpha() else f"T{ident}"


def table_resource(m: TableOptions, name: str, attr_types: dict[str, str] | None = None, *,
                   pitr: bool = True) -> dict[str, Any]:
    """The ``AWS::DynamoDB::Table`` resource of table options ``m`` under the physical ``name`` (pure).

    Args:
        m: the table's resolved ``Meta`` (``Table._meta``).
        name: the physical table name (``Table.table_name()``: the configured prefix included).
        attr_types: scalar types of LSI sort attributes (:func:`dynorm.schema.attribute_types`).
        pitr: turn point-in-time recovery on.

    Returns:
        ``{"Type": "AWS::DynamoDB::Table", "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
        "Properties": {...}}``; the properties hold the CreateTable parameters dynorm sends for this table.
    """
    params = create_params(m, name, attr_types)
    props: dict[str, Any] = {k: params[k] for k in _SAME if k in params}
    if m.ttl_attribute:
        props["TimeToLiveSpecification"] = {"AttributeName": m.ttl_attribute, "Enabled": True}
    stream = getattr(m, "stream", None)  # Table.Meta.stream (DESIGN §7), once tables declare it
    if stream:
        props["StreamSpecification"] = {"StreamViewType": stream}
    props["PointInTimeRecoverySpecification"] = {"PointInTimeRecoveryEnabled": pitr}
    return {"Type": "AWS::DynamoDB::Table", "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
            "Properties": props}


def build_template(tables: list[type[Table]], *, pitr: bool = True, description: str | None = None) -> dict[str, Any]:
    """A CloudFormation template with one table resource per ``Table`` class, and its outputs (pure).

    Args:
        tables: the ``Table`` subclasses, in order.
        pitr: turn point-in-time recovery on for every table.
        description: the template's ``Description`` (default: names the tables).

    Returns:
        The template as a dict: ``Resources`` (logical id -> :func:`table_resource`) and ``Outputs``
        (each table's name and ARN, and its stream ARN when it declares a stream).

    Raises:
        ValueError: no tables, or two tables whose names give one logical id.
    """
    if not tables:
        raise ValueError("no tables to export: list your model modules under `models:` in dynorm.yaml.")
    resources: dict[str, Any] = {}
    outputs: dict[str, Any] = {}
    for table in tables:
        ident = logical_id(table._meta.table_name)
        if ident in resources:
            raise ValueError(f"tables {resources[ident]['Properties']['TableName']!r} and {table.table_name()!r} "
                             f"both give the logical id {ident}; rename one of them.")
        resources[ident] = table_resource(table._meta, table.table_name(), attribute_types(table), pitr=pitr)
        outputs[f"{ident}Name"] = {"Description": f"name of table {table.table_name()}", "Value": {"Ref": ident}}
        outputs[f"{ident}Arn"] = {"Description": f"ARN of table {table.table_name()}",
                                  "Value": {"Fn::GetAtt": [ident, "Arn"]}}
        if "StreamSpecification" in resources[ident]["Properties"]:
            outputs[f"{ident}StreamArn"] = {"Description": f"stream ARN of table {table.table_name()}",
                                            "Value": {"Fn::GetAtt": [ident, "StreamArn"]}}
    names = ", ".join(t.table_name() for t in tables)
    description = description or f"DynamoDB tables of a dynorm project: {names} (dynorm export cloudformation)"
    return {"AWSTemplateFormatVersion": "2010-09-09", "Description": description,
            "Resources": resources, "Outputs": outputs}


def render(template: dict[str, Any], fmt: str = "yaml") -> str:
    """The template as YAML (block style, keys in order) or JSON (indented).

    Raises:
        ValueError: ``fmt`` is not ``yaml`` or ``json``.
    """
    if fmt == "json":
        return json.dumps(template, indent=2) + "\n"
    if fmt == "yaml":
        import yaml

        return str(yaml.safe_dump(template, sort_keys=False, default_flow_style=False, width=120))
    raise ValueError(f"unknown format {fmt!r}: use {' or '.join(FORMATS)}.")
