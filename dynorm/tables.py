"""``Table``: one physical DynamoDB table shared by many entity types.

A ``Table`` subclass declares the physical table (name, generic key attribute names, GSIs,
LSIs, TTL). dynorm builds from it a PynamoDB base model holding the key attributes and the
entity-type discriminator; every entity of the table is a subclass of that model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pynamodb.attributes import DiscriminatorAttribute, UnicodeAttribute
from pynamodb.models import Model

from . import conf, registry
from .exceptions import ModelError, TableDoesNotExist
from .keys import check_delimiter

if TYPE_CHECKING:  # pragma: no cover
    from .models import Entity

__all__ = ["Table", "TableOptions", "MultiKeySchema", "KEY_TYPES", "copied_from_attribute"]

#: Attribute types a key attribute can have (DynamoDB: string, number, binary).
KEY_TYPES = ("S", "N", "B")


@dataclass(frozen=True)
class MultiKeySchema:
    """The key schema of a multi-attribute GSI: ``(attribute, type)`` pairs, in key order.

    Attributes:
        pk: 1-4 partition-key attributes (each ``(name, "S" | "N" | "B")``), all compared by equality.
        sk: 0-4 sort-key attributes; a Query gives a left-to-right prefix of them.
    """

    pk: tuple[tuple[str, str], ...]
    sk: tuple[tuple[str, str], ...] = ()

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
    "type_attribute", "delimiter", "billing_mode", "key_encoding", "revision_attribute",
}

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


@dataclass
class TableOptions:
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
    """

    table_name: str
    pk_attribute: str = "PK"
    sk_attribute: str | None = "SK"
    type_attribute: str = "entityType"
    gsis: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    lsis: dict[str, str] = field(default_factory=dict)
    ttl_attribute: str | None = None
    delimiter: str = "#"
    billing_mode: str = "PAY_PER_REQUEST"
    key_encoding: str = "ordered"
    revision_attribute: str = REVISION_ATTRIBUTE
    multi_gsis: dict[str, MultiKeySchema] = field(default_factory=dict)

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


def _build_table_options(name: str, meta: Any) -> TableOptions:
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


class _PynamoMeta:
    """PynamoDB ``Meta`` of a table's base model; host/region/name are set from settings."""

    table_name: str
    region: str | None = None
    host: str | None = None
    aws_access_key_id: str | None = None
    aws_secret_access_key: str | None = None
    aws_session_token: str | None = None


def _make_base_model(table_cls: type, opts: TableOptions) -> type[Model]:
    meta = type("Meta", (_PynamoMeta,), {"table_name": opts.table_name})
    ns: dict[str, Any] = {
        "__module__": table_cls.__module__,
        "__qualname__": f"{table_cls.__qualname__}.Model",
        "Meta": meta,
        "_dynorm_pk": UnicodeAttribute(hash_key=True, attr_name=opts.pk_attribute),
        "_dynorm_type": DiscriminatorAttribute(attr_name=opts.type_attribute),
    }
    if opts.sk_attribute:
        ns["_dynorm_sk"] = UnicodeAttribute(range_key=True, attr_name=opts.sk_attribute)
    seen = {opts.pk_attribute, opts.sk_attribute}
    for gname, (pk_attr, sk_attr) in opts.gsis.items():
        for suffix, attr in (("pk", pk_attr), ("sk", sk_attr)):
            if attr and attr not in seen:
                seen.add(attr)
                ns[f"_dynorm_{gname.lower()}_{suffix}"] = UnicodeAttribute(null=True, attr_name=attr)
    return type(f"{table_cls.__name__}Model", (Model,), ns)


