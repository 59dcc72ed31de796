"""Table schema: pure planning of CreateTable / UpdateTable requests, and the one DDL path that sends them.

``create_action``, ``create_params`` and ``plan_sync`` are pure (a table class or its options and
a DescribeTable result in, requests out). :func:`create_table`, :func:`update_table`,
:func:`delete_table`, :func:`ensure_ttl`, :func:`wait_active` and :func:`wait_deleted` send them
through the backend: ``Table``'s DDL methods, the migration executor and the test plugin all
call these, so each mechanism (a lost CreateTable response, TTL, waiting) is written once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from .backend import call
from .exceptions import ServiceError, TableDoesNotExist

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import TableLike
    from .table_options import MultiKeySchema, TableOptions

__all__ = ["SchemaAction", "create_action", "create_params", "gsi_update_params", "gsi_spec", "describe_gsi",
           "plan_sync", "ttl_action", "ttl_params", "apply", "create_table", "create_declared", "update_table",
           "delete_table", "ensure_ttl", "ttl_enabled", "wait_active", "wait_deleted", "attribute_types", "stream_spec",
           "stream_of", "stream_updates"]


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
    if m.stream:
        params["StreamSpecification"] = stream_spec(m.stream)
    return params


def stream_spec(view_type: str | None) -> dict[str, Any]:
    """DynamoDB's ``StreamSpecification`` for a stream of ``view_type`` (``None``: no stream) (pure)."""
    if view_type is None:
        return {"StreamEnabled": False}
    return {"StreamEnabled": True, "StreamViewType": view_type}


def stream_of(description: dict[str, Any] | None) -> str | None:
    """The view type of the stream a DescribeTable ``Table`` shows enabled, ``None`` when it has none."""
    spec = (description or {}).get("StreamSpecification") or {}
    return spec.get("StreamViewType") if spec.get("StreamEnabled") else None


def stream_updates(name: str, current: str | None, wanted: str | None) -> list[dict[str, Any]]:
    """The UpdateTable requests that take table ``name``'s stream from ``current`` to ``wanted`` (pure).

    DynamoDB cannot change the view type of an enabled stream: it is turned off, then on with the
    new view type (two requests; the new stream has a new ARN, and records of the old one stay
    readable for 24 hours). Empty when nothing changes.
    """
    if current == wanted:
        return []
    steps = []
    if current is not None:
        steps.append({"TableName": name, "StreamSpecification": stream_spec(None)})
    if wanted is not None:
        steps.append({"TableName": name, "StreamSpecification": stream_spec(wanted)})
    return steps


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


def ttl_action(table: type[TableLike]) -> SchemaAction:
    """Plan the UpdateTimeToLive request turning on ``table``'s declared TTL attribute (pure)."""
    name = table.table_name()
    attr = table._meta.ttl_attribute or ""  # planned only for a table that declares one
    return SchemaAction("UpdateTimeToLive", ttl_params(name, attr), f"turn on TTL on {name}.{attr}")


def plan_sync(table: type[TableLike], description: dict[str, Any] | None) -> list[SchemaAction]:
    """Plan what brings the physical table in line with the model; never drops anything.

    Args:
        table: the ``Table`` subclass.
        description: DescribeTable's ``Table`` (``None`` when the table does not exist).

    Returns:
        CreateTable (plus TTL) for a missing table; else one UpdateTable per missing GSI, and
        the UpdateTable requests turning on the declared stream (:func:`stream_updates`) when the
        table has another stream or none (a table whose model declares no stream keeps its own).
    """
    if description is None:
        actions = [create_action(table)]
        if table._meta.ttl_attribute:
            actions.append(ttl_action(table))
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
    wanted = table._meta.stream
    if wanted is not None:
        for params in stream_updates(table.table_name(), stream_of(description), wanted):
            what = "turn on" if params["StreamSpecification"]["StreamEnabled"] else "turn off"
            actions.append(SchemaAction("UpdateTable", params, f"{what} the stream of {table.table_name()}"
                                        + (f" ({wanted})" if what == "turn on" else "")))
    return actions


