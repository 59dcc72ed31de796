"""``Entity``: a PynamoDB model bound to a ``Table``, with key templates and managers.

Each entity class is a real PynamoDB ``Model`` subclass of its table's base model
(discriminated on the type attribute), so PynamoDB stays usable as an escape hatch.
dynorm adds: key templates written on every save, validation before I/O, managers and
querysets, ``create`` that refuses to overwrite, and optimistic locking.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, TypeVar

from pynamodb import attributes as _pa
from pynamodb.exceptions import DoesNotExist as _PynamoDoesNotExist
from pynamodb.models import MetaModel, Model

from . import backend, exceptions, registry
from ._state import ModelState
from .exceptions import ModelError, ValidationError
from .expressions import Q
from .fields import Field
from .manager import BaseManager, Manager
from .options import RESERVED_FIELD_NAMES, Options, build_options
from .sender import send
from .tables import Table, copied_from_attribute
from .write_keys import stored_key

__all__ = ["Entity"]

E = TypeVar("E", bound="Entity")


def _declared_fields(bases: tuple[type, ...], namespace: dict[str, Any]) -> dict[str, Field]:
    fields: dict[str, Field] = {}
    for base in reversed(bases):
        for klass in reversed(base.__mro__):
            for name, value in vars(klass).items():
                if isinstance(value, Field):
                    fields[name] = value
    for name, value in namespace.items():
        if isinstance(value, Field):
            fields[name] = value
    return fields


class EntityMeta(MetaModel):
    """Binds an entity class to its table, builds ``_meta`` and attaches managers."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> Any:
        if namespace.pop("_dynorm_root", False):
            return super().__new__(mcs, name, bases, namespace)
        user_meta = namespace.pop("Meta", None)
        abstract = bool(getattr(user_meta, "abstract", False))
        namespace["_dynorm_user_meta"] = user_meta
        namespace["_dynorm_abstract"] = abstract
        if not abstract:
            table = getattr(user_meta, "table", None)
            if user_meta is None or not (isinstance(table, type) and issubclass(table, Table) and table is not Table):
                raise ModelError(f"{name}.Meta.table must name a dynorm.Table subclass "
                                 "(or set Meta.abstract = True for a base class).")
            if not any(issubclass(b, table._model_base) for b in bases):
                bases = (*bases, table._model_base)
            qual = namespace.get("__qualname__", name)
            module = namespace.get("__module__")
            namespace["DoesNotExist"] = type("DoesNotExist", (exceptions.DoesNotExist, _PynamoDoesNotExist),
                                             {"__module__": module, "__qualname__": f"{qual}.DoesNotExist"})
            namespace["MultipleObjectsReturned"] = type(
                "MultipleObjectsReturned", (exceptions.MultipleObjectsReturned,),
                {"__module__": module, "__qualname__": f"{qual}.MultipleObjectsReturned"})
        return super().__new__(mcs, name, bases, namespace)

    def __init__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> None:
        if cls.__dict__.get("_dynorm_abstract", True):
            super().__init__(name, bases, namespace)
            return
        user_meta = cls.__dict__["_dynorm_user_meta"]
        fields = _declared_fields(cls.__bases__, dict(cls.__dict__))
        table: type[Table] = user_meta.table
        for fname, f in fields.items():
            if fname in RESERVED_FIELD_NAMES or fname.startswith("_"):
                raise ModelError(f"{name}.{fname}: the name {fname!r} is reserved; rename the field.")
            if f.attr_name in table._meta.key_attributes:
                raise ModelError(f"{name}.{fname} is stored as {f.attr_name!r}, which table {table.__name__} "
                                 "uses for keys or the entity type; give it another attr_name.")
            if f.attr_name == table._meta.revision_attribute:
                raise ModelError(f"{name}.{fname} is stored as {f.attr_name!r}, the revision attribute every "
                                 f"dynorm write sets (Table {table.__name__}); give it another attr_name.")
            if f.attr_name == copied_from_attribute(table._meta.revision_attribute):
                raise ModelError(f"{name}.{fname} is stored as {f.attr_name!r}, where a copy-mode migration "
                                 f"records the revision it copied (Table {table.__name__}); give it another attr_name.")
            f.name = fname
        opts: Options = build_options(name, user_meta, fields)
        if opts.entity_type in table._entities:
            old = table._entities[opts.entity_type]
            if (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
                raise ModelError(f"{name}: entity type {opts.entity_type!r} is already used by "
                                 f"{old.__module__}.{old.__qualname__} in table {table.__name__}; "
                                 "set a distinct Meta.entity_type.")
            disc: Any = table._model_base.get_attributes()["_dynorm_type"]
            disc._discriminator_map.pop(opts.entity_type, None)  # re-definition (module reload)
            disc._class_map.pop(old, None)
        others = [(o._meta.entity, o._meta.key_version, o._meta.all_indexes)
                  for t, o in table._entities.items() if t != opts.entity_type]
        if others and any(b.kind == "gsi" for b in opts.all_indexes):
            from .checks import shard_count_conflicts  # on first use: `import dynorm` stays lean

            conflicts = shard_count_conflicts(name, opts.all_indexes, opts.key_version, others)
            if conflicts:
                raise ModelError(conflicts[0])
        cls._meta = opts
        registry.register_entity(cls)  # refuses a name that makes a string Reference ambiguous
        super().__init__(name, bases, namespace, discriminator=opts.entity_type)
        table._entities[opts.entity_type] = cls  # type: ignore[assignment]
        managers = [(n, v) for n, v in cls.__dict__.items() if isinstance(v, BaseManager)]
        if not any(n == "objects" for n, _ in managers) and "objects" in fields:
            raise ModelError(f"{name}.objects is reserved for the manager.")
        if not managers:
            managers = [("objects", Manager())]
        for mname, manager in managers:
            manager.contribute_to_class(cls, mname)
        cls._default_manager = managers[0][1]  # the first declared, as in Django


_NO_DEFAULT = object()
_NO_PLAN = object()
#: (discriminator attribute to set or ``None``, (name, default, callable) per default, names set through
#: their attribute's own ``__set__``)
_InitPlan = tuple[str | None, tuple[tuple[str, Any, bool], ...], frozenset[str]]


def _build_init_plan(cls: Any) -> _InitPlan | None:
    """The plan of :meth:`Entity._init_plan`, or ``None`` when PynamoDB's ``__init__`` must run."""
    container = _pa.AttributeContainer
    mro = cls.__mro__
    inits = [k for k in mro[mro.index(Entity) + 1:] if "__init__" in vars(k)]
    hooks = ("_set_defaults", "_set_attributes", "_set_discriminator")
    if inits != [Model, container, object] or cls.__setattr__ is not object.__setattr__ or \
            any(getattr(cls, h) is not getattr(container, h) for h in hooks):
        return None
    disc_name = cls._discriminator
    disc = None
    defaults = []
    setters: set[str] = set()
    for name, attr in cls.get_attributes().items():
        if name == disc_name:
            if type(attr).__set__ is not _pa.DiscriminatorAttribute.__set__:
                return None
            if attr.get_discriminator(cls) is not None:
                disc = name
            continue
        if cls._dynamo_to_python_attrs.get(attr.attr_name, attr.attr_name) != name:
            return None
        if type(attr).__set__ is not _pa.Attribute.__set__:
            setters.add(name)  # set through it, as PynamoDB does
        default = attr.default_for_new if attr.default_for_new is not None else attr.default
        if default is not None:
            defaults.append((name, default, callable(default)))
    if disc_name is not None and disc_name not in cls.get_attributes():
        return None
    return disc, tuple(defaults), frozenset(setters)


class _StateOnFirstUse:
    """``obj._state`` of an instance decoded from an item that needed none: a ``ModelState(adding=False)``
    made on first access and kept on the instance (a non-data descriptor: the instance's own
    ``_state``, set by ``__init__`` or the decoder, takes precedence)."""

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        state = obj.__dict__["_state"] = ModelState(adding=False)
        return state


def _is_deferred(obj: Any, name: str) -> bool:
    deferred = obj._state.deferred
    return deferred is not None and name in deferred[0]


class Entity(Model, metaclass=EntityMeta):
    """Base class of entities; see the module docs and ``DESIGN.md`` section 1.

    Declare fields as class attributes and the keys in ``Meta``::

        class Product(Entity):
            product_id = fields.ULID(auto=True)
            brand_id = fields.String()
            class Meta:
                table = Shop
                entity_type = "PRODUCT"
                key_version = "v1"
                pk = "{version}#P#{product_id}"
                sk = "METADATA"
                indexes = {"by_brand": Index("GSI1", pk="{version}#B#{brand_id}", sk="P#{product_id}")}

    Instances are created with keyword arguments naming fields; values are validated at
    once (:class:`dynorm.ValidationError`).
    """

    _dynorm_root = True
    _meta: ClassVar[Options]
    _default_manager: ClassVar[Any]
    if TYPE_CHECKING:
        _state: ModelState
    else:
        _state = _StateOnFirstUse()
    objects: ClassVar[Any]
    DoesNotExist: type[exceptions.DoesNotExist]  # type: ignore[assignment]
    MultipleObjectsReturned: ClassVar[type[exceptions.MultipleObjectsReturned]]

    def __init__(self, _user_instantiated: bool = True, **fields: Any) -> None:
        if not _user_instantiated:  # PynamoDB decoding an item it read
            self._state = ModelState(adding=False)
            super().__init__(_user_instantiated=False)
            return
        self._state = ModelState()
        meta = self._meta
        for name, value in fields.items():
            f = meta.fields.get(name)
            if f is None:
                raise ValidationError(f"{meta.entity} has no field {name!r}; fields: {', '.join(meta.fields)}.",
                                      entity=meta.entity, field=name, value=value)
            fields[name] = f.validate(value, meta.entity)
        plan = type(self)._init_plan()
        if plan is None:  # a class that changes how PynamoDB sets attributes: let it
            super().__init__(_user_instantiated=True, **fields)
            return
        # what PynamoDB's AttributeContainer.__init__ leaves (the discriminator, the defaults for a
        # new instance in attribute order, then the values given), without a descriptor call per
        # attribute: a third of the CPU of building an instance (issue 24)
        disc, defaults, setters = plan
        values: dict[str, Any] = {disc: type(self)} if disc is not None else {}
        self.attribute_values = values
        for name, default, call in defaults:
            value = default() if call else default
            if value is not None:
                if name in setters:
                    setattr(self, name, value)
                else:
                    values[name] = value
        if setters.isdisjoint(fields):
            values.update(fields)
        else:
            for name, value in fields.items():
                if name in setters:
                    setattr(self, name, value)  # an attribute's own __set__ (Version casts to int)
                else:
                    values[name] = value

    # -- representation --------------------------------------------------------------
    @property
    def pk(self) -> Any:
        """Django's ``pk``: the primary-key value (a tuple of the key fields when there are several)."""
        values = tuple(getattr(self, f) for f in self._meta.key_fields)
        return values[0] if len(values) == 1 else values

    @property
    def key(self) -> dict[str, Any]:
        """The primary-key fields and their values (``{"product_id": "01J..."}``)."""
        return {f: getattr(self, f) for f in self._meta.key_fields}

    def to_dict(self) -> dict[str, Any]:
        """Return ``{field: value}`` for every field."""
        return {f: getattr(self, f) for f in self._meta.fields}

    def __repr__(self) -> str:
        shown = dict(self.key)
        for label in ("name", "title", "email"):  # one human-readable field, when there is one
            if label in self._meta.fields and label not in shown:
                if label in self.attribute_values or not _is_deferred(self, label):  # a repr sends no GetItem
                    shown[label] = getattr(self, label)
                break
        return f"<{type(self).__name__} {' '.join(f'{k}={v!r}' for k, v in shown.items())}>"

    def __copy__(self) -> Entity:
        """``copy.copy(obj)``: an instance of the same item with its own field values and state.

        Like Django's copy of a model instance: changing or saving one leaves the other as it was,
        so saving a copy of a versioned instance after the original was saved raises
        :class:`dynorm.StaleWrite` (before, both shared one dict of values and the copy's save
        passed the version check with stale fields). Values themselves are not copied (a List
        field's list is shared, as in Django); use ``copy.deepcopy`` for that. No request.
        """
        cls = type(self)
        twin = cls.__new__(cls)
        twin.__dict__.update(self.__dict__)
        twin.attribute_values = dict(self.attribute_values)
        state = self.__dict__.get("_state")
        if state is not None:
            state = copy.copy(state)
            state.read_as = dict(state.read_as)
            state.unique_as = dict(state.unique_as)
            if state._related is not None:
                state._related = dict(state._related)
            twin.__dict__["_state"] = state
        return twin

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.key == other.key and None not in self.key.values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), tuple(self.key.values())))

    # -- keys ------------------------------------------------------------------------
    def key_attributes(self) -> dict[str, str | None]:
        """Compute every key attribute from the fields (pure; no I/O): see :meth:`Options.key_attributes`.

        Returns:
            ``{attribute name: key text}`` for the table's keys and each index's keys; an
            index whose template misses a value maps its attributes to ``None`` (sparse index).

        Raises:
            InvalidKeyValue: a key value is missing or cannot be put in a key.
        """
        return self._meta.key_attributes(self.attribute_values)

    def _primary_key_av(self) -> dict[str, Any]:
        return stored_key(self)

    # -- validation ------------------------------------------------------------------
    def full_clean(self, exclude: Iterable[str] | None = None) -> None:
        """Validate the fields the instance holds (type, required) without I/O.

        A deferred field not assigned since (left out by ``only()``, or changed by an ``F()``
        expression whose result did not come back) holds no value: it is skipped, not taken for
        ``None`` and not loaded (its stored value was validated when it was written). Django's
        ``clean_fields()`` would load it with a query; here validation never sends a request.

        Args:
            exclude: field names not to validate (Django's ``full_clean(exclude=...)``).

        Raises:
            ValidationError: naming the entity, field and value.
        """
        meta = self._meta
        values = self.attribute_values
        skip = set(exclude) if exclude is not None else set()
        deferred = self._state.deferred
        if deferred is not None:
            skip |= {n for n in deferred[0] if n not in values}
        for name, f in meta.fields.items():
            if name in skip:
                continue
            value = values.get(name)
            f.check_required(value, meta.entity)
            f.validate(value, meta.entity)

    # -- writes ----------------------------------------------------------------------
    def save(self, *, update_fields: Iterable[str] | None = None, _create: bool = False) -> Entity:  # type: ignore[override]
        """Write the instance, recomputing every key attribute from the fields.

        A new versioned instance (and ``create()``) is one PutItem conditional on the item not
        existing. Otherwise it is one UpdateItem that SETs every declared field (REMOVE for
        ``None``) and key attribute, so attributes this model does not declare (written by
        another service or a newer version of the app) are kept. With a ``fields.Version()``
        the write is conditional on the version read and the version is incremented.

        During a key-version rollout (``Meta.read_versions``) a new instance must not hide an item
        stored only under an older key: a new versioned instance (and ``create()``) goes as one
        TransactWriteItems, the Put plus a ConditionCheck per older key (``AlreadyExists`` naming
        the version); a new unversioned instance as the UpdateItem plus those checks, and when an
        older item exists it is moved to the current keys (consistent GetItems + one
        TransactWriteItems) and the UpdateItem is sent there.

        Args:
            update_fields: write only these fields (plus the index keys built from them,
                ``auto_now`` fields and the version): one UpdateItem, conditional on the item
                existing. On an instance read with ``only()``, a field it needs that was not
                read (nor assigned) is loaded first with one GetItem, as Django does.

        Returns:
            self.

        Raises:
            ValidationError, InvalidKeyValue: bad values or unknown ``update_fields`` (before any request).
            KeyChangeError: a primary-key field changed since the item was read.
            StaleWrite: optimistic locking lost a race; the table is unchanged.
            AlreadyExists: (``create``) an item with this primary key exists.
            DoesNotExist: (``update_fields``) the item does not exist.
        """
        backend.drive(self._save_steps(update_fields, _create))
        return self

    async def asave(self, *, update_fields: Iterable[str] | None = None, _create: bool = False) -> Entity:
        """:meth:`save` for asyncio: the same plan, condition, revision token and errors (``await obj.asave()``)."""
        await backend.adrive(self._save_steps(update_fields, _create))
        return self

    def _save_steps(self, update_fields: Iterable[str] | None, create: bool) -> backend.Steps:
        from .instance_writes import save_steps  # the write path, imported on first use: `import dynorm` stays lean

        return save_steps(self, update_fields, create)

    def update(self, *, condition: Q | None = None, **changes: Any) -> Entity:  # type: ignore[override]
        """Change fields in one UpdateItem (ReturnValues ALL_NEW) and refresh the instance.

        Args:
            condition: a ``Q`` that must hold on the stored item (``Q(stock_level__gte=3)``).
            **changes: field -> value, ``None`` (REMOVE an optional field), or an ``F``
                expression: ``F("stock_level") - 3``, ``F("n").if_not_exists(0) + 1``,
                ``F("lines").append([...])``, ``F("tags").add({...})``, ``F("tags").discard({...})``.

        Index keys built from changed fields are recomputed and SET in the same request; with
        a ``fields.Version()`` the update is conditional on the version read.

        Without a version to check, an update with ``+``, ``-`` or ``append()`` (not idempotent)
        is one TransactWriteItems under a ``ClientRequestToken`` instead, applied exactly once
        even when botocore retries it: a transaction returns no values, so the fields it changed
        with an expression are deferred, loaded with one consistent GetItem when first read
        (``obj.n`` then shows the new value, never the old one nor the expression).

        Returns:
            self, refreshed from the item as written (its ``F()`` fields deferred after a
            TransactWriteItems).

        Raises:
            ConditionFailed: ``condition`` did not hold (``.item`` is the item as it stands).
            StaleWrite: the item changed since it was read (versioned entities).
            DoesNotExist: the item is gone.
            KeyChangeError: a primary-key field is in ``changes``.
            ValidationError: unknown field, wrong type (before any request).
        """
        backend.drive(self._update_steps(condition, changes))
        return self

    async def aupdate(self, *, condition: Q | None = None, **changes: Any) -> Entity:
        """:meth:`update` for asyncio (one UpdateItem, the same plan and errors)."""
        await backend.adrive(self._update_steps(condition, changes))
        return self

    def _update_steps(self, condition: Q | None, changes: dict[str, Any]) -> backend.Steps:
        from .instance_writes import update_steps  # the write path, imported on first use: `import dynorm` stays lean

        return update_steps(self, condition, changes)

    def delete(self, *, condition: Q | None = None) -> None:  # type: ignore[override]
        """Delete the item (DeleteItem); with a ``fields.Version()`` only if unchanged since read.

        Args:
            condition: an extra ``Q`` that must hold on the stored item.

        Raises:
            StaleWrite: the item changed or vanished since it was read; nothing was deleted.
            ConditionFailed: ``condition`` did not hold.
        """
        backend.drive(self._delete_steps(condition))

    async def adelete(self, *, condition: Q | None = None) -> None:
        """:meth:`delete` for asyncio (one DeleteItem, the same plan and errors)."""
        await backend.adrive(self._delete_steps(condition))

    def _delete_steps(self, condition: Q | None) -> backend.Steps:
        from .instance_writes import delete_steps  # the write path, imported on first use: `import dynorm` stays lean

        return delete_steps(self, condition)

    def related(self, name: str) -> Any:
        """Return the entity a ``fields.Reference`` field points to (``None`` when unset).

        Uses the instance fetched by ``prefetch(name)`` when the queryset had one; otherwise
        issues a GetItem.

        Raises:
            Entity.DoesNotExist: the referenced item does not exist (not prefetched).
        """
        from .fields import Reference

        field = self._meta.fields.get(name)
        if not isinstance(field, Reference):
            raise ValidationError(f"{self._meta.entity}.{name} is not a fields.Reference.", entity=self._meta.entity)
        cache = self._state.related
        if name in cache:
            return cache[name]
        value = getattr(self, name)
        if value is None:
            return None
        obj = registry.default_manager(field.target).get_queryset().get(**value)
        cache[name] = obj
        return obj

    def refresh_from_db(self, fields: Iterable[str] | None = None) -> None:
        """Reload fields from the table (GetItem, ConsistentRead).

        Args:
            fields: names of the fields to reload (a ProjectionExpression; Django's
                ``refresh_from_db(fields=[...])``), e.g. deferred fields of an ``only()`` read;
                ``None`` reloads every field. The other fields keep their values.

        A full reload makes the instance one read from the table (``_state.adding`` False), also a
        new one (``Widget(widget_id=...)``): its ``save()`` then never re-creates an item deleted since.

        Raises:
            Entity.DoesNotExist: the item is gone.
            ValidationError: an unknown field name (before any request).
            UnreadableItems: the stored item cannot be decoded (names key and attribute); the
                instance is unchanged.
        """
        backend.drive(self._refresh_steps(fields))

    async def arefresh_from_db(self, fields: Iterable[str] | None = None) -> None:
        """:meth:`refresh_from_db` for asyncio (one GetItem, ConsistentRead): ``await obj.arefresh_from_db()``.

        ``await obj.arefresh_from_db(fields=["body"])`` loads fields an ``only()`` query deferred,
        which reading them inside the event loop refuses to do (``SynchronousOnlyOperation``).
        """
        await backend.adrive(self._refresh_steps(fields))

    def _refresh_steps(self, fields: Iterable[str] | None = None) -> backend.Steps:
        from .instance_writes import refresh_steps  # the write path, imported on first use: `import dynorm` stays lean

        return refresh_steps(self, fields)

    @classmethod
    def batch_write(cls, auto_commit: bool = True) -> Any:  # type: ignore[override]
        """PynamoDB's ``BatchWrite`` context manager (the escape hatch), refused on an entity with unique
        constraints: BatchWriteItem takes no condition, so its Puts and Deletes would leave the sentinels
        behind (a value held by no item, or an item whose value has none).

        Raises:
            ModelError: the entity declares a unique constraint; nothing was sent. Use
                ``objects.bulk_create(objs)`` / ``objects.bulk_delete(objs)`` (one TransactWriteItems
                per item, with its sentinels).
        """
        constraints = cls._meta.constraints
        if constraints:
            raise ModelError(
                f"{cls.__name__}.batch_write() (PynamoDB's BatchWriteItem) would bypass the sentinels of its unique "
                f"constraint(s) {', '.join(repr(c.name) for c in constraints)}: BatchWriteItem takes no condition. "
                f"Use {cls.__name__}.objects.bulk_create(objs) or .bulk_delete(objs) instead (docs/constraints.md); "
                "nothing was sent.")
        return super().batch_write(auto_commit=auto_commit)

    def _describe_key(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.key.items())

    @classmethod
    def _decode_plan(cls) -> tuple[tuple[tuple[str, str, str, Any, Any], ...], str]:
        """(python name, attribute name, type, deserialize, default) per attribute; built once per class."""
        plan = cls.__dict__.get("_dynorm_decode")
        if plan is None:
            disc: str = cls._discriminator  # type: ignore[attr-defined]
            entries = tuple((name, attr.attr_name, attr.attr_type, attr.deserialize, attr.default)
                            for name, attr in cls.get_attributes().items() if name != disc)
            plan = (entries, disc)
            type.__setattr__(cls, "_dynorm_decode", plan)
        return plan  # type: ignore[no-any-return]

    @classmethod
    def _init_plan(cls) -> _InitPlan | None:
        """(discriminator to set or ``None``, (python name, default for a new instance, callable) per
        attribute with one) for :meth:`__init__`; built once per class.

        ``None`` when the class changes what PynamoDB's ``__init__`` does (a ``__setattr__``, its
        ``_set_*`` hooks, an attribute's ``__set__``, an ``attr_name`` another attribute maps to):
        such a class is built by PynamoDB's own ``__init__``.
        """
        plan = cls.__dict__.get("_dynorm_init", _NO_PLAN)
        if plan is _NO_PLAN:
            plan = _build_init_plan(cls)
            type.__setattr__(cls, "_dynorm_init", plan)
        return plan  # type: ignore[no-any-return]

    @classmethod
    def from_raw_data(cls: type[E], data: dict[str, Any]) -> E:  # type: ignore[override]
        """Build an instance from an item in DynamoDB JSON.

        The result is the instance PynamoDB's ``from_raw_data`` builds (same ``attribute_values``,
        defaults for missing attributes, dispatch to the stored entity type's class), filled
        from a precomputed per-class plan instead of a descriptor call per attribute.

        Raises:
            ValueError: the stored entity type belongs to a class that is not ``cls`` or a subclass.
        """
        stored = cls._get_discriminator_class(data)  # type: ignore[attr-defined]
        if stored is not None and stored is not cls:
            if not issubclass(stored, cls):
                raise ValueError(f"Cannot instantiate a {cls.__name__} from the returned class: {stored.__name__}")
            cls = stored
        return cls._from_item(data)

    @classmethod
    def _from_item(cls: type[E], data: dict[str, Any]) -> E:
        """Build an instance of exactly ``cls`` from an item whose entity type the caller already
        matched to ``cls`` (the query decoder): :meth:`from_raw_data` without looking the type up again.

        No per-instance state is made unless the entity pins fields (``Options.pinned_attributes``:
        how each was stored is kept in ``_state.read_as``); otherwise ``obj._state`` is made on first use.
        """
        entries, disc = cls._decode_plan()  # type: ignore[attr-defined]
        values: dict[str, Any] = {disc: cls}
        for name, attr_name, attr_type, deserialize, default in entries:
            av = data.get(attr_name)
            if av and "NULL" not in av:
                if attr_type not in av:  # an unexpected type: let PynamoDB report it
                    return super().from_raw_data(data)  # type: ignore[misc, no-any-return]
                values[name] = deserialize(av[attr_type])
            elif default is not None:
                values[name] = default() if callable(default) else default
        obj = cls.__new__(cls)
        obj.attribute_values = values
        read_as = None
        for name, attr_name, attr_type, serialize, fixed in cls._pin_plan():
            av = data.get(attr_name)
            if av is not None and "NULL" in av:
                continue
            value = values.get(name)
            if av is None:
                if value is None:
                    continue  # absent and read as None: pinning the value pins the absence
            elif value is not None and not (fixed is not _NO_DEFAULT and fixed == value) and len(av) == 1 \
                    and av.get(attr_type) == serialize(value):
                continue  # stored as the value serialises: pinning the value pins this very attribute
            if read_as is None:
                read_as = {}
            read_as[name] = (value, av)
        unique = cls._meta.unique_fields  # the sentinels this item holds (dynorm.constraints)
        if read_as is not None or unique:
            obj._state = ModelState(adding=False, read_as=read_as,
                                    unique_as={name: values.get(name) for name in unique} if unique else None)
        return obj

    @classmethod
    def _pin_plan(cls) -> tuple[tuple[str, str, str, Any, Any], ...]:
        """(field, attribute, type, serialize, fixed default or ``_NO_DEFAULT``) per pinned field; built once per class.

        A write pins such a field at the attribute as it was read (``_state.read_as``) only where
        that differs from pinning the value read (:func:`dynorm.write_conditions.pin_key_sources`):
        an attribute stored in another form than the value serialises to, an absent one read as a
        default, or a value equal to a fixed default (whose pin also accepts absence). Only those
        are kept: an item stored by dynorm needs no state at all.
        """
        plan = cls.__dict__.get("_dynorm_pins")
        if plan is None:
            fields = cls._meta.fields
            out = []
            for name, attr_name in cls._meta.pinned_attributes:
                f = fields[name]
                default = getattr(f, "default", None)
                fixed = default if default is not None and not callable(default) else _NO_DEFAULT
                out.append((name, attr_name, f.attr_type, f.serialize, fixed))
            plan = tuple(out)
            type.__setattr__(cls, "_dynorm_pins", plan)
        return plan  # type: ignore[no-any-return]


#: Send one planned write (kept for callers of the old name; see :func:`dynorm.sender.send`).
execute = send
