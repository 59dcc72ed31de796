"""The resolved ``Meta`` of a ``Table``, and the protocol of a table class the lower layers use.

``TableOptions`` (with ``MultiKeySchema`` for multi-attribute GSIs) is plain data built and
validated from a user's ``Table.Meta`` by :func:`build_table_options`. It lives below
:mod:`dynorm.tables` so the pure layers (``options``, ``schema``, ``checks``) can read a table's
declaration without importing the ``Table`` metaclass; :class:`TableDeclaration` is what they may use
of a table class. ``dynorm.tables`` re-exports every public name.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Mapping, Protocol, TypeGuard

from ._value import FrozenValue, Value
from .exceptions import ModelError
from .keys import check_delimiter

__all__ = ["TableOptions", "MultiKeySchema", "KEY_TYPES", "REVISION_ATTRIBUTE", "STREAM_VIEW_TYPES", "TableDeclaration",
           "build_table_options", "check_stream", "copied_from_attribute", "copied_from_value", "is_table_class",
           "parse_multi_key"]

#: Attribute types a key attribute can have (DynamoDB: string, number, binary).
KEY_TYPES = ("S", "N", "B")


class MultiKeySchema(FrozenValue):
    """The key schema of a multi-attribute GSI: ``(attribute, type)`` pairs, in key order.

    Attributes:
        pk: 1-4 partition-key attributes (each ``(name, "S" | "N" | "B")``), all compared by equality.
        sk: 0-4 sort-key attributes; a Query gives a left-to-right prefix of them.
    """

    pk: tuple[tuple[str, str], ...]
    sk: tuple[tuple[str, str], ...]

    def __init__(self, pk: tuple[tuple[str, str], ...], sk: tuple[tuple[str, str], ...] = ()) -> None:
        self.__dict__.update(pk=pk, sk=sk)

    @property
    def attributes(self) -> tuple[str, ...]:
        """Every key attribute name, partition first."""
        return tuple(a for a, _ in (*self.pk, *self.sk))

    def definition(self) -> dict[str, dict[str, str]]:
        """The plain-data form used in ``Table.Meta.gsis`` and migration files."""
        return {"pk": dict(self.pk), "sk": dict(self.sk)}


def parse_multi_key(where: str, value: Any) -> MultiKeySchema:
    """Validate ``{"pk": {attr: type, ...}, "sk": {attr: type, ...}}`` into a :class:`MultiKeySchema`.

    Raises:
        ModelError: not that shape, a type other than S/N/B, 0 or more than 4 partition
            attributes, more than 4 sort attributes, or an attribute used twice.
    """
    if not isinstance(value, dict) or "pk" not in value or set(value) - {"pk", "sk"}:
        raise ModelError(f"{where} must be {{'pk': {{attribute: type, ...}}, 'sk': {{attribute: type, ...}}}} "
                         f"for a multi-attribute key, got {value!r}.")
    parts: list[tuple[tuple[str, str], ...]] = []
    for role in ("pk", "sk"):
        raw = value.get(role) or {}
        if isinstance(raw, (list, tuple)):
            raw = dict(raw)
        if not isinstance(raw, dict):
            raise ModelError(f"{where}[{role!r}] must map attribute names to types (S, N or B), got {raw!r}.")
        pairs = []
        for attr, typ in raw.items():
            if not isinstance(attr, str) or not attr:
                raise ModelError(f"{where}[{role!r}]: attribute names must be non-empty strings, got {attr!r}.")
            if typ not in KEY_TYPES:
                raise ModelError(f"{where}[{role!r}][{attr!r}]: key attribute type must be 'S', 'N' or 'B', "
                                 f"got {typ!r}.")
            pairs.append((attr, typ))
        low = 1 if role == "pk" else 0
        if not low <= len(pairs) <= 4:
            raise ModelError(f"{where}[{role!r}]: a multi-attribute {role} has {low} to 4 attributes, "
                             f"got {len(pairs)}.")
        parts.append(tuple(pairs))
    names = [a for a, _ in (*parts[0], *parts[1])]
    dup = sorted({a for a in names if names.count(a) > 1})
    if dup:
        raise ModelError(f"{where}: attribute(s) {', '.join(dup)} used twice in one key.")
    return MultiKeySchema(parts[0], parts[1])

#: DynamoDB's rule for index names (CreateTable refuses any other name).
_INDEX_NAME = re.compile(r"[A-Za-z0-9_.\-]{3,255}")

_TABLE_META_KEYS = {
    "table_name", "gsi_count", "gsis", "lsis", "ttl_attribute", "pk_attribute", "sk_attribute",
    "type_attribute", "delimiter", "billing_mode", "key_encoding", "revision_attribute", "stream",
}

#: DynamoDB's ``StreamViewType`` values: what each stream record carries besides the keys.
STREAM_VIEW_TYPES = ("NEW_AND_OLD_IMAGES", "NEW_IMAGE", "OLD_IMAGE", "KEYS_ONLY")

#: The attribute every dynorm write sets to a fresh random token (see docs/writing.md,
#: "What every write guarantees"): it makes a retried request detectable, and it is the item's
#: revision (a one-attribute "unchanged since read" condition). Reserved: no field may use it.
REVISION_ATTRIBUTE = "_dynorm_rev"


def copied_from_attribute(revision_attribute: str) -> str:
    """The attribute a copy-mode rekey stores on each copy: the revision token of the item it was
    copied from (``"_dynorm_rev_src"`` for the default revision attribute). Writes that update the
    copy keep it, so ``DeleteVersion`` can tell an old item that is unchanged since it was copied
    (its token equals the copy's ``_src``) from one written after. Reserved: no field may use it.

    Args:
        revision_attribute: ``Table.Meta.revision_attribute``.
    """
    return f"{revision_attribute}_src"


def copied_from_value(source: Mapping[str, Any], revision_attribute: str, mark: str) -> dict[str, Any]:
    """The :func:`copied_from_attribute` value of a copy of item ``source`` (DynamoDB JSON):
    ``{"SS": [...]}`` holding ``mark`` (what identifies ``source``'s revision, its token for an item
    with one) and every revision ``source`` itself records it was copied from, sorted."""
    held = (source.get(copied_from_attribute(revision_attribute)) or {}).get("SS", [])
    return {"SS": sorted({mark, *held})}


class TableOptions(Value):
    """The resolved ``Meta`` of a :class:`Table` (``Table._meta``).

    Attributes:
        table_name: the logical name; the physical name adds ``settings.table_prefix``.
        pk_attribute, sk_attribute: the table's key attribute names (``sk_attribute`` may be ``None``).
        type_attribute: the entity-type attribute (``entityType``).
        gsis: index name -> (partition attribute, sort attribute or ``None``), in order (GSIs
            whose keys are single key-text attributes written from templates).
        multi_gsis: index name -> :class:`MultiKeySchema` (GSIs whose partition and sort keys
            are up to four plain, typed attributes each; see ``docs/modelling.md``).
        lsis: index name -> sort attribute.
        ttl_attribute: the TTL attribute name, or ``None``.
        delimiter: the key delimiter escaped inside values.
        key_encoding: ``"ordered"`` (default: order-preserving escapes, canonical numbers, UTC
            datetimes) or ``"percent"`` (the encoding of dynorm before 0.2, for existing tables);
            see :mod:`dynorm.keys`.
        revision_attribute: the attribute every dynorm write sets to a fresh token
            (default ``"_dynorm_rev"``); reserved, no field may be stored under it.
        stream: the DynamoDB Streams view type of the table's stream (one of
            :data:`STREAM_VIEW_TYPES`), or ``None`` for no stream (see ``docs/streams.md``).
    """

    table_name: str
    pk_attribute: str
    sk_attribute: str | None
    type_attribute: str
    gsis: dict[str, tuple[str, str | None]]
    lsis: dict[str, str]
    ttl_attribute: str | None
    delimiter: str
    billing_mode: str
    key_encoding: str
    revision_attribute: str
    multi_gsis: dict[str, MultiKeySchema]
    stream: str | None

    def __init__(self, table_name: str, pk_attribute: str = "PK", sk_attribute: str | None = "SK",
                 type_attribute: str = "entityType", gsis: dict[str, tuple[str, str | None]] | None = None,
                 lsis: dict[str, str] | None = None, ttl_attribute: str | None = None, delimiter: str = "#",
                 billing_mode: str = "PAY_PER_REQUEST", key_encoding: str = "ordered",
                 revision_attribute: str = REVISION_ATTRIBUTE, multi_gsis: dict[str, MultiKeySchema] | None = None,
                 stream: str | None = None) -> None:
        self.table_name = table_name
        self.pk_attribute = pk_attribute
        self.sk_attribute = sk_attribute
        self.type_attribute = type_attribute
        self.gsis = {} if gsis is None else gsis
        self.lsis = {} if lsis is None else lsis
        self.ttl_attribute = ttl_attribute
        self.delimiter = delimiter
        self.billing_mode = billing_mode
        self.key_encoding = key_encoding
        self.revision_attribute = revision_attribute
        self.multi_gsis = {} if multi_gsis is None else multi_gsis
        self.stream = stream

    @property
    def index_names(self) -> list[str]:
        """Every GSI name, template GSIs first, then multi-attribute GSIs."""
        return [*self.gsis, *self.multi_gsis]

    @property
    def key_attributes(self) -> set[str]:
        """Every attribute name the table uses for keys and the entity type."""
        out = {self.pk_attribute, self.type_attribute}
        if self.sk_attribute:
            out.add(self.sk_attribute)
        for pk, sk in self.gsis.values():
            out.add(pk)
            if sk:
                out.add(sk)
        return out


def _check_attribute_types(name: str, opts: TableOptions) -> None:
    """Refuse a key attribute declared with two types (a table has one AttributeDefinition per name).

    The table's own keys and every template GSI's key attributes hold key text (S); each
    multi-attribute GSI declares a type per attribute. CreateTable would keep one of two
    conflicting types, and every write of the other would be refused.

    Raises:
        ModelError: naming the attribute, both types and the two indexes declaring them.
    """
    seen: dict[str, tuple[str, str]] = {}  # attribute -> (type, where)
    text = [(opts.pk_attribute, "the table's partition key")]
    if opts.sk_attribute:
        text.append((opts.sk_attribute, "the table's sort key"))
    for gname, (pk_attr, sk_attr) in opts.gsis.items():
        text += [(a, f"template GSI {gname}") for a in (pk_attr, sk_attr) if a]
    declared = [(a, "S", where) for a, where in text]
    for gname, multi in opts.multi_gsis.items():
        declared += [(a, t, f"multi-attribute GSI {gname}") for a, t in (*multi.pk, *multi.sk)]
    for attr, typ, where in declared:
        if attr in seen and seen[attr][0] != typ:
            t0, w0 = seen[attr]
            raise ModelError(
                f"{name}.Meta.gsis: attribute {attr!r} is declared as {t0} by {w0} and as {typ} by {where}; a table "
                "has one type per attribute name (DynamoDB's AttributeDefinitions), so items could not satisfy "
                f"both. Store one of them under another attribute (a field's attr_name), or give both the same type.")
        seen.setdefault(attr, (typ, where))


def _key_roles(opts: TableOptions) -> dict[str, str]:
    """Every attribute the table's own keys and indexes use -> what uses it first (for messages)."""
    roles: dict[str, str] = {}
    uses = [(opts.pk_attribute, "the table's partition key"), (opts.sk_attribute, "the table's sort key")]
    for gname, (pk_attr, sk_attr) in opts.gsis.items():
        uses += [(pk_attr, f"the partition key of {gname}"), (sk_attr, f"the sort key of {gname}")]
    for gname, multi in opts.multi_gsis.items():
        uses += [(a, f"a key attribute of {gname}") for a, _ in (*multi.pk, *multi.sk)]
    uses += [(attr, f"the sort key of {lname}") for lname, attr in opts.lsis.items()]
    for attr, role in uses:
        if attr:
            roles.setdefault(attr, role)
    return roles


