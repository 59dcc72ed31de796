"""Table schema: pure planning of CreateTable / UpdateTable requests, and applying them.

``create_action`` and ``plan_sync`` are pure (a table class and a DescribeTable result in,
actions out); ``apply`` sends them through the backend and waits for ACTIVE.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .exceptions import ServiceError

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import TableLike
    from .table_options import MultiKeySchema, TableOptions

__all__ = ["SchemaAction", "create_action", "create_params", "gsi_update_params", "gsi_spec", "describe_gsi",
           "plan_sync", "apply",
           "wait_active", "wait_deleted", "attribute_types"]


@dataclass(frozen=True)
class SchemaAction:
    """One schema request: ``operation`` (CreateTable, UpdateTable, UpdateTimeToLive) and its params."""

    operation: str
    params: dict[str, Any]
    summary: str

    def describe(self) -> str:
        """A one-line description for ``--plan`` output."""
        return f"{self.operation}: {self.summary}"


def attribute_types(table: type[TableLike]) -> dict[str, str]:
    """Scalar types (``S``/``N``/``B``) of every field attribute of the table's entities (for LSI sort keys)."""
    out: dict[str, str] = {}
    for entity in table._entities.values():
        for f in entity._meta.fields.values():
            # a capability, not a class name
            out.setdefault(f.attr_name, f.attr_type if f.attr_type in ("N", "B") else "S")
    return out


def _gsi_spec(name: str, pk: str, sk: str | None) -> dict[str, Any]:
    schema = [{"AttributeName": pk, "KeyType": "HASH"}]
    if sk:
        schema.append({"AttributeName": sk, "KeyType": "RANGE"})
    return {"IndexName": name, "KeySchema": schema, "Projection": {"ProjectionType": "ALL"}}


def _multi_gsi_spec(name: str, multi: MultiKeySchema) -> dict[str, Any]:
    """A GSI whose KeySchema has several HASH then several RANGE elements (multi-attribute keys)."""
    schema = [{"AttributeName": a, "KeyType": "HASH"} for a, _ in multi.pk]
    schema += [{"AttributeName": a, "KeyType": "RANGE"} for a, _ in multi.sk]
    return {"IndexName": name, "KeySchema": schema, "Projection": {"ProjectionType": "ALL"}}


