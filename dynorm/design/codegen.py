"""Entity classes (a Python module's source) from a NoSQL Workbench data model (``dynorm import workbench``).

Two sources, one renderer:

- a model written by ``dynorm export workbench`` carries dynorm's own ``ModelSchema`` block: the tables
  and entities are regenerated exactly (templates of every index, key versions, field kinds and options);
- a model designed in NoSQL Workbench has only Workbench's fields: each table becomes a ``Table`` (its
  GSIs from ``GlobalSecondaryIndexes``: string keys are template GSIs, a GSI with a number or binary key
  attribute a multi-attribute GSI), each facet an ``Entity`` whose key templates are the facet's
  ``PartitionKeyAlias``/``SortKeyAlias`` (placeholders written ``{attr}``, ``<attr>`` or ``${attr}``) and
  whose fields are the facet's ``NonKeyAttributes`` with the table's attribute types. Workbench records
  no per-facet GSI templates: a template GSI is declared on the table, and a comment in each class says
  to bind it with ``Index(...)``.

A model dynorm cannot represent is refused with :class:`dynorm.ModelError` naming the table, facet and
attribute, before anything is written. Pure: text in, text out.
"""

from __future__ import annotations

import json
import keyword
import re
from pathlib import Path
from typing import Any, Mapping

from ..exceptions import ModelError
from ..options import RESERVED_FIELD_NAMES

__all__ = ["load_model", "generate_module", "model_specs"]

_SCHEMA_FORMAT = "dynorm/1"
#: Workbench attribute type -> (dynorm field kind, options)
_KINDS: dict[str, tuple[str, dict[str, Any]]] = {
    "S": ("String", {}), "N": ("Number", {}), "B": ("Binary", {}), "BOOL": ("Boolean", {}), "M": ("Map", {}),
    "L": ("List", {}), "SS": ("Set", {"of": "str"}), "NS": ("Set", {"of": "Decimal"}),
}
#: ``fields.Set(of=...)`` as ``ModelSchema`` names it -> as the source spells it
_SET_OF = {"str": "str", "int": "int", "float": "float", "Decimal": "decimal.Decimal"}
#: field kinds whose ``null`` is True unless told otherwise
_NULL_BY_DEFAULT = {"Version", "Set", "Reference"}
_KNOWN_KINDS = {"String", "Integer", "Number", "Decimal", "Boolean", "DateTime", "ULID", "Binary", "List", "Map",
                "Set", "Version", "TTL", "Reference"}
_PLACEHOLDER = re.compile(r"\$\{([^{}]+)\}|<([^<>]+)>|\{([^{}:]+)(:[^{}]*)?\}")
_TABLE_DEFAULTS = {"pk_attribute": "PK", "sk_attribute": "SK", "type_attribute": "entityType", "ttl_attribute": None,
                   "delimiter": "#", "billing_mode": "PAY_PER_REQUEST", "key_encoding": "ordered",
                   "revision_attribute": "_dynorm_rev", "stream": None}


def load_model(path: str | Path) -> dict[str, Any]:
    """Read a NoSQL Workbench data model (JSON) from ``path``.

    Raises:
        ModelError: the file cannot be read, is not JSON, or has no ``DataModel`` list of tables
            (the message names the file).
    """
    try:
        model = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelError(f"cannot read the Workbench model {path}: {exc.strerror or exc}.") from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"{path} is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); export the "
                         "model from NoSQL Workbench with Export data model (JSON).") from None
    if not isinstance(model, dict) or not isinstance(model.get("DataModel"), list) or not model["DataModel"]:
        raise ModelError(f"{path} is not a NoSQL Workbench data model: it needs a non-empty \"DataModel\" list of "
                         "tables (the JSON NoSQL Workbench exports).")
    return model


