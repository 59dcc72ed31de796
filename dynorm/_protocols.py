"""What the layers below :mod:`dynorm.models` and :mod:`dynorm.tables` use of entities and tables.

The planners (``expressions``, ``plan``, ``writes``, ``checks``, ``schema``), the senders
(``sender``, ``batch``, ``fallback``, ``transaction``) and the ORM face (``query``, ``manager``)
are typed against these protocols, never against ``Entity`` or ``Table``, so none of them imports
``models`` or ``tables``, not even for annotations: imports go one way, down (see
``tests/unit/test_import_layers.py``).

An entity class is ``type[EntityLike]`` and an instance ``EntityLike``: the class-level members
(``_meta``, ``DoesNotExist``, ``from_raw_data``) are declared as class variables and
classmethods of the one protocol, as ``Entity`` declares them. A table class is
``type[TableLike]``.

This module sits just above :mod:`dynorm.options` and :mod:`dynorm.expressions`: for annotations it
names ``Options`` (an entity's ``_meta``), ``ModelState``, ``Q`` and ``backend.Steps``, and at run
time it subclasses :class:`dynorm.table_options.TableDeclaration`; none of them imports it back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Protocol, TypeVar

from .table_options import TableDeclaration

if TYPE_CHECKING:  # pragma: no cover
    from . import exceptions
    from ._state import ModelState
    from .backend import Steps
    from .expressions import Q
    from .options import Options

__all__ = ["EntityLike", "TableLike"]

_E = TypeVar("_E", bound="EntityLike")


class EntityLike(Protocol):
    """An entity instance; ``type[EntityLike]`` is an entity class (a :class:`dynorm.Entity` subclass).

    Attributes:
        _meta: the entity's resolved ``Meta`` (fields, key templates, indexes, table).
        _state: per-instance bookkeeping (adding, deferred, the key it was read under).
        attribute_values: PynamoDB's field name -> Python value of this instance.
        DoesNotExist, MultipleObjectsReturned: the entity's own exception classes.
        objects: the default manager (typed ``Any``: ``manager`` is above this module). Not used
            below ``models``; declared for callers of ``Table.entities()``, which returns these classes.
    """

    _meta: ClassVar[Options]
    _state: ModelState
    attribute_values: dict[str, Any]
    objects: ClassVar[Any]
    DoesNotExist: type[exceptions.DoesNotExist]
    MultipleObjectsReturned: ClassVar[type[exceptions.MultipleObjectsReturned]]

    def __init__(self, _user_instantiated: bool = True, **fields: Any) -> None:
        """Build an instance from field values (validated at once)."""

    @property
    def pk(self) -> Any:
        """The primary-key value (a tuple when the key has several fields)."""

    @property
    def key(self) -> dict[str, Any]:
        """The primary-key fields and their values."""

    @classmethod
    def from_raw_data(cls: type[_E], data: dict[str, Any]) -> _E:
        """Decode an item in DynamoDB JSON into an instance."""

    @classmethod
    def _from_item(cls: type[_E], data: dict[str, Any]) -> _E:
        """Decode an item already known to be of this class's entity type (no type lookup)."""

    @classmethod
    def _dynamo_to_python_attr(cls, dynamo_key: str) -> str:
        """The field name stored under the DynamoDB attribute ``dynamo_key`` (PynamoDB)."""

    def full_clean(self, exclude: Iterable[str] | None = None) -> None:
        """Validate the fields the instance holds, but ``exclude``, without I/O."""

    def related(self, name: str) -> Any:
        """Follow the ``Reference`` field ``name`` (GetItem)."""

    def refresh_from_db(self, fields: Iterable[str] | None = None) -> None:
        """Reload the instance's fields from its item (GetItem)."""

    async def arefresh_from_db(self, fields: Iterable[str] | None = None) -> None:
        """Reload the instance's fields from its item (GetItem), on asyncio."""

    def save(self, *, update_fields: Iterable[str] | None = None, _create: bool = False) -> EntityLike:
        """Write the instance (PutItem or UpdateItem)."""

    async def asave(self, *, update_fields: Iterable[str] | None = None, _create: bool = False) -> EntityLike:
        """Write the instance (PutItem or UpdateItem), on asyncio."""

    def delete(self, *, condition: Q | None = None) -> None:
        """Delete the instance's item (DeleteItem)."""

    def _save_steps(self, update_fields: Iterable[str] | None, create: bool) -> Steps:
        """The requests of :meth:`save`, as steps for a driver."""

    def _update_steps(self, condition: Q | None, changes: dict[str, Any]) -> Steps:
        """The requests of ``update(**changes)``, as steps for a driver."""

    def _primary_key_av(self) -> dict[str, Any]:
        """The stored primary key of the instance, in DynamoDB JSON."""

    def _describe_key(self) -> str:
        """The instance's key for messages (``Product(product_id='01J...')``)."""


class TableLike(TableDeclaration, Protocol):
    """A ``Table`` subclass with its entity classes typed (``type[TableLike]``)."""

    _entities: ClassVar[dict[str, type[EntityLike]]]
