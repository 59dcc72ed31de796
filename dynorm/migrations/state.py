"""Frozen model state: what the tables and entities looked like after a set of migrations.

Built two ways and compared by the autodetector: by replaying the operations of the
migration files (:meth:`ProjectState.apply`), and from the live model classes
(:func:`state_from_models`). Pure data; no I/O.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..keys import KeyTemplate
from ..tables import REVISION_ATTRIBUTE

if TYPE_CHECKING:  # pragma: no cover
    from ..tables import Table, TableOptions

__all__ = ["TableState", "EntityState", "ProjectState", "state_from_models", "entity_state", "table_state"]

#: Field kinds whose stored values decode to numbers / datetimes when keys are rendered.
NUMERIC_KINDS = {"Integer", "Number", "Decimal", "Version", "TTL"}


@dataclass
class TableState:
    """A table as the migrations know it (logical name; the prefix is added at apply time)."""

    name: str
    pk_attribute: str = "PK"
    sk_attribute: str | None = "SK"
    type_attribute: str = "entityType"
    gsis: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    lsis: dict[str, str] = field(default_factory=dict)
    ttl_attribute: str | None = None
    delimiter: str = "#"
    billing_mode: str = "PAY_PER_REQUEST"
    #: how values are written into key text (:mod:`dynorm.keys`); tables created before
    #: dynorm 0.2 record ``key_encoding="percent"`` in their CreateTable
    key_encoding: str = "ordered"
    #: scalar types (``S``/``N``) of LSI sort attributes (CreateTable must declare them)
    attribute_types: dict[str, str] = field(default_factory=dict)
    #: the attribute every dynorm write sets to a fresh token (``Table.Meta.revision_attribute``):
    #: move mode's "unchanged since read" condition
    revision_attribute: str = REVISION_ATTRIBUTE
    #: multi-attribute GSIs: name -> ``{"pk": {attribute: type}, "sk": {attribute: type}}``
    multi_gsis: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    #: the DynamoDB Streams view type of the table's stream (``Table.Meta.stream``), ``None``: no stream
    stream: str | None = None

    def options(self) -> TableOptions:
        """The equivalent :class:`~dynorm.tables.TableOptions`."""
        from ..tables import TableOptions, parse_multi_key

        multi = {g: parse_multi_key(f"table {self.name} GSI {g}", d) for g, d in self.multi_gsis.items()}
        return TableOptions(table_name=self.name, pk_attribute=self.pk_attribute, sk_attribute=self.sk_attribute,
                            type_attribute=self.type_attribute, gsis=dict(self.gsis), lsis=dict(self.lsis),
                            ttl_attribute=self.ttl_attribute, delimiter=self.delimiter,
                            billing_mode=self.billing_mode, key_encoding=self.key_encoding,
                            revision_attribute=self.revision_attribute, multi_gsis=multi, stream=self.stream)

    def all_gsis(self) -> dict[str, Any]:
        """Every GSI as migration files spell it: ``[pk, sk]`` or ``{"pk": {...}, "sk": {...}}``."""
        out: dict[str, Any] = {k: list(v) for k, v in self.gsis.items()}
        out.update({k: {"pk": dict(v["pk"]), "sk": dict(v.get("sk") or {})} for k, v in self.multi_gsis.items()})
        return out

    def definition(self) -> dict[str, Any]:
        """Keyword arguments for ``CreateTable(...)`` in a migration file."""
        out: dict[str, Any] = {"name": self.name}
        for key, default in (("pk_attribute", "PK"), ("sk_attribute", "SK"), ("type_attribute", "entityType"),
                             ("ttl_attribute", None), ("delimiter", "#"), ("billing_mode", "PAY_PER_REQUEST"),
                             ("key_encoding", "ordered"), ("revision_attribute", REVISION_ATTRIBUTE),
                             ("stream", None)):
            if getattr(self, key) != default:
                out[key] = getattr(self, key)
        if self.gsis or self.multi_gsis:
            out["gsis"] = self.all_gsis()
        if self.lsis:
            out["lsis"] = dict(self.lsis)
        if self.attribute_types:
            out["attribute_types"] = dict(self.attribute_types)
        return out


@dataclass
class EntityState:
    """An entity type's key layout, frozen.

    Attributes:
        table: logical table name; entity_type: the stored type attribute value.
        key_version: the version in ``{version}``.
        keys: access path -> {key attribute: template}; ``"primary"`` holds PK/SK, each GSI
            (or templated LSI) its own attributes. An index whose template misses a value is
            not written (sparse).
        fields: field name -> [attribute name, field kind] for every field a template uses.
        version_attribute: the ``fields.Version`` attribute name, if any.
        constraints: unique constraint name -> its field names (their attributes and kinds in ``fields``).
        shards: GSI name -> its write-sharding bucket count (``Index(shards=N)``), for sharded indexes.
        shard_by: GSI name -> the fields its bucket is computed from (``Index(shard_by=...)``), for
            sharded indexes: a change moves items to other buckets as surely as a new count.
    """

    table: str
    entity_type: str
    key_version: str
    keys: dict[str, dict[str, str]]
    fields: dict[str, list[str]]
    version_attribute: str | None = None
    constraints: dict[str, list[str]] = field(default_factory=dict)
    shards: dict[str, int] = field(default_factory=dict)
    shard_by: dict[str, list[str]] = field(default_factory=dict)

    def layout(self) -> tuple[Any, ...]:
        """What makes stored keys stale when it changes (version, templates, write-sharding buckets)."""
        return (self.key_version, sorted((k, sorted(v.items())) for k, v in self.keys.items()),
                sorted(self.shards.items()), sorted((k, list(v)) for k, v in self.shard_by.items()))

    def part(self) -> dict[str, Any]:
        """The layout as a RekeyEntity's ``old``/``new`` spells it (keys, fields, version attribute,
        write sharding; the last two only when there are any, so older migration files read the same)."""
        out: dict[str, Any] = {"keys": self.keys, "fields": self.fields}
        if self.version_attribute:
            out["version_attribute"] = self.version_attribute
        if self.shards:
            out["shards"] = dict(self.shards)
            out["shard_by"] = {k: list(v) for k, v in self.shard_by.items()}
        return out

    @classmethod
    def from_part(cls, table: str, entity_type: str, key_version: str, part: dict[str, Any]) -> EntityState:
        """The state a RekeyEntity's ``old``/``new`` (:meth:`part`) describes."""
        return cls(table, entity_type, key_version, part["keys"], part["fields"], part.get("version_attribute"),
                   shards=dict(part.get("shards") or {}),
                   shard_by={k: list(v) for k, v in (part.get("shard_by") or {}).items()})

    def templates(self, delimiter: str = "#", encoding: str = "ordered") -> dict[str, dict[str, KeyTemplate]]:
        """The key templates, parsed (values encoded with the table's ``key_encoding``)."""
        return {path: {attr: KeyTemplate(t, delimiter, encoding) for attr, t in attrs.items()}
                for path, attrs in self.keys.items()}

    def definition(self) -> dict[str, Any]:
        """Keyword arguments for ``CreateEntity(...)`` in a migration file."""
        out: dict[str, Any] = {"table": self.table, "entity_type": self.entity_type,
                               "key_version": self.key_version, "keys": self.keys, "fields": self.fields}
        if self.version_attribute:
            out["version_attribute"] = self.version_attribute
        if self.constraints:
            out["constraints"] = self.constraints
        if self.shards:
            out["shards"] = dict(self.shards)
        if self.shard_by:
            out["shard_by"] = {k: list(v) for k, v in self.shard_by.items()}
        return out


