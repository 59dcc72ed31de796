"""NoSQL Workbench data models of dynorm tables (``dynorm export workbench``).

The model is the JSON NoSQL Workbench imports (format version 3.0): ``ModelName``, ``ModelMetadata``
and one ``DataModel`` entry per table with ``KeyAttributes``, ``NonKeyAttributes``, ``TableFacets``,
``GlobalSecondaryIndexes``, ``TableData``, ``DataAccess`` and ``BillingMode``. dynorm's concepts map
as follows (``docs/design-tools.md`` has the table):

- an entity is a facet (``FacetName`` = class name); its primary-key templates are the facet's
  ``KeyAttributeAlias`` (``PartitionKeyAlias``/``SortKeyAlias``), its attributes the facet's
  ``NonKeyAttributes``;
- each GSI is listed with the table's key schema; a multi-attribute GSI key (several HASH or RANGE
  attributes) shows its first partition and first sort attribute, the only shape Workbench's
  ``KeyAttributes`` holds; LSIs are not part of Workbench's format;
- what Workbench has no field for (entity types, key versions, each index's key templates, field
  kinds, LSIs, the multi-attribute key schemas, the access patterns of ``dynorm patterns``) goes into
  one extra top-level block, ``ModelSchema`` (``"format": "dynorm/1"``, the place NoSQL Workbench
  companion tools keep their schema), from which ``dynorm import workbench`` regenerates the classes
  exactly. The access patterns are also listed in ``ModelMetadata.Description``, which Workbench shows.

:func:`build_model` is pure; :func:`read_samples` reads sample items (a Scan per entity).
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
from typing import TYPE_CHECKING, Any, Mapping

from ..schema import attribute_types, create_params

if TYPE_CHECKING:  # pragma: no cover
    from .._protocols import EntityLike
    from ..tables import Table

__all__ = ["build_model", "read_samples", "sample_item", "render", "entity_schema", "table_schema",
           "SCHEMA_FORMAT", "WORKBENCH_VERSION"]

#: the ``ModelMetadata.Version`` of the models written (the format NoSQL Workbench 3.x exports)
WORKBENCH_VERSION = "3.0"
#: the ``ModelSchema.format`` of dynorm's own block
SCHEMA_FORMAT = "dynorm/1"

#: field options written to ``ModelSchema`` when set (name -> the field attribute holding it)
_FLAGS = ("auto", "auto_now", "auto_now_add")


# -- dynorm's own description (ModelSchema) ---------------------------------------------------------
def table_schema(table: type[Table]) -> dict[str, Any]:
    """The table's declaration as plain data: the keyword options of its ``Meta`` (pure).

    GSIs are ``[pk attribute, sk attribute or None]`` or ``{"pk": {attr: type}, "sk": {attr: type}}``
    for a multi-attribute key, as ``Table.Meta.gsis`` spells them.
    """
    m = table._meta
    gsis: dict[str, Any] = {g: [pk, sk] for g, (pk, sk) in m.gsis.items()}
    gsis.update({g: v.definition() for g, v in m.multi_gsis.items()})
    out: dict[str, Any] = {"class": table.__name__, "table_name": m.table_name, "pk_attribute": m.pk_attribute,
                           "sk_attribute": m.sk_attribute, "type_attribute": m.type_attribute, "gsis": gsis,
                           "lsis": dict(m.lsis), "ttl_attribute": m.ttl_attribute, "delimiter": m.delimiter,
                           "billing_mode": m.billing_mode, "key_encoding": m.key_encoding,
                           "revision_attribute": m.revision_attribute}
    stream = getattr(m, "stream", None)  # Table.Meta.stream (DESIGN §7), once tables declare it
    if stream:
        out["stream"] = stream
    return out


def _field_schema(f: Any) -> dict[str, Any]:
    """One field as plain data: kind, attribute, null, literal default and its kind's options."""
    out: dict[str, Any] = {"kind": f.kind, "attribute": f.attr_name, "null": bool(getattr(f, "null", False))}
    default = getattr(f, "default", None)
    if isinstance(default, (str, int, float, bool)):  # callables (set, now) are the kind's own defaults
        out["default"] = default
    for flag in _FLAGS:
        if getattr(f, flag, False):
            out[flag] = True
    if f.is_set:
        out["of"] = getattr(f, "of", str).__name__
    if f.kind == "Reference":
        target = getattr(f, "_target_name", None) or getattr(getattr(f, "_target", None), "__name__", None)
        out["target"] = target
    return out