# -- names ------------------------------------------------------------------------------------------
def _words(text: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def _class_name(text: str, where: str) -> str:
    name = "".join(w[:1].upper() + w[1:] for w in _words(text))
    if not name or not name.isidentifier() or keyword.iskeyword(name):
        raise ModelError(f"{where}: {text!r} gives no Python class name; rename it with letters first.")
    return name if name[0].isalpha() else f"E{name}"


def _field_name(attr: str) -> str:
    name = "_".join(w.lower() for w in _words(attr)) or "field"
    if name[0].isdigit():
        name = f"f_{name}"
    if keyword.iskeyword(name) or name in RESERVED_FIELD_NAMES or name.startswith("_"):
        name = f"{name}_"
    return name


# -- from Workbench's own fields ----------------------------------------------------------------------
def _types(table: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    keys = table.get("KeyAttributes") or {}
    for spec in [*(keys.get(r) for r in ("PartitionKey", "SortKey")), *(table.get("NonKeyAttributes") or [])]:
        if isinstance(spec, dict) and spec.get("AttributeName"):
            out.setdefault(spec["AttributeName"], spec.get("AttributeType", "S"))
    for gsi in table.get("GlobalSecondaryIndexes") or []:
        for spec in (gsi.get("KeyAttributes") or {}).values():
            if isinstance(spec, dict) and spec.get("AttributeName"):
                out.setdefault(spec["AttributeName"], spec.get("AttributeType", "S"))
    return out


def _table_spec(table: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A table declaration from a Workbench table: keys, GSIs, billing mode."""
    name = table.get("TableName")
    if not isinstance(name, str) or not name:
        raise ModelError(f"{where}: a table without a TableName.")
    where = f"{where}: table {name}"
    keys = table.get("KeyAttributes") or {}
    pk, sk = keys.get("PartitionKey"), keys.get("SortKey")
    if not isinstance(pk, dict) or not pk.get("AttributeName"):
        raise ModelError(f"{where} has no KeyAttributes.PartitionKey.AttributeName.")
    for role, spec in (("partition", pk), ("sort", sk)):
        if spec and spec.get("AttributeType", "S") != "S":
            raise ModelError(
                f"{where}: the {role} key {spec['AttributeName']!r} is of type {spec.get('AttributeType')}; dynorm "
                "writes the table's keys as key text (S) from templates. Make it a string in Workbench.")
    gsis: dict[str, Any] = {}
    for gsi in table.get("GlobalSecondaryIndexes") or []:
        gname = gsi.get("IndexName")
        gkeys = gsi.get("KeyAttributes") or {}
        gpk, gsk = gkeys.get("PartitionKey") or {}, gkeys.get("SortKey") or {}
        if not gname or not gpk.get("AttributeName"):
            raise ModelError(f"{where}: a GSI without IndexName or KeyAttributes.PartitionKey.")
        if gpk["AttributeName"] == pk["AttributeName"]:
            raise ModelError(f"{where}: GSI {gname} uses the table's partition key {gpk['AttributeName']!r} as its "
                             "partition key; dynorm keys a GSI on attributes of its own. Give it another attribute.")
        if (gsi.get("Projection") or {}).get("ProjectionType", "ALL") != "ALL":
            raise ModelError(f"{where}: GSI {gname} projects {gsi['Projection']['ProjectionType']}; dynorm reads "
                             "whole items from its indexes (projection ALL). Set the projection to ALL.")
        if gpk.get("AttributeType", "S") == "S" and gsk.get("AttributeType", "S") == "S":
            gsis[gname] = [gpk["AttributeName"], gsk.get("AttributeName")]
        else:
            gsis[gname] = {"pk": {gpk["AttributeName"]: gpk.get("AttributeType", "S")},
                           "sk": {gsk["AttributeName"]: gsk.get("AttributeType", "S")} if gsk else {}}
    billing = table.get("BillingMode") or "PAY_PER_REQUEST"
    return {"class": _class_name(name, where), "table_name": name, "pk_attribute": pk["AttributeName"],
            "sk_attribute": (sk or {}).get("AttributeName"), "gsis": gsis, "billing_mode": billing}


def _placeholder_name(m: re.Match[str]) -> str:
    """The attribute (or field) a placeholder names: ``{x}``, ``{x:spec}``, ``<x>`` or ``${x}``."""
    return next(g for g in m.groups()[:3] if g is not None).strip()


def _template(alias: Any, where: str, key_attr: str, attr_fields: Mapping[str, str]) -> str:
    """A key template from a facet's alias: each placeholder becomes ``{field}`` (``{version}`` stays)."""
    if not isinstance(alias, str) or not alias:
        raise ModelError(f"{where} is missing; write the key template there (e.g. CUSTOMER#<customerId>).")
    if alias == key_attr:
        raise ModelError(f"{where} is {alias!r}, the key attribute's own name, not a key template. Write the "
                         f"template as the alias in Workbench (e.g. ORDER#<orderId>, or a constant such as METADATA).")
    def swap(m: re.Match[str]) -> str:
        attr = _placeholder_name(m)
        return "{" + attr_fields.get(attr, attr) + (m.group(4) or "") + "}"

    return _PLACEHOLDER.sub(swap, alias)


def _entity_spec(facet: Mapping[str, Any], tspec: Mapping[str, Any], types: Mapping[str, str],
                 where: str) -> dict[str, Any]:
    name = facet.get("FacetName")
    if not isinstance(name, str) or not name:
        raise ModelError(f"{where}: a facet without a FacetName.")
    where = f"{where}: facet {name}"
    key_attrs = {tspec["pk_attribute"], tspec["sk_attribute"], "entityType"}
    for g in tspec["gsis"].values():
        if isinstance(g, list):
            key_attrs.update(a for a in g if a)
    fields: dict[str, Any] = {}
    attr_fields: dict[str, str] = {}  # attribute (or a field name a placeholder uses) -> field name

    def add(attr: str, typ: str | None, required: bool) -> None:
        if typ is None:
            raise ModelError(f"{where}: NonKeyAttributes lists {attr!r}, which table {tspec['table_name']} does not "
                             "define; add it to the table's attributes in Workbench.")
        if typ not in _KINDS:
            raise ModelError(f"{where}: attribute {attr!r} is of type {typ}, which no dynorm field stores "
                             f"(supported: {', '.join(_KINDS)}).")
        fname = _field_name(attr)
        if fname in fields:
            raise ModelError(f"{where}: attributes {fields[fname]['attribute']!r} and {attr!r} both give the field "
                             f"name {fname!r}; rename one of them.")
        kind, opts = _KINDS[typ]
        fields[fname] = {"kind": kind, "attribute": attr, "null": not required, **opts}
        attr_fields[attr] = attr_fields[fname] = fname

    named = {_placeholder_name(m) for alias in (facet.get("KeyAttributeAlias") or {}).values()
             if isinstance(alias, str) for m in _PLACEHOLDER.finditer(alias)} - {"version"}
    for attr in facet.get("NonKeyAttributes") or []:
        if attr not in key_attrs:
            add(attr, types.get(attr), attr in named or _field_name(attr) in named)
    for attr in sorted(named - set(attr_fields)):  # a placeholder naming no listed attribute: key text
        add(attr, "S", True)
    alias = facet.get("KeyAttributeAlias") or {}
    pk = _template(alias.get("PartitionKeyAlias"), f"{where}: PartitionKeyAlias", tspec["pk_attribute"], attr_fields)
    sk = None
    if tspec["sk_attribute"]:
        sk = _template(alias.get("SortKeyAlias"), f"{where}: SortKeyAlias", tspec["sk_attribute"], attr_fields)
    indexes: dict[str, Any] = {}
    unbound = []
    for gname, g in tspec["gsis"].items():
        if isinstance(g, dict):
            gattrs = [*g["pk"], *g["sk"]]
            if all(a in attr_fields for a in gattrs):
                indexes[_field_name(gname)] = {"index": gname, "pk": [attr_fields[a] for a in g["pk"]],
                                               "sk": [attr_fields[a] for a in g["sk"]]}
        else:
            unbound.append(gname)
    return {"class": _class_name(name, where), "facet": name, "table": tspec["table_name"], "entity_type": name,
            "key_version": "v1", "pk": pk, "sk": sk, "indexes": indexes, "fields": fields, "unbound": unbound}


#: what each table and entity of a ``ModelSchema`` must hold: key -> type
_TABLE_KEYS = {"class": str, "table_name": str}
_ENTITY_KEYS = {"class": str, "table": str, "entity_type": str, "pk": str, "fields": dict}


def _checked_schema(schema: Mapping[str, Any], source: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                                     list[Any]]:
    """The tables, entities and access patterns of a ``ModelSchema`` block, refusing a malformed one."""
    out: list[list[Any]] = []
    for part, required in (("tables", _TABLE_KEYS), ("entities", _ENTITY_KEYS)):
        specs = schema.get(part) or []
        if not isinstance(specs, list):
            raise ModelError(f"{source}: ModelSchema.{part} must be a list, got {type(specs).__name__}.")
        for i, spec in enumerate(specs):
            bad = [k for k, t in required.items() if not isinstance(spec, dict) or not isinstance(spec.get(k), t)]
            if bad:
                raise ModelError(f"{source}: ModelSchema.{part}[{i}] lacks {', '.join(bad)} (or has the wrong type); "
                                 "export the model again with dynorm export workbench.")
            if part == "entities" and not all(isinstance(f, dict) for f in spec["fields"].values()):
                raise ModelError(f"{source}: ModelSchema.entities[{i}] ({spec['class']}): each field must be an "
                                 "object with its kind and attribute.")
        out.append(list(specs))
    patterns = schema.get("accessPatterns") or []
    return out[0], out[1], [p for p in patterns if isinstance(p, dict)] if isinstance(patterns, list) else []


def model_specs(model: Mapping[str, Any], source: str = "the model") -> tuple[list[dict[str, Any]],
                                                                              list[dict[str, Any]], list[Any]]:
    """The tables, entities and access patterns a Workbench model declares (pure).

    Args:
        model: the model (:func:`load_model`).
        source: the file name, for messages.

    Returns:
        ``(tables, entities, access_patterns)`` as plain data (the shapes of
        :func:`dynorm.design.workbench.table_schema` and ``entity_schema``).

    Raises:
        ModelError: a table, facet or attribute dynorm cannot represent (the message names it).
    """
    schema = model.get("ModelSchema")
    if isinstance(schema, dict) and schema.get("format") == _SCHEMA_FORMAT:
        return _checked_schema(schema, source)
    tables, entities = [], []
    for table in model["DataModel"]:
        tspec = _table_spec(table, source)
        types = _types(table)
        tables.append(tspec)
        for facet in table.get("TableFacets") or []:
            entities.append(_entity_spec(facet, tspec, types, f"{source}: table {tspec['table_name']}"))
    return tables, entities, []


# -- rendering --------------------------------------------------------------------------------------
def _identifier(name: Any, what: str, where: str) -> str:
    """``name`` when it is a Python identifier that is no keyword (names go into the source unquoted)."""
    if not (isinstance(name, str) and name.isidentifier()) or keyword.iskeyword(name):
        raise ModelError(f"{where}: {what} {name!r} is not a Python identifier; rename it.")
    return name


def _field_source(name: str, spec: Mapping[str, Any], where: str) -> str:
    _identifier(name, "field name", where)
    kind = spec.get("kind")
    if kind not in _KNOWN_KINDS:
        raise ModelError(f"{where}: field {name} is of kind {kind!r}, which dynorm does not know "
                         f"({', '.join(sorted(_KNOWN_KINDS))}).")
    args: list[str] = []
    if kind == "Reference":
        args.append(repr(spec.get("target")))
    of = spec.get("of", "str") if kind == "Set" else "str"
    if of not in _SET_OF:
        raise ModelError(f"{where}: field {name} is a Set of {of!r}; a set holds str, int, float or Decimal.")
    if of != "str":
        args.append(f"of={_SET_OF[of]}")
    if spec.get("attribute", name) != name:
        args.append(f"attr_name={spec['attribute']!r}")
    for flag in ("auto", "auto_now", "auto_now_add"):
        if spec.get(flag):
            args.append(f"{flag}=True")
    if "default" in spec:
        args.append(f"default={spec['default']!r}")
    null = bool(spec.get("null", False))
    if null != (kind in _NULL_BY_DEFAULT):
        args.append(f"null={null}")
    return f"    {name} = fields.{kind}({', '.join(args)})"


def _index_source(spec: Mapping[str, Any]) -> str:
    args = [repr(spec["index"])]
    for role in ("pk", "sk"):
        value = spec.get(role)
        if isinstance(value, list):
            value = tuple(value)
        if value is not None:
            args.append(f"{role}={value!r}")
    if spec.get("comment"):
        args.append(f"comment={spec['comment']!r}")
    if spec.get("shards"):
        shards, shard_by = spec["shards"], spec.get("shard_by") or []
        if type(shards) is not int or not all(isinstance(n, str) and n.isidentifier() for n in shard_by):
            raise ModelError(f"index {spec['index']!r}: shards must be a whole number and shard_by field names, "
                             f"not {shards!r} and {shard_by!r}")
        args.append(f"shards={shards!r}")
        if shard_by:
            args.append(f"shard_by={tuple(shard_by)!r}")
    return f"Index({', '.join(args)})"


def _table_source(spec: Mapping[str, Any]) -> list[str]:
    lines = [f"class {spec['class']}(Table):", "    class Meta:", f"        table_name = {spec['table_name']!r}"]
    for key, default in _TABLE_DEFAULTS.items():
        if key in spec and spec[key] != default:
            lines.append(f"        {key} = {spec[key]!r}")
    gsis = spec.get("gsis") or {}
    if gsis:
        lines.append("        gsis = {")
        for g, v in gsis.items():
            lines.append(f"            {g!r}: {tuple(v) if isinstance(v, list) else v!r},")
        lines.append("        }")
    if spec.get("lsis"):
        lines.append(f"        lsis = {dict(spec['lsis'])!r}")
    return lines


def _entity_source(spec: Mapping[str, Any], tables: Mapping[str, str], source: str) -> list[str]:
    where = f"{source}: entity {spec.get('class')}"
    if spec.get("table") not in tables:
        raise ModelError(f"{where} names table {spec.get('table')!r}, which the model does not declare.")
    lines = [f"class {spec['class']}(Entity):"]
    lines += [_field_source(n, f, where) for n, f in spec["fields"].items()]
    if spec.get("unbound"):
        first = spec["unbound"][0]
        lines.append(f"    # GSI {', '.join(spec['unbound'])}: a Workbench model holds no per-facet GSI key templates;")
        lines.append(f"    # bind one with Meta.indexes = {{'by_x': Index({first!r}, pk='X#{{field}}', sk='...')}}")
    lines += ["", "    class Meta:", f"        table = {tables[spec['table']]}",
              f"        entity_type = {spec['entity_type']!r}"]
    if spec.get("key_version", "v1") != "v1":
        lines.append(f"        key_version = {spec['key_version']!r}")
    if spec.get("read_versions"):
        lines.append(f"        read_versions = {[spec['key_version'], *spec['read_versions']]!r}")
    lines.append(f"        pk = {spec['pk']!r}")
    if spec.get("sk") is not None:
        lines.append(f"        sk = {spec['sk']!r}")
    for n in spec.get("indexes") or {}:
        _identifier(n, "access-path name", where)
    if spec.get("indexes"):
        lines.append("        indexes = {")
        lines += [f"            {n!r}: {_index_source(i)}," for n, i in spec["indexes"].items()]
        lines.append("        }")
    return lines


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def generate_module(model: Mapping[str, Any], source: str = "the model") -> str:
    """The Python source of a module declaring the model's tables and entities (pure).

    Args:
        model: a NoSQL Workbench data model (:func:`load_model`).
        source: the file name, named in messages and in the module's header comment.

    Returns:
        The module's source: ``Table`` and ``Entity`` classes with their key templates, indexes and
        fields; the model's access patterns as comments (write them as ``QuerySet`` methods).

    Raises:
        ModelError: a table, facet or attribute dynorm cannot represent, or two classes of one name.
    """
    tables, entities, patterns = model_specs(model, source)
    names: dict[str, str] = {}
    for spec in [*tables, *entities]:
        cls = spec["class"]
        if not (isinstance(cls, str) and cls.isidentifier()) or keyword.iskeyword(cls):
            raise ModelError(f"{source}: {cls!r} is not a usable class name.")
        if cls in names:
            other = spec.get("facet") or cls
            raise ModelError(f"{source}: two classes would be named {cls} ({names[cls]} and {other}); rename one of "
                             "the tables or facets.")
        names[cls] = str(spec.get("facet") or spec.get("table_name") or cls)
    needs_decimal = any(f.get("of") == "Decimal" for e in entities for f in e["fields"].values())
    lines = ['"""Tables and entities generated by ``dynorm import workbench``: edit them freely."""', "",
             f"# generated from the NoSQL Workbench model {_one_line(model.get('ModelName', source))!r} ({source})"]
    if patterns:
        lines.append("# access patterns of the model (add each as a QuerySet method: see docs/querying.md):")
        lines += [f"#   {_one_line(p.get('pattern'))}: {_one_line(p.get('call'))}" for p in patterns]
    lines += ["", "from __future__ import annotations", ""]
    if needs_decimal:
        lines += ["import decimal", ""]
    lines += ["from dynorm import Entity, Index, Table, fields  # noqa: F401", ""]
    for spec in tables:
        lines += ["", *_table_source(spec), ""]
    by_name = {t["table_name"]: t["class"] for t in tables}
    for spec in entities:
        lines += ["", *_entity_source(spec, by_name, source), ""]
    return "\n".join(lines).rstrip() + "\n"