# -- sending: the one DDL path (create, update, delete, wait), for tables, migrations and the test plugin --
def _ready(done: Callable[[], bool], timeout: float, interval: float) -> bool:
    """The one wait loop: call ``done()`` (one DescribeTable) every ``interval`` seconds until it
    says True; False once ``timeout`` seconds have passed without."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


def wait_active(name: str, timeout: float = 300.0) -> None:
    """Wait until table ``name`` and its GSIs are ACTIVE (DescribeTable every 0.2 s).

    Raises:
        ServiceError: not ACTIVE after ``timeout`` seconds (``code == "Timeout"``).
        TableDoesNotExist: there is no such table.
    """
    statuses: list[Any] = []

    def active() -> bool:
        desc = call("DescribeTable", {"TableName": name})["Table"]
        statuses[:] = [desc.get("TableStatus")] + [g.get("IndexStatus") for g in desc.get("GlobalSecondaryIndexes", [])]
        return all(s == "ACTIVE" for s in statuses)

    if not _ready(active, timeout, 0.2):
        raise ServiceError(f"table {name} is not ACTIVE after {timeout:.0f} s (statuses: {statuses}).",
                           code="Timeout", operation="DescribeTable")


def wait_deleted(name: str, timeout: float = 60.0, interval: float = 0.2) -> None:
    """Wait until table ``name`` is gone: DescribeTable every ``interval`` seconds until it raises
    TableDoesNotExist, for at most ``timeout`` seconds (then return; the caller's next request says)."""

    def gone() -> bool:
        try:
            call("DescribeTable", {"TableName": name})
        except TableDoesNotExist:
            return True
        return False

    _ready(gone, timeout, interval)


def ttl_params(name: str, attribute: str) -> dict[str, Any]:
    """UpdateTimeToLive parameters turning TTL on for ``attribute`` of table ``name`` (pure)."""
    return {"TableName": name, "TimeToLiveSpecification": {"Enabled": True, "AttributeName": attribute}}


def ttl_enabled(name: str, attribute: str) -> bool:
    """Whether TTL is on (or turning on) for ``attribute`` of table ``name`` (DescribeTimeToLive)."""
    desc = call("DescribeTimeToLive", {"TableName": name}).get("TimeToLiveDescription", {})
    return bool(desc.get("TimeToLiveStatus") in ("ENABLED", "ENABLING") and desc.get("AttributeName") == attribute)


def ensure_ttl(name: str, attribute: str | None) -> None:
    """Turn TTL on for ``attribute`` of table ``name`` unless it is on (DescribeTimeToLive, then
    DescribeTable until ACTIVE and UpdateTimeToLive); nothing when ``attribute`` is ``None``."""
    if not attribute or ttl_enabled(name, attribute):
        return
    wait_active(name)
    call("UpdateTimeToLive", ttl_params(name, attribute))


def _response_lost(exc: ServiceError) -> bool:
    """Whether botocore retried the request that got ``exc``: an earlier attempt reached DynamoDB
    and its answer was lost (``RetryAttempts > 0``)."""
    cause = getattr(exc.__cause__, "response", None) or {}
    return int(cause.get("ResponseMetadata", {}).get("RetryAttempts", 0) or 0) > 0


def create_table(params: dict[str, Any], *, ttl_attribute: str | None = None, wait: bool = True,
                 exist_ok: bool = False) -> bool:
    """Create a table: CreateTable, DescribeTable until ACTIVE (``wait``), UpdateTimeToLive.

    The one CreateTable sender (``Table.create_table``, ``Table.sync``, ``dynorm migrate``, the test
    plugin). A CreateTable whose response was lost (botocore retried, and the retry met
    ResourceInUseException) created the table: it counts as created by this call and is finished
    (ACTIVE, TTL) as if the response had arrived.

    Args:
        params: CreateTable parameters (:func:`create_params`); ``TableName`` names the table.
        ttl_attribute: the TTL attribute to turn on, or ``None``.
        wait: wait until the table is ACTIVE.
        exist_ok: a table of that name existing already is not an error: it is waited for
            (``wait``) and its TTL turned on when off (DescribeTimeToLive first); nothing else changes.

    Returns:
        True when this call created the table, False when it existed (``exist_ok``).

    Raises:
        ServiceError: the table exists (``code == "ResourceInUseException"``, unless ``exist_ok``)
            or DynamoDB refused the definition.
    """
    name = params["TableName"]
    try:
        call("CreateTable", params)
    except ServiceError as exc:
        if exc.code != "ResourceInUseException":
            raise
        lost = _response_lost(exc)
        if not (lost or exist_ok):
            raise
        if wait or (lost and ttl_attribute):
            wait_active(name)
        ensure_ttl(name, ttl_attribute)
        return lost
    if wait:
        wait_active(name)
    if ttl_attribute:
        call("UpdateTimeToLive", ttl_params(name, ttl_attribute))
    return True


def create_declared(table: type[TableLike], *, wait: bool = True, exist_ok: bool = False) -> bool:
    """:func:`create_table` for a ``Table`` class as declared (its GSIs, LSIs and TTL)."""
    return create_table(create_action(table).params, ttl_attribute=table._meta.ttl_attribute, wait=wait,
                        exist_ok=exist_ok)


def update_table(params: dict[str, Any], *, wait: bool = True) -> None:
    """Send UpdateTable, then DescribeTable until the table and its GSIs are ACTIVE (``wait``)."""
    call("UpdateTable", params)
    if wait:
        wait_active(params["TableName"])


def delete_table(name: str, *, wait: bool = True, interval: float = 0.2) -> None:
    """Delete table ``name`` and its items (DeleteTable), then wait until it is gone (``wait``).

    Raises:
        TableDoesNotExist: there is no such table.
        ServiceError: DynamoDB refused (deletion protection is on, the table is being created).
    """
    call("DeleteTable", {"TableName": name})
    if wait:
        wait_deleted(name, interval=interval)


def apply(table: type[TableLike], actions: list[SchemaAction], wait: bool = True) -> None:
    """Send planned schema actions in order (:func:`plan_sync`), waiting for ACTIVE after each
    CreateTable and UpdateTable when ``wait``."""
    for action in actions:
        if action.operation == "CreateTable":
            create_table(action.params, wait=wait)
        elif action.operation == "UpdateTable":
            update_table(action.params, wait=wait)
        else:
            call(action.operation, action.params)