def gsi_spec(m: TableOptions, gname: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The GSI definition of ``gname`` and the attribute types it needs (pure).

    The one place a GSI's KeySchema and AttributeDefinitions are built, for CreateTable and
    UpdateTable alike: template GSIs have string key attributes; a multi-attribute GSI has
    up to four HASH and four RANGE elements with their declared types.
    """
    if gname in m.multi_gsis:
        multi = m.multi_gsis[gname]
        spec = _multi_gsi_spec(gname, multi)
        attrs = dict((*multi.pk, *multi.sk))
    else:
        pk, sk = m.gsis[gname]
        spec = _gsi_spec(gname, pk, sk)
        attrs = {pk: "S", **({sk: "S"} if sk else {})}
    if m.billing_mode == "PROVISIONED":
        spec["ProvisionedThroughput"] = {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
    return spec, attrs


def create_params(m: TableOptions, name: str, attr_types: dict[str, str] | None = None) -> dict[str, Any]:
    """CreateTable parameters for table options ``m`` under the physical ``name`` (pure)."""
    attr_types = attr_types or {}
    attrs: dict[str, str] = {m.pk_attribute: "S"}
    key_schema = [{"AttributeName": m.pk_attribute, "KeyType": "HASH"}]
    if m.sk_attribute:
        attrs[m.sk_attribute] = "S"
        key_schema.append({"AttributeName": m.sk_attribute, "KeyType": "RANGE"})
    params: dict[str, Any] = {"TableName": name, "KeySchema": key_schema, "BillingMode": m.billing_mode}
    if m.billing_mode == "PROVISIONED":
        params["ProvisionedThroughput"] = {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
    gsis = []
    for gname in m.index_names:
        spec, needed = gsi_spec(m, gname)
        for a, t in needed.items():
            attrs.setdefault(a, t)
        gsis.append(spec)
    if gsis:
        params["GlobalSecondaryIndexes"] = gsis
    lsis = []
    for lname, sort_attr in m.lsis.items():
        attrs.setdefault(sort_attr, attr_types.get(sort_attr, "S"))
        lsis.append({"IndexName": lname, "KeySchema": [
            {"AttributeName": m.pk_attribute, "KeyType": "HASH"},
            {"AttributeName": sort_attr, "KeyType": "RANGE"}], "Projection": {"ProjectionType": "ALL"}})
    if lsis:
        params["LocalSecondaryIndexes"] = lsis
    params["AttributeDefinitions"] = [{"AttributeName": a, "AttributeType": t} for a, t in attrs.items()]
    return params


def create_action(table: type[TableLike]) -> SchemaAction:
    """Plan the CreateTable request for ``table`` (all GSIs and LSIs, projection ALL, on-demand)."""
    m = table._meta
    name = table.table_name()
    params = create_params(m, name, attribute_types(table))
    extra = f", GSIs {', '.join(m.index_names)}" if m.index_names else ""
    extra += f", LSIs {', '.join(m.lsis)}" if m.lsis else ""
    return SchemaAction("CreateTable", params, f"create table {name}{extra}")


def gsi_update_params(name: str, m: TableOptions, gname: str) -> dict[str, Any]:
    """UpdateTable parameters adding GSI ``gname`` of table options ``m`` to table ``name`` (pure)."""
    spec, attrs = gsi_spec(m, gname)
    defs = [{"AttributeName": a, "AttributeType": t} for a, t in attrs.items()]
    return {"TableName": name, "AttributeDefinitions": defs, "GlobalSecondaryIndexUpdates": [{"Create": spec}]}


def describe_gsi(m: TableOptions, gname: str) -> str:
    """``GSI1 (GSI1PK, GSI1SK)`` or ``ByRegion (tenant_id+region, year:N+title)`` for messages."""
    if gname in m.multi_gsis:
        multi = m.multi_gsis[gname]
        show = lambda pairs: "+".join(a if t == "S" else f"{a}:{t}" for a, t in pairs)  # noqa: E731
        return f"{gname} ({show(multi.pk)}, {show(multi.sk) or None})"
    pk, sk = m.gsis[gname]
    return f"{gname} ({pk}, {sk})"


def _ttl_action(table: type[TableLike]) -> SchemaAction:
    name = table.table_name()
    attr = table._meta.ttl_attribute
    return SchemaAction("UpdateTimeToLive", {
        "TableName": name, "TimeToLiveSpecification": {"Enabled": True, "AttributeName": attr}},
        f"turn on TTL on {name}.{attr}")


def plan_sync(table: type[TableLike], description: dict[str, Any] | None) -> list[SchemaAction]:
    """Plan what brings the physical table in line with the model; never drops anything.

    Args:
        table: the ``Table`` subclass.
        description: DescribeTable's ``Table`` (``None`` when the table does not exist).

    Returns:
        CreateTable (plus TTL) for a missing table; else one UpdateTable per missing GSI.
    """
    if description is None:
        actions = [create_action(table)]
        if table._meta.ttl_attribute:
            actions.append(_ttl_action(table))
        return actions
    present = {g["IndexName"] for g in description.get("GlobalSecondaryIndexes", [])}
    actions = []
    for gname in table._meta.index_names:
        if gname in present:
            continue
        actions.append(SchemaAction("UpdateTable", gsi_update_params(table.table_name(), table._meta, gname),
                                    f"add GSI {describe_gsi(table._meta, gname)} to {table.table_name()}"))
    missing_lsis = set(table._meta.lsis) - {i["IndexName"] for i in description.get("LocalSecondaryIndexes", [])}
    if missing_lsis:
        raise ServiceError(
            f"table {table.table_name()} lacks LSI(s) {', '.join(sorted(missing_lsis))}; DynamoDB can only "
            "add local secondary indexes when a table is created. Create a new table and copy the items.",
            code="LSIMissing", operation="UpdateTable")
    return actions


def wait_active(name: str, timeout: float = 300.0) -> None:
    from .backend import call

    deadline = time.monotonic() + timeout
    while True:
        desc = call("DescribeTable", {"TableName": name})["Table"]
        statuses = [desc.get("TableStatus")] + [g.get("IndexStatus") for g in desc.get("GlobalSecondaryIndexes", [])]
        if all(s == "ACTIVE" for s in statuses):
            return
        if time.monotonic() > deadline:
            raise ServiceError(f"table {name} is not ACTIVE after {timeout:.0f} s (statuses: {statuses}).",
                               code="Timeout", operation="DescribeTable")
        time.sleep(0.2)


def wait_deleted(name: str, timeout: float = 60.0, interval: float = 0.2) -> None:
    """Wait until table ``name`` is gone: DescribeTable every ``interval`` seconds until it raises
    TableDoesNotExist, for at most ``timeout`` seconds (then return; the caller's next request says)."""
    from .backend import call
    from .exceptions import TableDoesNotExist

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            call("DescribeTable", {"TableName": name})
        except TableDoesNotExist:
            return
        time.sleep(interval)


def apply(table: type[TableLike], actions: list[SchemaAction], wait: bool = True) -> None:
    """Send planned schema actions in order, waiting for ACTIVE after each when ``wait``."""
    from .backend import call

    for action in actions:
        call(action.operation, action.params)
        if wait and action.operation in ("CreateTable", "UpdateTable"):
            wait_active(table.table_name())