def _check_own_attribute(name: str, opts: TableOptions, option: str, holds: str) -> None:
    """Refuse ``Meta.type_attribute``/``Meta.revision_attribute`` naming an attribute a key uses.

    The attribute holds ``holds`` on every item; a key attribute of the same name holds key text,
    and the last one written wins (an item whose type is overwritten by key text is never read
    back: ``get()`` raises ``DoesNotExist``).

    Raises:
        ModelError: naming the table, the option, the attribute and the key that uses it.
    """
    attr = getattr(opts, option)
    if not isinstance(attr, str) or not attr:
        raise ModelError(f"{name}.Meta.{option} must be a non-empty attribute name, got {attr!r}.")
    roles = {a: (role, "the key text") for a, role in _key_roles(opts).items()}
    if option == "revision_attribute":
        roles.setdefault(opts.type_attribute, ("Meta.type_attribute", "the entity type"))
    if attr in roles:
        role, other = roles[attr]
        raise ModelError(
            f"{name}.Meta.{option} is {attr!r}, which is also {role}; an item holds one value per attribute, so "
            f"{other} and {holds} would overwrite each other. Give Meta.{option} a name no key uses.")


def build_table_options(name: str, meta: Any) -> TableOptions:
    """Turn a user's ``Table.Meta`` into :class:`TableOptions`, validating it (pure).

    Raises:
        ModelError: no ``Meta`` or ``table_name``, an unknown option, a malformed GSI or LSI
            declaration, an index name DynamoDB refuses, one attribute declared with two types,
            or the type/revision attribute naming a key attribute (the message names the table).
    """
    if meta is None:
        raise ModelError(f"Table {name} needs a Meta class with table_name.")
    unknown = sorted(k for k in vars(meta) if not k.startswith("_") and k not in _TABLE_META_KEYS)
    if unknown:
        raise ModelError(f"{name}.Meta has unknown option(s): {', '.join(unknown)}; "
                         f"allowed: {', '.join(sorted(_TABLE_META_KEYS))}.")
    table_name = getattr(meta, "table_name", None)
    if not isinstance(table_name, str) or not table_name:
        raise ModelError(f"{name}.Meta.table_name must be a non-empty string.")
    opts = TableOptions(table_name=table_name)
    for key in ("pk_attribute", "type_attribute", "delimiter", "billing_mode", "key_encoding",
                "revision_attribute"):
        if hasattr(meta, key):
            setattr(opts, key, getattr(meta, key))
    if hasattr(meta, "sk_attribute"):
        opts.sk_attribute = meta.sk_attribute
    opts.ttl_attribute = getattr(meta, "ttl_attribute", None)
    opts.stream = check_stream(f"{name}.Meta.stream", getattr(meta, "stream", None))
    gsis = getattr(meta, "gsis", None)
    count = getattr(meta, "gsi_count", None)
    if gsis is not None and count is not None:
        raise ModelError(f"{name}.Meta: give either gsi_count or gsis, not both.")
    if count is not None:
        if not isinstance(count, int) or not 0 <= count <= 20:
            raise ModelError(f"{name}.Meta.gsi_count must be an integer from 0 to 20.")
        opts.gsis = {f"GSI{i}": (f"GSI{i}PK", f"GSI{i}SK") for i in range(1, count + 1)}
    elif gsis:
        for gname, attrs in gsis.items():
            if isinstance(attrs, (dict, MultiKeySchema)):
                multi = attrs if isinstance(attrs, MultiKeySchema) else parse_multi_key(
                    f"{name}.Meta.gsis[{gname!r}]", attrs)
                reserved = {opts.pk_attribute, opts.sk_attribute, opts.type_attribute}
                taken = sorted(set(multi.attributes) & reserved)
                if taken:
                    raise ModelError(f"{name}.Meta.gsis[{gname!r}]: a multi-attribute key uses entity fields' own "
                                     f"attributes, not the table's {', '.join(taken)}.")
                opts.multi_gsis[gname] = multi
                continue
            if isinstance(attrs, str):
                attrs = (attrs, None)
            if not (isinstance(attrs, (tuple, list)) and len(attrs) == 2 and isinstance(attrs[0], str)):
                raise ModelError(f"{name}.Meta.gsis[{gname!r}] must be (pk_attribute, sk_attribute), or "
                                 "{'pk': {attribute: type}, 'sk': {attribute: type}} for a multi-attribute key.")
            if attrs[0] == opts.pk_attribute:
                raise ModelError(f"{name}.Meta.gsis[{gname!r}]: a GSI cannot reuse the table's partition key.")
            opts.gsis[gname] = (attrs[0], attrs[1])
    _check_attribute_types(name, opts)
    lsis = getattr(meta, "lsis", None) or {}
    if lsis and opts.sk_attribute is None:
        raise ModelError(f"{name}.Meta.lsis needs a table with a sort key.")
    if len(lsis) > 5:
        raise ModelError(f"{name}.Meta.lsis: DynamoDB allows at most 5 local secondary indexes.")
    opts.lsis = dict(lsis)
    if not isinstance(opts.delimiter, str) or not opts.delimiter or "%" in opts.delimiter:
        raise ModelError(f"{name}.Meta.delimiter must be a non-empty string without '%'.")
    try:
        check_delimiter(opts.delimiter, opts.key_encoding)
    except ModelError as exc:
        raise ModelError(f"{name}.Meta: {exc}") from None
    _check_own_attribute(name, opts, "type_attribute", "the entity type")
    _check_own_attribute(name, opts, "revision_attribute", "the revision token every write sets")
    if len(opts.gsis) + len(opts.multi_gsis) > 20:
        raise ModelError(f"{name}.Meta.gsis: DynamoDB allows at most 20 global secondary indexes.")
    for iname in [*opts.index_names, *opts.lsis]:
        if not (isinstance(iname, str) and _INDEX_NAME.fullmatch(iname)):
            kind = "lsis" if iname in opts.lsis else "gsis"
            raise ModelError(
                f"{name}.Meta.{kind}: index name {iname!r} breaks DynamoDB's naming rule (3 to 255 characters, "
                "each a letter, digit, '_', '-' or '.'); CreateTable would refuse it. Rename the index.")
    clash = set(opts.index_names) & set(opts.lsis)
    if clash:
        raise ModelError(f"{name}.Meta: index name(s) {', '.join(sorted(clash))} used twice.")
    return opts