def entity_schema(entity: type[EntityLike]) -> dict[str, Any]:
    """The entity's declaration as plain data: type, key version, templates, indexes and fields (pure)."""
    meta = entity._meta
    indexes: dict[str, Any] = {}
    for name, b in meta.indexes.items():
        spec: dict[str, Any] = {"index": b.index_name}
        if b.is_multi:
            spec["pk"], spec["sk"] = list(b.pk_fields), list(b.sk_fields)
        else:
            if b.kind == "gsi":
                spec["pk"] = b.pk.template
            tmeta = meta.table._meta
            # an index sorting on the table's own sort key takes the entity's sk: none is declared
            if b.sk is not None and not (b.kind == "gsi" and b.sk_attr == tmeta.sk_attribute):
                spec["sk"] = b.sk.template
        if b.comment:
            spec["comment"] = b.comment
        if b.shards:  # write sharding: the bucket is part of every stored key of this index
            spec["shards"], spec["shard_by"] = b.shards, list(b.shard_by)
        indexes[name] = spec
    return {"class": entity.__name__, "table": meta.table._meta.table_name, "entity_type": meta.entity_type,
            "key_version": meta.key_version,
            "read_versions": [v for v in meta.read_versions if v != meta.key_version],
            "pk": meta.primary.pk.template, "sk": meta.primary.sk.template if meta.primary.sk is not None else None,
            "indexes": indexes, "fields": {n: _field_schema(f) for n, f in meta.fields.items()}}


# -- the Workbench model ---------------------------------------------------------------------------
_WORKBENCH_TYPES = {"S": "S", "N": "N", "B": "B", "BOOL": "BOOL", "M": "M", "L": "L", "SS": "SS", "NS": "NS",
                    "BS": "BS", "NULL": "NULL"}


def _key(attr: str, typ: str) -> dict[str, str]:
    return {"AttributeName": attr, "AttributeType": typ}


def _key_attributes(schema: list[dict[str, str]], types: Mapping[str, str]) -> dict[str, Any]:
    """Workbench's ``KeyAttributes`` of a CreateTable KeySchema: the first HASH and first RANGE element."""
    out: dict[str, Any] = {}
    for role, kind in (("PartitionKey", "HASH"), ("SortKey", "RANGE")):
        first = next((k["AttributeName"] for k in schema if k["KeyType"] == kind), None)
        if first is not None:
            out[role] = _key(first, types[first])
    return out


def _entity_attributes(entity: type[EntityLike]) -> list[str]:
    """The attributes an item of ``entity`` may carry besides the table's keys, in a stable order."""
    meta = entity._meta
    tmeta = meta.table._meta
    out = [tmeta.type_attribute]
    for b in meta.indexes.values():
        for attr in (b.pk_attr if b.kind == "gsi" else None, b.sk_attr if b.writes_key_attributes else None):
            if attr and attr not in out and attr not in (tmeta.pk_attribute, tmeta.sk_attribute):
                out.append(attr)
    out += [f.attr_name for f in meta.fields.values() if f.attr_name not in out]
    return out


def _facet_names(tables: list[type[Table]]) -> dict[Any, str]:
    """Entity class -> its facet name: the class name, with the table's name where two classes share one
    (Workbench wants facet names unique across the model)."""
    entities = [e for t in tables for e in t.entities().values()]
    counts: dict[str, int] = {}
    for e in entities:
        counts[e.__name__] = counts.get(e.__name__, 0) + 1
    return {e: e.__name__ if counts[e.__name__] == 1 else f"{e.__name__}_{e._meta.table._meta.table_name}"
            for e in entities}


def _table_model(table: type[Table], facets: Mapping[Any, str], samples: Mapping[Any, list[dict[str, Any]]]
                 ) -> dict[str, Any]:
    """One ``DataModel`` entry (pure)."""
    m = table._meta
    params = create_params(m, m.table_name, attribute_types(table))
    types = {d["AttributeName"]: d["AttributeType"] for d in params["AttributeDefinitions"]}
    keys = {m.pk_attribute, m.sk_attribute}
    non_key: dict[str, str] = {a: t for a, t in types.items() if a not in keys}
    non_key.setdefault(m.type_attribute, "S")
    facet_list = []
    data: list[dict[str, Any]] = []
    for entity in table.entities().values():
        for f in entity._meta.fields.values():
            if f.attr_name not in keys:
                non_key.setdefault(f.attr_name, _WORKBENCH_TYPES.get(f.attr_type, "S"))
        alias = {"PartitionKeyAlias": entity._meta.primary.pk.template}
        if entity._meta.primary.sk is not None:
            alias["SortKeyAlias"] = entity._meta.primary.sk.template
        items = list(samples.get(entity, []))
        data += items
        facet_list.append({"FacetName": facets[entity], "KeyAttributeAlias": alias, "TableData": items,
                           "NonKeyAttributes": _entity_attributes(entity), "DataAccess": {"MySql": {}}})
    gsis = [{"IndexName": g["IndexName"], "KeyAttributes": _key_attributes(g["KeySchema"], types),
             "Projection": dict(g["Projection"])} for g in params.get("GlobalSecondaryIndexes", [])]
    out: dict[str, Any] = {"TableName": m.table_name, "KeyAttributes": _key_attributes(params["KeySchema"], types),
                           "NonKeyAttributes": [_key(a, t) for a, t in non_key.items()],
                           "TableFacets": facet_list, "GlobalSecondaryIndexes": gsis, "TableData": data,
                           "DataAccess": {"MySql": {}}, "BillingMode": m.billing_mode}
    if "ProvisionedThroughput" in params:
        out["ProvisionedCapacitySettings"] = {"ProvisionedThroughput": dict(params["ProvisionedThroughput"])}
    return out


