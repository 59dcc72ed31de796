"""``Index`` declarations and the ``_meta`` options object built from an entity's ``Meta``.

The user's ``Meta`` class is read, never mutated. Everything here is pure.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from functools import cached_property
from typing import TYPE_CHECKING, Any, Mapping

from ._value import FrozenValue, Value
from .constraints import SENTINEL_TYPE, UniqueConstraint, resolve_constraints, unique_fields
from .exceptions import InvalidKeyValue, ModelError, ValidationError
from .keys import VERSION, KeyTemplate
from .shards import bucket_of, shard_key
from .table_options import is_table_class

if TYPE_CHECKING:  # pragma: no cover
    from .fields import Field
    from .table_options import TableDeclaration

__all__ = ["Index", "BoundIndex", "Options", "PRIMARY", "RESERVED_FIELD_NAMES"]

PRIMARY = "primary"

#: Field names that would shadow the entity API.
RESERVED_FIELD_NAMES = frozenset({
    "objects", "save", "delete", "update", "refresh", "refresh_from_db", "pk", "sk", "keys",
    "key", "full_clean", "to_dict", "Meta", "DoesNotExist", "MultipleObjectsReturned",
    "attribute_values", "serialize", "deserialize", "from_raw_data", "get_attributes",
    "version_attribute", "entity_type", "hash_key", "range_key", "_meta",
})


class Index:
    """An access path through one of the table's indexes.

    Args:
        name: the physical index name declared on the ``Table`` (``"GSI1"``, ``"LSI1"``).
        pk: partition-key template for a GSI (``"{version}#B#{brand_id}"``). Not given for
            an LSI, which shares the table's partition key.
        sk: sort-key template. For an LSI whose sort attribute is a field's own attribute
            (``lsis = {"LSI1": "created_at"}``), leave it out.
        comment: a description used by ``dynorm patterns`` and the shell banner.
        shards: write sharding of a GSI's partition key over this many buckets (2..1000): each
            item's partition-key text gets ``<delimiter><bucket>`` appended, the bucket a stable
            hash (CRC-32) of the ``shard_by`` fields' key text modulo ``shards``
            (:func:`dynorm.shards.bucket_of`). A query that gives every ``shard_by`` field reads one
            bucket; any other sends one Query per bucket, concurrently, and merges them in sort-key
            order (:mod:`dynorm.shard_merge`). ``None``: not sharded.
        shard_by: the fields the bucket is computed from (default: every primary-key field).
            Only primary-key fields are accepted: they never change, so an item never moves bucket.

    For a multi-attribute GSI (``Table.Meta.gsis = {"ByRegion": {"pk": {...}, "sk": {...}}}``),
    ``pk`` and ``sk`` are tuples of field names instead of templates:
    ``Index("ByRegion", pk=("tenant_id", "region"), sk=("year", "title"))``. Each field is
    stored under its own attribute with its native type (no key text is written), in the
    order the table declares; an item missing any of them is not in the index.
    """

    def __init__(self, name: str, pk: str | tuple[str, ...] | None = None,
                 sk: str | tuple[str, ...] | None = None, comment: str = "", *, shards: int | None = None,
                 shard_by: str | tuple[str, ...] | None = None) -> None:
        self.name = name
        self.pk = pk
        self.sk = sk
        self.comment = comment
        self.shards = shards
        self.shard_by = (shard_by,) if isinstance(shard_by, str) else shard_by

    def __repr__(self) -> str:
        return f"Index({self.name!r}, pk={self.pk!r}, sk={self.sk!r})"


class BoundIndex(FrozenValue):
    """One access path resolved against an entity and its table.

    Attributes:
        name: the access-path name (``"primary"`` or the ``Meta.indexes`` key).
        index_name: the DynamoDB index name (``None`` for the table itself).
        kind: ``"table"``, ``"gsi"`` or ``"lsi"``.
        pk: partition-key template; pk_attr its attribute name.
        sk: sort-key template (``None`` when the sort key is a field's own attribute or absent).
        sk_attr: the sort-key attribute name (``None`` when the index has no sort key).
        sort_field: for an LSI on a field's attribute, that field's name.
        comment: description.
        pk_fields, sk_fields: for a multi-attribute GSI (``kind == "multi"``), the fields whose
            own attributes are its partition and sort keys, in key order; ``pk``/``sk`` are then
            display templates only (never rendered: nothing is written for such an index).
        pk_attrs, sk_attrs: those fields' attribute names.
        shards: the number of write-sharding buckets of a GSI's partition key (``0``: not sharded).
        shard_by: the fields the bucket is computed from (primary-key fields).
    """

    name: str
    index_name: str | None
    kind: str
    pk: KeyTemplate
    pk_attr: str
    sk: KeyTemplate | None
    sk_attr: str | None
    sort_field: str | None
    comment: str
    pk_fields: tuple[str, ...]
    sk_fields: tuple[str, ...]
    pk_attrs: tuple[str, ...]
    sk_attrs: tuple[str, ...]
    shards: int
    shard_by: tuple[str, ...]

    def __init__(self, name: str, index_name: str | None, kind: str, pk: KeyTemplate, pk_attr: str,
                 sk: KeyTemplate | None, sk_attr: str | None, sort_field: str | None = None, comment: str = "",
                 pk_fields: tuple[str, ...] = (), sk_fields: tuple[str, ...] = (), pk_attrs: tuple[str, ...] = (),
                 sk_attrs: tuple[str, ...] = (), shards: int = 0, shard_by: tuple[str, ...] = ()) -> None:
        self.__dict__.update(name=name, index_name=index_name, kind=kind, pk=pk, pk_attr=pk_attr, sk=sk,
                             sk_attr=sk_attr, sort_field=sort_field, comment=comment, pk_fields=pk_fields,
                             sk_fields=sk_fields, pk_attrs=pk_attrs, sk_attrs=sk_attrs, shards=shards,
                             shard_by=shard_by)

    @property
    def is_multi(self) -> bool:
        """True for a multi-attribute GSI (keys are the fields' own typed attributes)."""
        return self.kind == "multi"

    @property
    def key_attrs(self) -> tuple[str, ...]:
        """Every attribute of this access path's own key (partition first)."""
        if self.is_multi:
            return (*self.pk_attrs, *self.sk_attrs)
        return tuple(a for a in (self.pk_attr, self.sk_attr) if a)

    @property
    def fields(self) -> tuple[str, ...]:
        """Every field this index's keys are built from."""
        out = list(self.pk.fields)
        if self.sk is not None:
            out += [f for f in self.sk.fields if f not in out]
        if self.sort_field and self.sort_field not in out:
            out.append(self.sort_field)
        return tuple(out)

    @property
    def writes_key_attributes(self) -> bool:
        """True when saving an item writes this index's key attributes from templates."""
        return self.kind == "gsi" or (self.kind == "lsi" and self.sk is not None)


class Options(Value):
    """The resolved ``Meta`` of an entity (``Entity._meta``).

    Attributes:
        entity: the entity class name; entity_type the stored ``entityType`` value.
        table: the ``Table`` subclass; key_version fills ``{version}``.
        read_versions: key versions ``get()`` tries in order (default ``[key_version]``).
        fields: field name -> field, in declaration order.
        primary: the table's own key (a :class:`BoundIndex` named ``"primary"``).
        indexes: access-path name -> :class:`BoundIndex` (``Meta.indexes``, in order).
        version_field: the ``fields.Version`` field name, or ``None``.
        constraints: the unique constraints (``unique=True`` fields, then ``Meta.constraints``).
    """

    entity: str
    table: type[TableDeclaration]
    entity_type: str
    key_version: str
    read_versions: tuple[str, ...]
    fields: dict[str, Field]
    primary: BoundIndex
    indexes: dict[str, BoundIndex]
    version_field: str | None
    abstract: bool
    constraints: tuple[UniqueConstraint, ...]

    def __init__(self, entity: str, table: type[TableDeclaration], entity_type: str, key_version: str,
                 read_versions: tuple[str, ...], fields: dict[str, Field], primary: BoundIndex,
                 indexes: dict[str, BoundIndex] | None = None, version_field: str | None = None,
                 abstract: bool = False, constraints: tuple[UniqueConstraint, ...] = ()) -> None:
        self.entity = entity
        self.table = table
        self.entity_type = entity_type
        self.key_version = key_version
        self.read_versions = read_versions
        self.fields = fields
        self.primary = primary
        self.indexes = {} if indexes is None else indexes
        self.version_field = version_field
        self.abstract = abstract
        self.constraints = constraints

    @property
    def all_indexes(self) -> list[BoundIndex]:
        """The primary key first, then the declared indexes in order."""
        return [self.primary, *self.indexes.values()]

    @cached_property
    def key_fields(self) -> tuple[str, ...]:
        """Fields that make up the primary key (immutable once written)."""
        return self.primary.fields

    # -- per-class facts every write of an instance needs, computed once (issue 24) -------------
    @cached_property
    def auto_now_fields(self) -> tuple[str, ...]:
        """Fields set to the current time on every save (``DateTime(auto_now=True)``), in order."""
        return tuple(n for n, f in self.fields.items() if getattr(f, "auto_now", False))

    @cached_property
    def unversioned_fields(self) -> tuple[str, ...]:
        """Every field but the version field, in declaration order (what a whole save writes as values)."""
        return tuple(n for n in self.fields if n != self.version_field)

    @cached_property
    def attribute_writers(self) -> dict[str, tuple[str, str, Any]]:
        """Field name -> ``(attribute name, DynamoDB type, serialize)`` (:meth:`dynorm.fields.Field.writer`)."""
        return {n: f.writer() for n, f in self.fields.items()}

    def attr_name(self, field_name: str) -> str:
        """The DynamoDB attribute name of a field."""
        return self.fields[field_name].attr_name

    def index_key(self, bound: BoundIndex, values: Mapping[str, Any], table_pk: str) -> list[tuple[str, str | None]]:
        """Render the key attributes one index writes: ``[(attribute, text or None)]``.

        ``None`` for every attribute of the index when a template misses a value (sparse
        index: the item is left out of it). ``table_pk`` is the item's partition-key text
        (an LSI shares it). The table's own sort-key attribute is never listed.

        Raises:
            InvalidKeyValue: a given value cannot be put in a key.
        """
        tmeta = self.table._meta
        pk = table_pk if bound.kind == "lsi" else bound.pk.try_fill(values, self.key_version, entity=self.entity)
        sk = None
        if bound.sk is not None:
            sk = bound.sk.try_fill(values, self.key_version, entity=self.entity)
        if pk is None or (bound.sk is not None and sk is None):
            pk = sk = None
        elif bound.shards:
            pk = shard_key(pk, bucket_of(bound, values, self.entity), tmeta.delimiter)
        out: list[tuple[str, str | None]] = []
        if bound.kind == "gsi":
            out.append((bound.pk_attr, pk))
        if bound.sk_attr and bound.sk_attr != tmeta.sk_attribute:
            out.append((bound.sk_attr, sk))
        shared = self.shared_key_attributes
        if shared:
            out = [(a, t) for a, t in out if a not in shared or self._writes_shared(bound, shared[a], t, values)]
        return out

    @cached_property
    def shared_key_attributes(self) -> dict[str, tuple[BoundIndex, ...]]:
        """Attributes that several key templates of this entity write -> those access paths, primary first.

        ``build_options`` refuses such templates unless they render alike (an inverted index on
        ``SK``/``PK``; one ``Data`` attribute sorting GSI1 and GSI2).
        """
        tmeta = self.table._meta
        writers: dict[str, list[BoundIndex]] = {}
        for b in self.all_indexes:
            attrs: list[str | None] = []
            if b.kind == "table":
                attrs = [tmeta.pk_attribute, tmeta.sk_attribute if b.sk is not None else None]
            elif b.kind == "gsi":
                attrs = [b.pk_attr, b.sk_attr if b.sk is not None else None]
            elif b.kind == "lsi" and b.sk is not None:
                attrs = [b.sk_attr]
            for a in attrs:
                if a:
                    writers.setdefault(a, []).append(b)
        return {a: tuple(ws) for a, ws in writers.items() if len(ws) > 1}

    @cached_property
    def key_sources(self) -> dict[str, tuple[str, ...]]:
        """Access-path name -> every field that decides the key attributes it writes.

        An index's own template fields, and, for each attribute it shares with other key
        templates (:attr:`shared_key_attributes`), the fields of every other index writing it:
        whether a shared ``Data`` stays or goes when one sparse index loses a value depends on
        whether another writer of it still has all of its values (:meth:`_writes_shared`). A
        write that rewrites the index must know each of them (:func:`dynorm.writes.pin_key_sources`).
        """
        out: dict[str, tuple[str, ...]] = {}
        shared = self.shared_key_attributes
        for bound in self.all_indexes:
            names = list(bound.fields)
            for writers in shared.values():
                if bound in writers:
                    names += [n for w in writers if w is not bound for n in w.fields if n not in names]
            out[bound.name] = tuple(names)
        return out

    @cached_property
    def unique_fields(self) -> tuple[str, ...]:
        """The fields a unique constraint covers (:attr:`constraints`), in first-seen order."""
        return unique_fields(self.constraints)

    @cached_property
    def pinned_attributes(self) -> tuple[tuple[str, str], ...]:
        """``(field, attribute)`` of each non-key field a template index key depends on (:attr:`key_sources`).

        A read keeps how each was stored (``obj._state.read_as``) so that a write pins the stored
        attribute as it is, not the value re-serialised.
        """
        keyf = set(self.key_fields)
        names: list[str] = []
        for bound in self.indexes.values():
            if bound.writes_key_attributes:
                names += [n for n in self.key_sources[bound.name] if n not in keyf and n not in names]
        return tuple((n, self.fields[n].attr_name) for n in names)

    def _writes_shared(self, bound: BoundIndex, writers: tuple[BoundIndex, ...], text: str | None,
                       values: Mapping[str, Any]) -> bool:
        """Whether ``bound`` lists a shared attribute in :meth:`index_key` (each is listed once).

        The attribute holds its text while any of its writers has every value (all render it
        alike): the first such writer lists it, and an index missing a value (sparse) never
        removes it from under another. When none has every value, every index writing it lists
        ``None`` (so a write that takes the item out of the last index writing it removes it,
        whichever of them it rewrites; a caller rendering several merges them by attribute).
        """
        for w in writers:
            complete = (text is not None) if w is bound else self._complete(w, values)
            if complete:
                return w is bound
        return True

    def _complete(self, bound: BoundIndex, values: Mapping[str, Any]) -> bool:
        if bound.kind == "table":
            return True  # the primary key is always written (its fields are required)
        if bound.kind == "gsi" and bound.pk.try_fill(values, self.key_version, entity=self.entity) is None:
            return False
        return bound.sk is None or bound.sk.try_fill(values, self.key_version, entity=self.entity) is not None

    def key_attributes(self, values: Mapping[str, Any]) -> dict[str, str | None]:
        """Render every key attribute of an item from its field values: the one key renderer.

        Args:
            values: field name -> value (validated).

        Returns:
            ``{attribute name: key text}`` for the table's keys and each index's keys; an index
            whose template misses a value maps its attributes to ``None`` (sparse index), as
            does every GSI attribute of the table that this entity's indexes do not write.

        Raises:
            InvalidKeyValue: a primary-key value is missing, or a value cannot be put in a key.
        """
        tmeta = self.table._meta
        out: dict[str, str | None] = {}
        for pk_attr, sk_attr in tmeta.gsis.values():
            out[pk_attr] = None
            if sk_attr and sk_attr != tmeta.sk_attribute:
                out[sk_attr] = None
        prim = self.primary
        table_pk = prim.pk.fill(values, self.key_version, entity=self.entity)
        out[tmeta.pk_attribute] = table_pk
        if prim.sk is not None and tmeta.sk_attribute:
            out[tmeta.sk_attribute] = prim.sk.fill(values, self.key_version, entity=self.entity)
        for b in self.indexes.values():
            if b.writes_key_attributes:
                out.update(self.index_key(b, values, table_pk))
        return out

    def primary_key(self, values: Mapping[str, Any], version: str | None = None) -> dict[str, Any]:
        """Render the table key (DynamoDB JSON) from field values, at ``version`` (default: ``key_version``).

        Raises:
            InvalidKeyValue: a key field is missing or cannot be put in a key.
        """
        tmeta = self.table._meta
        version = version or self.key_version
        key = {tmeta.pk_attribute: {"S": self.primary.pk.fill(values, version, entity=self.entity)}}
        if self.primary.sk is not None and tmeta.sk_attribute:
            key[tmeta.sk_attribute] = {"S": self.primary.sk.fill(values, version, entity=self.entity)}
        return key


def _template(entity: str, what: str, value: Any, delimiter: str, encoding: str = "ordered") -> KeyTemplate:
    if not isinstance(value, str) or not value:
        raise ModelError(f"{entity}.Meta.{what} must be a non-empty key template string, got {value!r}.")
    return KeyTemplate(value, delimiter, encoding)


def _bind_multi(entity: str, name: str, idx: Index, schema: Any, fields: Mapping[str, Field],
                delim: str, enc: str) -> BoundIndex:
    """Bind ``Index(name, pk=(fields...), sk=(fields...))`` to a multi-attribute GSI, validating it."""
    where = f"{entity}.Meta.indexes[{name!r}]"
    roles: dict[str, tuple[str, ...]] = {}
    for role, declared in (("pk", schema.pk), ("sk", schema.sk)):
        raw = getattr(idx, role)
        given: tuple[str, ...]
        if raw is None:
            given = ()
        elif isinstance(raw, str):
            given = (raw,)
        elif isinstance(raw, (tuple, list)) and all(isinstance(x, str) for x in raw):
            given = tuple(raw)
        else:
            raise ModelError(f"{where}.{role} must be a tuple of field names, got {raw!r}.")
        for fname in given:
            if fname not in fields:
                raise ModelError(f"{where}.{role} names {fname!r}, which is not a field of {entity} "
                                 f"(fields: {', '.join(fields) or 'none'}).")
        attrs = tuple(fields[f].attr_name for f in given)
        want = tuple(a for a, _ in declared)
        if attrs != want:
            raise ModelError(
                f"{where}.{role}: {idx.name} is a multi-attribute GSI whose {role} is the attribute(s) "
                f"{', '.join(want) or 'none'} in this order; fields {', '.join(given) or 'none'} are stored as "
                f"{', '.join(attrs) or 'none'}. Give the fields stored under those attributes, in that order.")
        for fname, (attr, typ) in zip(given, declared):
            ftype = fields[fname].attr_type
            if ftype != typ:
                raise ModelError(
                    f"{where}.{role}: field {entity}.{fname} is stored as type {ftype}, but {idx.name} declares "
                    f"its attribute {attr!r} as {typ}; a key attribute must be a string (S), number (N) or "
                    "binary (B) of the declared type.")
        roles[role] = given
    pk_fields, sk_fields = roles["pk"], roles["sk"]
    pk_tmpl = KeyTemplate(delim.join(f"{{{f}}}" for f in pk_fields), delim, enc)  # display only
    sk_tmpl = KeyTemplate(delim.join(f"{{{f}}}" for f in sk_fields), delim, enc) if sk_fields else None
    return BoundIndex(name, idx.name, "multi", pk_tmpl, fields[pk_fields[0]].attr_name, sk_tmpl,
                      fields[sk_fields[0]].attr_name if sk_fields else None, comment=idx.comment,
                      pk_fields=pk_fields, sk_fields=sk_fields,
                      pk_attrs=tuple(fields[f].attr_name for f in pk_fields),
                      sk_attrs=tuple(fields[f].attr_name for f in sk_fields))


def _text_fields(fields: Mapping[str, Field]) -> frozenset[str]:
    """Fields whose values are always strings (every type they accept is a ``str``): String, ULID."""
    return frozenset(n for n, f in fields.items()
                     if f.python_types and all(isinstance(t, type) and issubclass(t, str) for t in f.python_types))


def _renders_alike(a: KeyTemplate, b: KeyTemplate, key_version: str, text_fields: frozenset[str]) -> bool:
    """True when the two templates give one text for every value (:meth:`KeyTemplate.rendered_form`)."""
    return a.rendered_form(key_version, text_fields) == b.rendered_form(key_version, text_fields)


def _check_shared_attributes(entity: str, tmeta: Any, primary: BoundIndex, indexes: Mapping[str, BoundIndex],
                             attr_to_field: Mapping[str, str], key_version: str,
                             text_fields: frozenset[str]) -> None:
    """Refuse two key templates of one entity that write one physical attribute differently, and a
    key template that writes the attribute a field is stored as.

    One item holds one value per attribute. When an index's key attribute is also the table's
    (the inverted index: a GSI keyed on ``SK`` and ``PK``) or is shared by several indexes (one
    ``Data`` attribute overloaded across GSI1 and GSI2, as in AWS's examples), every template
    that writes it must render the same text; otherwise the last one written wins and reads
    through the others miss the item (``get()`` raises ``DoesNotExist``; a Query on the index
    returns nothing). Templates are compared as they render (:meth:`KeyTemplate.rendered_form`): two
    that give one text for every value are the same (``{b:s}`` and ``{b}`` on a String field;
    ``{version}#X`` and ``v1#X`` at key version ``v1``), two that can differ for some value are not.

    A field stored as an attribute that a template writes (an LSI declared on ``created`` with
    ``sk="L#{label}"`` on an entity with a field ``created``) is refused too: the key text and the
    field's value would overwrite each other. The table's own key and GSI attributes are refused
    for every field of the table by the entity metaclass; an LSI's sort attribute may be a field's
    (``Index("LSI1")`` sorts on that field), so it is checked here, per entity.

    Raises:
        ModelError: naming the entity, the attribute, both templates (or the template and the
            field) and where they are declared.
    """
    writers: dict[str, list[tuple[str, str, KeyTemplate]]] = {}

    def add(attr: str | None, where: str, role: str, tmpl: KeyTemplate | None) -> None:
        if attr and tmpl is not None:
            writers.setdefault(attr, []).append((where, role, tmpl))

    add(tmeta.pk_attribute, "Meta.pk", "the table's partition key", primary.pk)
    add(tmeta.sk_attribute, "Meta.sk", "the table's sort key", primary.sk)
    for name, b in indexes.items():
        if b.kind == "gsi":
            add(b.pk_attr, f"Meta.indexes[{name!r}].pk", f"the partition key of {b.index_name}", b.pk)
        if b.writes_key_attributes:
            add(b.sk_attr, f"Meta.indexes[{name!r}].sk", f"the sort key of {b.index_name}", b.sk)
    for attr, found in writers.items():
        fname = attr_to_field.get(attr)
        if fname is not None:
            where, role, tmpl = found[-1]
            lsi = next((n for n, a in tmeta.lsis.items() if a == attr), None)
            remedy = (f"Drop sk= so {lsi} sorts on {fname}'s own value, or give field {fname} another attr_name."
                      if lsi else f"Give field {fname} another attr_name.")
            raise ModelError(
                f"{entity}: {where} {tmpl.template!r} writes attribute {attr!r} ({role}), which is where field "
                f"{fname} is stored. One item holds one value per attribute: the key text and the field's value "
                f"would overwrite each other, and reads through the index would miss the item. {remedy}")
        first_where, first_role, first = found[0]
        for where, role, tmpl in found[1:]:
            if _renders_alike(tmpl, first, key_version, text_fields):
                continue
            roles = first_role if role == first_role else f"{first_role} and {role}"
            raise ModelError(
                f"{entity}: {first_where} {first.template!r} and {where} {tmpl.template!r} both write attribute "
                f"{attr!r} ({roles}) but render differently. One item holds one value per attribute: the last "
                f"written would win and reads through the other would miss the item. Give {where} the same "
                f"template as {first_where} ({first.template!r}), or key the index on attributes of its own "
                "(Table.Meta.gsis).")


def build_options(entity: str, meta: Any, fields: Mapping[str, Field]) -> Options:
    """Turn a user's ``Meta`` class into :class:`Options`, validating it.

    Raises:
        ModelError: missing or invalid table, templates, index names, placeholders
            that name no field, two fields stored as one attribute, or two templates that write
            one attribute differently (the message names the entity and what to fix).
    """
    table, entity_type, key_version, read_versions = _read_meta(entity, meta)
    primary = _bind_primary(entity, meta, table)
    _check_reserved_prefix(entity, primary, read_versions)
    attr_to_field = _stored_attributes(entity, fields)
    indexes = _bind_indexes(entity, meta, table, fields, primary, attr_to_field, key_version)
    _check_placeholders(entity, fields, [primary, *indexes.values()])
    indexes = {n: _bind_shards(entity, b, declared_index(meta, n), primary) for n, b in indexes.items()}
    primary, indexes = _render_as_read(fields, primary, indexes)
    _check_specs(entity, fields, [primary, *indexes.values()])
    _check_sharded_attributes(entity, table._meta, indexes)
    _check_shared_attributes(entity, table._meta, primary, indexes, attr_to_field, key_version, _text_fields(fields))
    version_field = _version_field(entity, fields)
    constraints = resolve_constraints(entity, getattr(meta, "constraints", None), fields, primary.fields,
                                      version_field)
    return Options(entity=entity, table=table, entity_type=entity_type, key_version=key_version,
                   read_versions=read_versions, fields=dict(fields), primary=primary, indexes=indexes,
                   version_field=version_field, constraints=constraints)


#: The partition keys of dynorm's own items in an application's table start with it (unique-constraint
#: sentinels ``dynorm#unique#...``, the migration ledger ``dynorm#migrations``): no entity's may.
RESERVED_PK_PREFIX = "dynorm#"


def _check_reserved_prefix(entity: str, primary: BoundIndex, versions: tuple[str, ...]) -> None:
    """Refuse a partition-key template whose literal start renders ``dynorm#`` (at any read version).

    Raises:
        ModelError: naming the entity and the template; its items could take the keys of sentinels or
            of the migration ledger.
    """
    for version in versions:
        start = primary.pk.prefix({}, version, entity=entity).value
        if start.startswith(RESERVED_PK_PREFIX):
            raise ModelError(
                f"{entity}.Meta.pk = {primary.pk.template!r} renders {start!r} at key version {version!r}: partition "
                f"keys starting with {RESERVED_PK_PREFIX!r} are reserved for dynorm's own items (unique-constraint "
                "sentinels, the migration ledger), which its items could overwrite. Choose another prefix.")


def _render_as_read(fields: Mapping[str, Field], primary: BoundIndex,
                    indexes: dict[str, BoundIndex]) -> tuple[BoundIndex, dict[str, BoundIndex]]:
    """Bind each template whose spec'd placeholders name a field with a :meth:`~dynorm.fields.Field.key_reader`
    to that reader (:meth:`KeyTemplate.reading`), so every key, written or queried, renders the value as it
    reads back from the item. Computed once per class; a class without such a placeholder keeps its
    templates (and its writes their cost) as they are. A template shared by two access paths stays shared."""
    readers = {n: r for n, f in fields.items() if (r := f.key_reader()) is not None}
    if not readers:
        return primary, indexes
    bound_to: dict[int, KeyTemplate] = {}

    def read(t: KeyTemplate | None) -> KeyTemplate | None:
        if t is None:
            return None
        if id(t) not in bound_to:
            bound_to[id(t)] = t.reading(readers)
        return bound_to[id(t)]

    def rebind(b: BoundIndex) -> BoundIndex:
        pk, sk = read(b.pk), read(b.sk)
        assert pk is not None
        return b if pk is b.pk and sk is b.sk else b.replace(pk=pk, sk=sk)

    return rebind(primary), {n: rebind(b) for n, b in indexes.items()}


def _read_meta(entity: str, meta: Any) -> tuple[type[TableDeclaration], str, str, tuple[str, ...]]:
    """``Meta``'s table, entity type, key version and read versions, refusing unknown options."""
    table = getattr(meta, "table", None)
    if not is_table_class(table):
        raise ModelError(f"{entity}.Meta.table must be a dynorm.Table subclass, got {table!r}.")
    delim = table._meta.delimiter
    entity_type = getattr(meta, "entity_type", entity)
    if not isinstance(entity_type, str) or not entity_type:
        raise ModelError(f"{entity}.Meta.entity_type must be a non-empty string.")
    if entity_type == SENTINEL_TYPE:
        raise ModelError(f"{entity}.Meta.entity_type {SENTINEL_TYPE!r} is reserved for unique-constraint sentinels.")
    key_version = getattr(meta, "key_version", "v1")
    if not isinstance(key_version, str) or not key_version or delim in key_version:
        raise ModelError(f"{entity}.Meta.key_version must be a non-empty string without {delim!r}.")
    read_versions = tuple(getattr(meta, "read_versions", None) or (key_version,))
    if key_version not in read_versions:
        read_versions = (key_version, *read_versions)
    unknown_meta = sorted(k for k in vars(meta) if not k.startswith("_") and k not in {
        "table", "entity_type", "key_version", "pk", "sk", "indexes", "read_versions", "constraints"})
    if unknown_meta:
        raise ModelError(f"{entity}.Meta has unknown option(s): {', '.join(unknown_meta)}.")
    return table, entity_type, key_version, read_versions


def _bind_primary(entity: str, meta: Any, table: type[TableDeclaration]) -> BoundIndex:
    """The table's own key of this entity: ``Meta.pk`` and ``Meta.sk`` (only when the table has a sort key)."""
    tmeta = table._meta
    delim, enc = tmeta.delimiter, tmeta.key_encoding
    pk = _template(entity, "pk", getattr(meta, "pk", None), delim, enc)
    sk_raw = getattr(meta, "sk", None)
    if tmeta.sk_attribute is None:
        if sk_raw is not None:
            raise ModelError(f"{entity}.Meta.sk is set but table {table.__name__} has no sort key.")
        sk = None
    else:
        sk = _template(entity, "sk", sk_raw, delim, enc)
    return BoundIndex(PRIMARY, None, "table", pk, tmeta.pk_attribute, sk, tmeta.sk_attribute)


def _stored_attributes(entity: str, fields: Mapping[str, Field]) -> dict[str, str]:
    """Attribute name -> the field stored there, refusing two fields stored as one attribute."""
    attr_to_field: dict[str, str] = {}
    for fname, f in fields.items():
        attr = f.attr_name or fname  # a field not yet bound to a class (set by __set_name__) is stored as its name
        other = attr_to_field.setdefault(attr, fname)
        if other != fname:
            raise ModelError(
                f"{entity}: fields {other} and {fname} are both stored as attribute {attr!r}; an item holds "
                f"one value per attribute, so one of the two values would be lost. Give {fname} (or {other}) "
                "another attr_name.")
    return attr_to_field


def _bind_indexes(entity: str, meta: Any, table: type[TableDeclaration], fields: Mapping[str, Field],
                  primary: BoundIndex, attr_to_field: Mapping[str, str], key_version: str) -> dict[str, BoundIndex]:
    """Bind each of ``Meta.indexes`` (access-path name -> :class:`Index`) to the table's index it names."""
    indexes: dict[str, BoundIndex] = {}
    declared = getattr(meta, "indexes", None) or {}
    if not isinstance(declared, Mapping):
        raise ModelError(f"{entity}.Meta.indexes must be a dict of name -> Index(...).")
    for name, idx in declared.items():
        if not isinstance(idx, Index):
            raise ModelError(f"{entity}.Meta.indexes[{name!r}] must be a dynorm.Index, got {idx!r}.")
        if not name.isidentifier() or name == PRIMARY:
            raise ModelError(f"{entity}.Meta.indexes: {name!r} is not a usable access-path name.")
        indexes[name] = _bind_index(entity, name, idx, table, fields, primary, attr_to_field, key_version)
    return indexes


def _bind_index(entity: str, name: str, idx: Index, table: type[TableDeclaration], fields: Mapping[str, Field],
                primary: BoundIndex, attr_to_field: Mapping[str, str], key_version: str) -> BoundIndex:
    """Bind one ``Meta.indexes[name]`` to the multi-attribute GSI, GSI or LSI ``idx.name`` of the table."""
    tmeta = table._meta
    delim, enc = tmeta.delimiter, tmeta.key_encoding
    if idx.name in tmeta.multi_gsis:
        return _bind_multi(entity, name, idx, tmeta.multi_gsis[idx.name], fields, delim, enc)
    if isinstance(idx.pk, tuple) or isinstance(idx.sk, tuple):
        raise ModelError(f"{entity}.Meta.indexes[{name!r}]: pk=/sk= tuples of fields need a multi-attribute "
                         f"GSI, and {idx.name!r} is not one on table {table.__name__} (declare it in "
                         "Table.Meta.gsis as {'pk': {attribute: type}, 'sk': {attribute: type}}).")
    if idx.name in tmeta.gsis:
        return _bind_gsi(entity, name, idx, tmeta, primary.sk, key_version, _text_fields(fields))
    if idx.name in tmeta.lsis:
        return _bind_lsi(entity, name, idx, tmeta, primary.pk, attr_to_field)
    known = ", ".join([*tmeta.index_names, *tmeta.lsis]) or "none"
    raise ModelError(
        f"{entity}.Meta.indexes[{name!r}] uses index {idx.name!r}, which table "
        f"{table.__name__} does not declare (its indexes: {known}).")


def _bind_gsi(entity: str, name: str, idx: Index, tmeta: Any, sk: KeyTemplate | None, key_version: str,
              text_fields: frozenset[str]) -> BoundIndex:
    """Bind ``Index(gsi, pk=template, sk=template)``; ``sk`` is the entity's table sort key."""
    delim, enc = tmeta.delimiter, tmeta.key_encoding
    pk_attr, sk_attr = tmeta.gsis[idx.name]
    ipk = _template(entity, f"indexes[{name!r}].pk", idx.pk, delim, enc)
    if sk_attr is None:
        isk = None
        if idx.sk is not None:
            raise ModelError(f"{entity}.Meta.indexes[{name!r}]: {idx.name} has no sort key; drop sk=.")
    elif sk_attr == tmeta.sk_attribute:
        # the index sorts on the table's own sort key: the entity's sk is what is stored there
        # (a different sk= is refused by _check_shared_attributes, naming both templates)
        isk = sk
        if idx.sk is not None:
            given = _template(entity, f"indexes[{name!r}].sk", idx.sk, delim, enc)
            if sk is None or not _renders_alike(given, sk, key_version, text_fields):
                isk = given
    else:
        isk = _template(entity, f"indexes[{name!r}].sk", idx.sk, delim, enc)
    return BoundIndex(name, idx.name, "gsi", ipk, pk_attr, isk, sk_attr, comment=idx.comment)


def _bind_lsi(entity: str, name: str, idx: Index, tmeta: Any, pk: KeyTemplate,
              attr_to_field: Mapping[str, str]) -> BoundIndex:
    """Bind ``Index(lsi)`` (sorting on a field's own attribute) or ``Index(lsi, sk=template)``."""
    if idx.pk is not None:
        raise ModelError(f"{entity}.Meta.indexes[{name!r}]: {idx.name} is a local secondary "
                         "index and shares the table's partition key; drop pk=.")
    sort_attr = tmeta.lsis[idx.name]
    if idx.sk is None:
        sort_field = attr_to_field.get(sort_attr)
        if sort_field is None:
            raise ModelError(
                f"{entity}.Meta.indexes[{name!r}]: {idx.name} sorts on attribute {sort_attr!r}; "
                f"declare a field stored as {sort_attr!r} or give sk= a template.")
        return BoundIndex(name, idx.name, "lsi", pk, tmeta.pk_attribute, None, sort_attr,
                          sort_field=sort_field, comment=idx.comment)
    isk = _template(entity, f"indexes[{name!r}].sk", idx.sk, tmeta.delimiter, tmeta.key_encoding)
    return BoundIndex(name, idx.name, "lsi", pk, tmeta.pk_attribute, isk, sort_attr, comment=idx.comment)


def declared_index(meta: Any, name: str) -> Index:
    """The :class:`Index` the user declared as ``Meta.indexes[name]``."""
    return meta.indexes[name]  # type: ignore[no-any-return]


def _bind_shards(entity: str, bound: BoundIndex, idx: Index, primary: BoundIndex) -> BoundIndex:
    """Add ``Index(shards=, shard_by=)`` to a bound index, refusing what would corrupt keys."""
    where = f"{entity}.Meta.indexes[{bound.name!r}]"
    if idx.shards is None:
        if idx.shard_by:
            raise ModelError(f"{where}: shard_by= without shards=; give shards=N (the number of buckets).")
        return bound
    n = idx.shards
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 1000:
        raise ModelError(f"{where}: shards must be an int from 2 to 1000 (the number of write-sharding "
                         f"buckets), got {n!r}.")
    if bound.kind != "gsi":
        what = ("a local secondary index (it shares the table's partition key)" if bound.kind == "lsi"
                else "a multi-attribute GSI (its keys are the fields' own attributes)")
        raise ModelError(f"{where}: shards= needs a GSI with a partition-key template; {bound.index_name} is {what}.")
    by = tuple(idx.shard_by or primary.fields)
    bad = [f for f in by if f not in primary.fields]
    if bad or not by or len(set(by)) != len(by):
        raise ModelError(f"{where}: shard_by must name primary-key fields of {entity} "
                         f"({', '.join(primary.fields)}), each once; got {', '.join(map(str, by)) or 'none'}. A bucket "
                         "computed from another field would move the item whenever that field changes.")
    return bound.replace(shards=n, shard_by=by)


def _check_sharded_attributes(entity: str, tmeta: Any, indexes: Mapping[str, BoundIndex]) -> None:
    """Refuse a sharded index whose partition-key attribute another key of the entity writes too.

    The bucket is appended to that attribute's text: on the table's own key (an inverted index on
    ``SK``/``PK``) or on an attribute another index writes, it would change the other key.
    """
    for bound in indexes.values():
        if not bound.shards:
            continue
        others = {tmeta.pk_attribute, tmeta.sk_attribute}
        others |= {a for b in indexes.values() if b is not bound and b.writes_key_attributes
                   for a in (b.pk_attr if b.kind == "gsi" else None, b.sk_attr) if a}
        others |= {bound.sk_attr} if bound.sk_attr else set()
        if bound.pk_attr in others:
            raise ModelError(
                f"{entity}.Meta.indexes[{bound.name!r}]: {bound.index_name}'s partition key {bound.pk_attr!r} is "
                "also written by another key of this entity (the table's key or another index), and the "
                "write-sharding bucket appended to it would change that key too; shard a GSI whose partition-key "
                "attribute is its own.")


def _check_placeholders(entity: str, fields: Mapping[str, Field], bounds: list[BoundIndex]) -> None:
    """Refuse a template placeholder that names no field, or a binary field (key text holds no bytes)."""
    for bound in bounds:
        for tmpl, what in ((bound.pk, "pk"), (bound.sk, "sk")):
            if tmpl is None:
                continue
            for ph in tmpl.fields:
                if ph not in fields:
                    where = "Meta" if bound.name == PRIMARY else f"Meta.indexes[{bound.name!r}]"
                    raise ModelError(
                        f"{entity}.{where}.{what} template {tmpl.template!r} uses {{{ph}}}, which is not "
                        f"a field of {entity} (fields: {', '.join(fields) or 'none'}; or {{{VERSION}}}).")
                if fields[ph].attr_type == "B" and bound.kind != "multi":
                    where = "Meta" if bound.name == PRIMARY else f"Meta.indexes[{bound.name!r}]"
                    raise ModelError(
                        f"{entity}.{where}.{what} template {tmpl.template!r} uses {{{ph}}}, a binary field: key "
                        "text cannot hold bytes. Key a binary field with a multi-attribute GSI (its attribute "
                        "declared as 'B'), or store it as text (hex) in a String field.")


#: two values of each type a field may hold, unlike in every part a spec can show (year to
#: microsecond, leading digit, first letter), to try a placeholder's format spec on (:func:`_check_specs`)
_SPEC_SAMPLES: dict[type, tuple[Any, Any]] = {
    str: ("a", "b"), int: (1, 2), float: (1.5, 7.25),
    decimal.Decimal: (decimal.Decimal("1.5"), decimal.Decimal("7.25")),
    _dt.datetime: (_dt.datetime(2000, 1, 2, 3, 4, 5, tzinfo=_dt.timezone.utc),
                   _dt.datetime(2011, 12, 13, 14, 15, 16, 123456, tzinfo=_dt.timezone.utc)),
    _dt.date: (_dt.date(2000, 1, 2), _dt.date(2011, 12, 13)),
}


def _check_specs(entity: str, fields: Mapping[str, Field], bounds: list[BoundIndex]) -> None:
    """Refuse a placeholder whose format spec renders no value its field can hold (``{price:06d}`` of a
    ``fields.Decimal``, ``{name:.2f}`` of a ``fields.String``: every write would be refused), or
    renders one text for every value (``{created:06d}`` of a ``fields.DateTime`` is the strftime
    pattern ``06d``, which has no directive: every item would get one key, and overwrite the others).

    The spec is tried, as keys render it, on two unlike samples of each type the field accepts
    (validated by the field: a ``fields.Decimal`` holds Decimals); one type that renders is enough,
    as a ``fields.Number`` may hold ints for ``{n:06d}``. A field of types without samples is not
    checked.

    Raises:
        ModelError: naming the entity, the template, the placeholder, the field's type and what the
            spec does.
    """
    for bound in bounds:
        for tmpl, what in ((bound.pk, "pk"), (bound.sk, "sk")):
            if tmpl is None:
                continue
            for _, name, spec in tmpl.tokens:
                if not spec or name is None or name not in fields:
                    continue
                fld = fields[name]
                where = "Meta" if bound.name == PRIMARY else f"Meta.indexes[{bound.name!r}]"
                problem = _spec_problem(tmpl, entity, name, spec, fld, bound.name == PRIMARY)
                if problem is not None:
                    raise ModelError(
                        f"{entity}.{where}.{what} template {tmpl.template!r}: {{{name}:{spec}}} {problem}: give "
                        f"{{{name}}} a format spec that renders {fld.type_label} (docs/modelling.md, Key "
                        "templates), or none.")


def _spec_problem(tmpl: KeyTemplate, entity: str, name: str, spec: str, fld: Field, primary: bool) -> str | None:
    """What is wrong with ``spec`` for the values of ``fld`` (:func:`_check_specs`), or ``None``."""
    refused: list[str] = []
    for kind in fld.python_types:
        if kind not in _SPEC_SAMPLES:
            continue
        try:
            values = [fld.validate(v, entity) for v in _SPEC_SAMPLES[kind]]
        except ValidationError:  # not values this field holds
            continue
        try:
            texts = {tmpl.encode(name, v, entity=entity, spec=spec) for v in values}
        except InvalidKeyValue as exc:
            refused.append(f"{values[0]!r}: {str(exc.__cause__ or exc).rstrip('.')}")
            continue
        if len(texts) > 1:
            return None
        return (f"renders {texts.pop()!r} for both {values[0]!r} and {values[1]!r}, whatever the value: every item "
                "would get one key text there" + (", and items with one primary key overwrite one another" if primary
                                                  else ", and the index could not tell them apart by it"))
    if refused:
        return (f"renders no value {entity}.{name} can hold ({fld.type_label}): {refused[0]}. Every write would "
                "be refused")
    return None


def _version_field(entity: str, fields: Mapping[str, Field]) -> str | None:
    """The ``fields.Version()`` field's name (``None``: none); more than one is refused."""
    version_fields = [n for n, f in fields.items() if f.is_version]
    if len(version_fields) > 1:
        raise ModelError(f"{entity} declares more than one fields.Version(): {', '.join(version_fields)}.")
    return version_fields[0] if version_fields else None