def check_stream(where: str, value: Any) -> str | None:
    """Return ``value`` if it is a DynamoDB ``StreamViewType`` or ``None`` (no stream).

    Raises:
        ModelError: anything else, naming ``where``, the value and the allowed ones.
    """
    if value is None or value in STREAM_VIEW_TYPES:
        return value
    raise ModelError(f"{where} must be one of {', '.join(repr(v) for v in STREAM_VIEW_TYPES)} (DynamoDB's "
                     f"StreamViewType), or None for no stream; got {value!r}. NEW_AND_OLD_IMAGES lets "
                     "dynorm.streams report old and new instances, changed fields and moves.")


class TableDeclaration(Protocol):
    """What the layers below :mod:`dynorm.tables` use of a ``Table`` subclass (as ``type[TableDeclaration]``).

    ``_entities`` maps entity type -> entity class, typed ``Any`` here: the entity protocol
    (:class:`dynorm._protocols.EntityLike`) sits above :mod:`dynorm.options` and would pull a
    circle back into this module. :class:`dynorm._protocols.TableLike` types them.
    """

    _meta: ClassVar[TableOptions]
    _entities: ClassVar[dict[str, Any]]

    @classmethod
    def table_name(cls) -> str:
        """The physical table name (``settings.table_prefix`` + ``Meta.table_name``)."""
        ...


def is_table_class(obj: object) -> TypeGuard[type[TableDeclaration]]:
    """True when ``obj`` is a declared ``Table`` subclass: a class its metaclass gave ``TableOptions``.

    The base ``Table`` has none, nor has an entity class (its ``_meta`` is an entity's ``Options``).
    """
    return isinstance(obj, type) and isinstance(getattr(obj, "_meta", None), TableOptions)