@dataclass
class ProjectState:
    """Tables and entities by name."""

    tables: dict[str, TableState] = field(default_factory=dict)
    entities: dict[tuple[str, str], EntityState] = field(default_factory=dict)

    def clone(self) -> ProjectState:
        """A deep copy."""
        return copy.deepcopy(self)


def table_state(table: type[Table]) -> TableState:
    """Freeze a live ``Table`` class."""
    from ..schema import attribute_types

    m = table._meta
    types = attribute_types(table)
    lsi_types = {a: types[a] for a in m.lsis.values() if types.get(a, "S") != "S"}
    return TableState(name=m.table_name, pk_attribute=m.pk_attribute, sk_attribute=m.sk_attribute,
                      type_attribute=m.type_attribute, gsis=dict(m.gsis), lsis=dict(m.lsis),
                      ttl_attribute=m.ttl_attribute, delimiter=m.delimiter, billing_mode=m.billing_mode,
                      key_encoding=m.key_encoding, attribute_types=lsi_types,
                      revision_attribute=m.revision_attribute, stream=m.stream,
                      multi_gsis={g: v.definition() for g, v in m.multi_gsis.items()})


def split_gsis(gsis: dict[str, Any]) -> tuple[dict[str, tuple[str, str | None]], dict[str, dict[str, dict[str, str]]]]:
    """Split GSIs as migration files spell them into template GSIs and multi-attribute GSIs."""
    plain: dict[str, tuple[str, str | None]] = {}
    multi: dict[str, dict[str, dict[str, str]]] = {}
    for k, v in (gsis or {}).items():
        if isinstance(v, dict):
            multi[k] = {"pk": dict(v["pk"]), "sk": dict(v.get("sk") or {})}
        else:
            plain[k] = (v[0], v[1])
    return plain, multi


