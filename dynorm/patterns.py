"""The access-pattern document, generated from the models so it never drifts from the code.

Layout follows Franklin's "A Novel Pattern for Documenting DynamoDB Access Patterns": a list
of ``"Access Patterns"`` (the named queryset methods' docstrings), then per group (the first
literal of the partition-key template) a list of ``{"PK": template, "SK": {sk template:
{"entityType": ..., "PK1": ..., "SK1": ..., "_commentGSI1": ...}}}``. dynorm adds
``"_accessPatternRequests"``: for each named pattern, the call and the request it issues
(from ``explain()``, with placeholders for the arguments). Pure: no I/O.
"""

from __future__ import annotations

import datetime as _dt
import inspect
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .tables import Table

__all__ = ["build_document", "render", "named_patterns"]

_SAMPLE_ULIDS = iter(f"01ARZ3NDEKTSV4RRFFQ69G{n:04d}" for n in range(10_000))


def _group(template: str, delimiter: str) -> str:
    for part in template.split(delimiter):
        if part and "{" not in part:
            return part
    return template


def named_patterns(entity: Any) -> list[tuple[str, str]]:
    """(method name, description) for each access pattern a custom queryset adds to ``entity``."""
    from .query import QuerySet

    qs_class = entity._default_manager._queryset_class
    out = []
    for name, fn in inspect.getmembers(qs_class, inspect.isfunction):
        if name.startswith("_") or hasattr(QuerySet, name):
            continue
        doc = inspect.getdoc(fn) or name.replace("_", " ")
        out.append((name, doc.splitlines()[0]))
    return out


def _sample_call(entity: Any, method: str) -> tuple[str, str]:
    """Call a named pattern with placeholder arguments; return (call text, request text)."""
    manager = entity._default_manager
    fn = getattr(manager._queryset_class, method)
    params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
    args: list[Any] = []
    swaps: dict[str, str] = {}
    fields = entity._meta.fields
    for p in params:
        if p.default is not inspect.Parameter.empty:
            continue
        field = fields.get(p.name)
        kind = field.kind if field is not None else str(p.annotation)
        if kind == "ULID":
            value: Any = next(_SAMPLE_ULIDS)
            swaps[value] = f"<{p.name}>"
        elif "datetime" in kind or kind == "DateTime":
            value = _dt.datetime(2024, 1, 1, 0, 0, len(swaps), tzinfo=_dt.timezone.utc)
            swaps[value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")] = f"<{p.name}>"
        elif kind in ("Integer", "int"):
            value = 7 + len(args)  # increasing: a range's bounds come in order (start, end)
        else:
            # increasing with the position too ("<start>" sorts above "<end>": a between() was refused)
            value = f"S{len(args):02d}{p.name}"
            swaps[value] = f"<{p.name}>"
        args.append(value)
    shown = ", ".join(f"<{p.name}>" for p in params if p.default is inspect.Parameter.empty)
    call = f"{entity.__name__}.{manager.name}.{method}({shown})"
    try:
        result = getattr(manager, method)(*args)
        text = str(result.explain())
    except Exception as exc:  # noqa: BLE001 - a pattern that cannot be planned is reported, not fatal
        return call, f"(not planned without real arguments: {type(exc).__name__}: {exc})"
    for sample, placeholder in swaps.items():
        text = text.replace(sample, placeholder)
    return call, " | ".join(line.strip() for line in text.splitlines())


def build_document(tables: list[type[Table]], entity: str | None = None) -> dict[str, Any]:
    """Build the access-pattern document for ``tables`` (optionally one entity class or type).

    Returns:
        a JSON-ready dict; see the module docstring for its layout.

    Raises:
        ValueError: ``entity`` names no entity of these tables.
    """
    entities = [e for t in tables for e in t.entities().values()]
    if entity is not None:
        entities = [e for e in entities if entity in (e.__name__, e._meta.entity_type)]
        if not entities:
            raise ValueError(f"no entity {entity!r} in the configured models.")
    doc: dict[str, Any] = {"Access Patterns": [], "_accessPatternRequests": []}
    for e in entities:
        for method, description in named_patterns(e):
            call, request = _sample_call(e, method)
            doc["Access Patterns"].append(description)
            doc["_accessPatternRequests"].append({"pattern": description, "entity": e.__name__, "call": call,
                                                  "request": request})
    for e in entities:
        m = e._meta
        tmeta = m.table._meta
        group = _group(m.primary.pk.template.replace("{version}", ""), tmeta.delimiter)
        entries = doc.setdefault(group, [])
        entry = next((x for x in entries if x["PK"] == m.primary.pk.template), None)
        if entry is None:
            entry = {"PK": m.primary.pk.template, "SK": {}}
            if len(tables) > 1:
                entry["_table"] = tmeta.table_name
            entries.append(entry)
        sk = m.primary.sk.template if m.primary.sk is not None else ""
        item: dict[str, Any] = {tmeta.type_attribute: m.entity_type, "_keyVersion": m.key_version}
        for b in m.indexes.values():
            if b.is_multi:
                keys = [f"{a} HASH" for a in b.pk_attrs] + [f"{a} RANGE" for a in b.sk_attrs]
                item[f"_{b.index_name}"] = "multi-attribute GSI on " + ", ".join(keys)
            elif b.kind == "gsi":
                item[b.pk_attr] = b.pk.template
                if b.shards:
                    d = tmeta.delimiter
                    item[f"_shards{b.index_name}"] = (
                        f"write-sharded: {b.pk_attr} ends in {d}0 .. {d}{b.shards - 1}, CRC-32 of "
                        f"{', '.join(b.shard_by)} mod {b.shards}; a query without them sends {b.shards} Queries")
                if b.sk_attr:
                    item[b.sk_attr] = b.sk.template if b.sk is not None else sk
            elif b.sort_field is not None:
                item[f"_{b.index_name}"] = f"LSI sorted on {m.fields[b.sort_field].attr_name}"
            elif b.sk is not None and b.sk_attr:
                item[b.sk_attr] = b.sk.template
            item[f"_comment{b.index_name}"] = b.comment or f"access path {b.name!r}"
        entry["SK"][sk] = item
    return doc


def render(doc: dict[str, Any], fmt: str = "json") -> str:
    """Render the document as ``json``, ``yaml`` or ``markdown``."""
    if fmt == "json":
        return json.dumps(doc, indent=4)
    if fmt == "yaml":
        import yaml

        return str(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120))
    if fmt != "markdown":
        raise ValueError(f"unknown format {fmt!r}: use json, yaml or markdown")
    lines = ["# Access patterns", ""]
    for req in doc["_accessPatternRequests"]:
        lines.append(f"- **{req['pattern']}** — `{req['call']}`  ")
        lines.append(f"  `{req['request']}`")
    lines.append("")
    for group, entries in doc.items():
        if group.startswith("_") or group == "Access Patterns":
            continue
        lines += [f"## {group}", ""]
        for entry in entries:
            lines += [f"PK `{entry['PK']}`", "", "| SK | attributes |", "| --- | --- |"]
            for sk, item in entry["SK"].items():
                attrs = "<br>".join(f"{k}: `{v}`" for k, v in item.items())
                lines.append(f"| `{sk}` | {attrs} |")
            lines.append("")
    return "\n".join(lines)