class TableMeta(type):
    """Builds ``_meta`` and the PynamoDB base model of each ``Table`` subclass."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> TableMeta:
        cls = super().__new__(mcs, name, bases, namespace)
        if not any(isinstance(b, TableMeta) for b in bases):
            return cls
        opts = _build_table_options(name, namespace.get("Meta"))
        cls._meta = opts  # type: ignore[attr-defined]
        cls._model_base = _make_base_model(cls, opts)  # type: ignore[attr-defined]
        cls._entities = {}  # type: ignore[attr-defined]
        _apply_settings_to(cls, conf._settings)  # type: ignore[arg-type]  # settings already loaded: apply now
        registry.register_table(cls)  # type: ignore[arg-type]
        return cls


class Table(metaclass=TableMeta):
    """A physical DynamoDB table shared by entities (single-table design).

    Declare it with a ``Meta``::

        class Shop(Table):
            class Meta:
                table_name = "fromatoz"   # settings.table_prefix is prepended
                gsi_count = 2             # GSI1..GSI2 on GSI1PK/GSI1SK, GSI2PK/GSI2SK

    ``Meta`` options: ``table_name`` (required); ``gsi_count`` or ``gsis`` (index name ->
    ``(pk_attribute, sk_attribute)`` for key text written from templates, or ->
    ``{"pk": {"tenant_id": "S", "region": "S"}, "sk": {"year": "N"}}`` for a multi-attribute key
    on the fields' own typed attributes); ``lsis`` (index name -> sort attribute);
    ``ttl_attribute``; ``pk_attribute`` (``"PK"``), ``sk_attribute`` (``"SK"``, or ``None``),
    ``type_attribute`` (``"entityType"``); ``delimiter`` (``"#"``); ``billing_mode``
    (``"PAY_PER_REQUEST"``).
    """

    _meta: ClassVar[TableOptions]
    _model_base: ClassVar[type[Model]]
    _entities: ClassVar[dict[str, type[Entity]]]

    @classmethod
    def table_name(cls) -> str:
        """Return the physical table name (``settings.table_prefix`` + ``Meta.table_name``)."""
        return conf.get_settings().table_prefix + cls._meta.table_name

    @classmethod
    def entities(cls) -> dict[str, type[Entity]]:
        """Return the entity classes stored in this table, by entity type."""
        return dict(cls._entities)

    @classmethod
    def create_table(cls, wait: bool = True, exist_ok: bool = False) -> bool:
        """Create the physical table with its GSIs, LSIs and TTL.

        Issues CreateTable (then DescribeTable until ACTIVE when ``wait``, and
        UpdateTimeToLive when ``Meta.ttl_attribute`` is set).

        A CreateTable whose response was lost (botocore retried, and the retry met
        ResourceInUseException: ``RetryAttempts > 0``) created the table: it counts as created
        by this call and is finished (ACTIVE, TTL) as if the response had arrived.

        Args:
            wait: wait until the table is ACTIVE.
            exist_ok: a table of that name existing already is not an error. Its GSIs are not
                changed (use :meth:`sync` or ``dynorm migrate`` to add missing ones), but the
                declared TTL attribute is turned on when it is off (DescribeTimeToLive, then
                UpdateTimeToLive once the table is ACTIVE).

        Returns:
            True when this call created the table, False when it existed (``exist_ok``).

        Raises:
            ServiceError: the table exists already (``code == "ResourceInUseException"``,
                unless ``exist_ok``) or DynamoDB refused the definition.
        """
        from . import schema
        from .exceptions import ServiceError

        try:
            schema.apply(cls, schema.plan_sync(cls, None), wait=wait)  # CreateTable (+ UpdateTimeToLive)
        except ServiceError as exc:
            if exc.code != "ResourceInUseException":
                raise
            cause = getattr(exc.__cause__, "response", None) or {}
            lost = int(cause.get("ResponseMetadata", {}).get("RetryAttempts", 0) or 0) > 0
            if not (lost or exist_ok):
                raise
            if wait or (lost and cls._meta.ttl_attribute):
                schema.wait_active(cls.table_name())
            cls._ensure_ttl()
            return lost
        return True

    @classmethod
    def _ensure_ttl(cls) -> None:
        """Turn on the declared TTL attribute when it is not (DescribeTimeToLive, UpdateTimeToLive)."""
        from . import schema
        from .backend import call

        attr = cls._meta.ttl_attribute
        if not attr:
            return
        desc = call("DescribeTimeToLive", {"TableName": cls.table_name()}).get("TimeToLiveDescription", {})
        if desc.get("TimeToLiveStatus") in ("ENABLED", "ENABLING") and desc.get("AttributeName") == attr:
            return
        schema.wait_active(cls.table_name())
        schema.apply(cls, [schema._ttl_action(cls)], wait=False)

    @classmethod
    def delete_table(cls, wait: bool = True) -> None:
        """Delete the physical table and all its items (DeleteTable).

        Raises:
            TableDoesNotExist: there is no such table.
        """
        from . import schema
        from .backend import call

        name = cls.table_name()
        call("DeleteTable", {"TableName": name})
        if wait:
            schema.wait_deleted(name)

    @classmethod
    def exists(cls) -> bool:
        """Return True when the physical table exists (DescribeTable)."""
        from .backend import call

        try:
            call("DescribeTable", {"TableName": cls.table_name()})
        except TableDoesNotExist:
            return False
        return True

    @classmethod
    def describe(cls) -> dict[str, Any] | None:
        """Return DescribeTable's ``Table`` description, or ``None`` when the table is missing."""
        from .backend import call

        try:
            return call("DescribeTable", {"TableName": cls.table_name()})["Table"]
        except TableDoesNotExist:
            return None

    @classmethod
    def sync(cls, wait: bool = True, dry_run: bool = False) -> list[str]:
        """Create the table if missing, else add the GSIs (and TTL) it lacks; never drops anything.

        Issues DescribeTable, then CreateTable or one UpdateTable per missing GSI (waiting
        until ACTIVE), and UpdateTimeToLive when needed.

        Args:
            wait: wait until the table and indexes are ACTIVE.
            dry_run: only return what would be done.

        Returns:
            One human-readable line per action (empty when the table is up to date).
        """
        from . import schema

        actions = schema.plan_sync(cls, cls.describe())
        if not dry_run:
            schema.apply(cls, actions, wait=wait)
        return [a.describe() for a in actions]

    @classmethod
    def check(cls) -> list[str]:
        """Validate the table's entities together, without I/O.

        Returns:
            A list of problems (empty when all is well): entity types whose key templates
            on one index could produce the same key, duplicate entity types.
        """
        from .checks import check_collections, check_table

        return check_table(cls) + check_collections(cls)


def _apply_settings_to(table: type[Table], settings: conf.Settings | None) -> None:
    """Point the PynamoDB base model (the escape hatch) at the configured endpoint."""
    if settings is None:
        return
    meta = table._model_base.Meta
    meta.table_name = settings.table_prefix + table._meta.table_name
    meta.region = settings.region
    meta.host = settings.endpoint
    from .backend import credentials_for

    explicit = credentials_for(settings)  # the user's own credentials first, dummy ones only as a fallback
    meta.aws_access_key_id, meta.aws_secret_access_key = explicit if explicit is not None else (None, None)
    table._model_base._connection = None
    for entity in table._entities.values():
        entity._connection = None


def _on_settings(settings: conf.Settings) -> None:
    for table in registry.all_tables():
        _apply_settings_to(table, settings)


conf.on_change(_on_settings)


#: The registry's list of tables (the same list object; kept for code that reads it here).
_TABLES = registry._TABLES


def all_tables() -> list[type[Table]]:
    """Every ``Table`` subclass defined so far, in definition order (see :mod:`dynorm.registry`)."""
    return registry.all_tables()
