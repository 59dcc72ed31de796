"""``Table``: one physical DynamoDB table shared by many entity types.

A ``Table`` subclass declares the physical table (name, generic key attribute names, GSIs,
LSIs, TTL). dynorm builds from it a PynamoDB base model holding the key attributes and the
entity-type discriminator; every entity of the table is a subclass of that model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

from pynamodb.attributes import DiscriminatorAttribute, UnicodeAttribute
from pynamodb.models import Model

from . import backend, conf, registry
from .exceptions import TableDoesNotExist
from .table_options import (
    KEY_TYPES,
    REVISION_ATTRIBUTE,
    MultiKeySchema,
    TableOptions,
    build_table_options,
    copied_from_attribute,
    copied_from_value,
    parse_multi_key,
)

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["Table", "TableOptions", "MultiKeySchema", "KEY_TYPES", "REVISION_ATTRIBUTE", "copied_from_attribute",
           "copied_from_value", "parse_multi_key"]


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
        opts = build_table_options(name, namespace.get("Meta"))
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
    (``"PAY_PER_REQUEST"``); ``stream`` (a DynamoDB ``StreamViewType`` such as
    ``"NEW_AND_OLD_IMAGES"``, read with :mod:`dynorm.streams`; ``None``: no stream).
    """

    _meta: ClassVar[TableOptions]
    _model_base: ClassVar[type[Model]]
    _entities: ClassVar[dict[str, type[EntityLike]]]

    @classmethod
    def table_name(cls) -> str:
        """Return the physical table name (``settings.table_prefix`` + ``Meta.table_name``)."""
        return conf.get_settings().table_prefix + cls._meta.table_name

    @classmethod
    def entities(cls) -> dict[str, type[EntityLike]]:
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
        from . import schema  # DDL, imported on first use: `import dynorm` stays lean

        return schema.create_declared(cls, wait=wait, exist_ok=exist_ok)

    @classmethod
    def delete_table(cls, wait: bool = True) -> None:
        """Delete the physical table and all its items (DeleteTable, then DescribeTable until gone when ``wait``).

        Raises:
            TableDoesNotExist: there is no such table.
        """
        from . import schema  # DDL, imported on first use: `import dynorm` stays lean

        schema.delete_table(cls.table_name(), wait=wait)

    @classmethod
    def exists(cls) -> bool:
        """Return True when the physical table exists (DescribeTable)."""
        try:
            backend.call("DescribeTable", {"TableName": cls.table_name()})
        except TableDoesNotExist:
            return False
        return True

    @classmethod
    def describe(cls) -> dict[str, Any] | None:
        """Return DescribeTable's ``Table`` description, or ``None`` when the table is missing."""
        try:
            return backend.call("DescribeTable", {"TableName": cls.table_name()})["Table"]
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
        from . import schema  # DDL, imported on first use: `import dynorm` stays lean

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
        from .checks import check_collections, check_table  # imported on first use

        return check_table(cls) + check_collections(cls)


def _apply_settings_to(table: type[Table], settings: conf.Settings | None) -> None:
    """Point the PynamoDB base model (the escape hatch) at the configured endpoint."""
    if settings is None:
        return
    meta = table._model_base.Meta
    meta.table_name = settings.table_prefix + table._meta.table_name
    meta.region = settings.region
    meta.host = settings.endpoint
    explicit = backend.credentials_for(settings)  # the user's own credentials first, dummy ones only as a fallback
    meta.aws_access_key_id, meta.aws_secret_access_key = explicit if explicit is not None else (None, None)
    table._model_base._connection = None
    for entity in table._entities.values():
        cast("type[Model]", entity)._connection = None  # every entity class subclasses table._model_base


def _on_settings(settings: conf.Settings) -> None:
    for table in all_tables():
        _apply_settings_to(table, settings)


conf.on_change(_on_settings)


#: The registry's list of tables (the same list object; kept for code that reads it here).
_TABLES = registry._TABLES


def all_tables() -> list[type[Table]]:
    """Every ``Table`` subclass defined so far, in definition order (see :mod:`dynorm.registry`)."""
    return cast("list[type[Table]]", registry.all_tables())  # only TableMeta registers a table