def _description(patterns: list[dict[str, str]]) -> str:
    lines = ["Generated by dynorm export workbench from the models; dynorm's own schema is in ModelSchema."]
    if patterns:
        lines += ["", "Access patterns:"] + [f"* {p['pattern']}: {p['call']} -> {p['request']}" for p in patterns]
    return "\n".join(lines)


def build_model(tables: list[type[Table]], *, name: str | None = None,
                samples: Mapping[Any, list[dict[str, Any]]] | None = None,
                now: _dt.datetime | None = None) -> dict[str, Any]:
    """The NoSQL Workbench data model of ``tables`` (pure; see the module docstring for its layout).

    Args:
        tables: the ``Table`` subclasses, in order (their logical names: no prefix).
        name: ``ModelName`` (default: the tables' names).
        samples: entity class -> sample items (DynamoDB JSON, as :func:`read_samples` returns them),
            written to the table's and the entity's facet's ``TableData``.
        now: the time written as ``DateCreated``/``DateLastModified`` (default: now, UTC).

    Returns:
        The model as a dict (``json.dumps`` ready).

    Raises:
        ValueError: no tables.
    """
    from ..patterns import build_document

    if not tables:
        raise ValueError("no tables to export: list your model modules under `models:` in dynorm.yaml.")
    facets = _facet_names(tables)
    patterns = build_document(list(tables))["_accessPatternRequests"]
    stamp = (now or _dt.datetime.now(_dt.timezone.utc)).strftime("%b %d, %Y, %I:%M %p")
    model: dict[str, Any] = {
        "ModelName": name or ", ".join(t._meta.table_name for t in tables),
        "ModelMetadata": {"Author": "dynorm", "DateCreated": stamp, "DateLastModified": stamp,
                          "Description": _description(patterns), "AWSService": "Amazon DynamoDB",
                          "Version": WORKBENCH_VERSION},
        "DataModel": [_table_model(t, facets, samples or {}) for t in tables],
        "ModelSchema": {"format": SCHEMA_FORMAT, "tables": [table_schema(t) for t in tables],
                        "entities": [dict(entity_schema(e), facet=facets[e]) for t in tables
                                     for e in t.entities().values()],
                        "accessPatterns": patterns},
    }
    return model


def render(model: dict[str, Any]) -> str:
    """The model as indented JSON (what Workbench's *Import data model* reads)."""
    return json.dumps(model, indent=2, ensure_ascii=False) + "\n"


# -- sample data (I/O) -----------------------------------------------------------------------------
def _json_av(av: dict[str, Any]) -> dict[str, Any]:
    """DynamoDB JSON with bytes as base64 text, as JSON files carry binary values."""
    ((kind, value),) = av.items()
    if kind == "B":
        return {"B": base64.b64encode(bytes(value)).decode()}
    if kind == "BS":
        return {"BS": [base64.b64encode(bytes(v)).decode() for v in value]}
    if kind == "L":
        return {"L": [_json_av(v) for v in value]}
    if kind == "M":
        return {"M": {k: _json_av(v) for k, v in value.items()}}
    return {kind: value}


def sample_item(obj: EntityLike) -> dict[str, Any]:
    """The item ``obj`` is stored as (DynamoDB JSON): key attributes (rendered by the one key renderer),
    the entity type and every field with a value (pure)."""
    meta = obj._meta
    tmeta = meta.table._meta
    keys = meta.key_attributes(obj.attribute_values)
    item: dict[str, Any] = {a: {"S": text} for a, text in keys.items() if text is not None}
    item[tmeta.type_attribute] = {"S": meta.entity_type}
    for name, f in meta.fields.items():
        value = getattr(obj, name)
        if value is None or (f.is_set and not value):  # not stored (DynamoDB has no empty sets)
            continue
        item[f.attr_name] = _json_av({f.attr_type: f.serialize(value)})
    return item


def read_samples(tables: list[type[Table]], n: int) -> dict[Any, list[dict[str, Any]]]:
    """Read up to ``n`` items of each entity of ``tables`` (public query API: ``Entity.objects.scan()[:n]``).

    Issues a Scan per entity (FilterExpression on the entity type, Limit ``n``), and more pages while fewer
    than ``n`` items of that type were found: on a large table with a rare entity type it reads further.

    Returns:
        entity class -> items as DynamoDB JSON (:func:`sample_item`), for :func:`build_model`.

    Raises:
        ValueError: ``n`` is not a positive integer (before any request).
        TableDoesNotExist, ServiceError: DynamoDB refused a Scan.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"--sample must be a positive number of items per entity, got {n!r}.")
    from ..registry import default_manager

    out: dict[Any, list[dict[str, Any]]] = {}
    for table in tables:
        for entity in table.entities().values():
            out[entity] = [sample_item(obj) for obj in default_manager(entity).scan()[:n]]
    return out