def entity_state(entity: Any) -> EntityState:
    """Freeze a live entity class's key layout."""
    meta = entity._meta
    tmeta = meta.table._meta
    keys: dict[str, dict[str, str]] = {}
    shards: dict[str, int] = {}
    shard_by: dict[str, list[str]] = {}
    prim = {tmeta.pk_attribute: meta.primary.pk.template}
    if meta.primary.sk is not None and tmeta.sk_attribute:
        prim[tmeta.sk_attribute] = meta.primary.sk.template
    keys["primary"] = prim
    used = set(meta.primary.fields)
    for b in meta.indexes.values():
        if b.is_multi:
            # the fields' own attributes are the index keys: their stored types are recorded so
            # that a later type change (S -> N) is caught by makemigrations
            used |= set(b.fields)
            continue
        if not b.writes_key_attributes:
            continue
        attrs: dict[str, str] = {}
        if b.kind == "gsi":
            attrs[b.pk_attr] = b.pk.template
        if b.sk is not None and b.sk_attr and b.sk_attr != tmeta.sk_attribute:
            attrs[b.sk_attr] = b.sk.template
        if attrs:
            keys[b.index_name or b.name] = attrs
            used |= set(b.fields)
        if b.shards:
            shards[b.index_name or b.name] = b.shards
            shard_by[b.index_name or b.name] = list(b.shard_by)
    constraints = {c.name: list(c.fields) for c in getattr(meta, "constraints", ())}
    used |= {n for names in constraints.values() for n in names}
    fields = {n: [meta.fields[n].attr_name, meta.fields[n].kind] for n in sorted(used)
              if n in meta.fields}
    version_attr = meta.fields[meta.version_field].attr_name if meta.version_field else None
    return EntityState(table=tmeta.table_name, entity_type=meta.entity_type, key_version=meta.key_version,
                       keys=keys, fields=fields, version_attribute=version_attr, constraints=constraints,
                       shards=shards, shard_by=shard_by)


def state_from_models(tables: list[type[Table]]) -> ProjectState:
    """Freeze the live models of ``tables``."""
    state = ProjectState()
    for table in tables:
        state.tables[table._meta.table_name] = table_state(table)
        for entity in table._entities.values():
            es = entity_state(entity)
            state.entities[(es.table, es.entity_type)] = es
    return state
