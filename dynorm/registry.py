"""The registry of tables and entities: by class, by name, and their default managers.

Tables and entity classes register themselves when they are defined. ``fields.Reference("Name")``
is resolved here when the named class is built (or at once, when it already exists); a name
that two entity classes share is refused, so a reference can never point at the wrong class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .exceptions import ModelError

if TYPE_CHECKING:  # pragma: no cover
    from .table_options import TableDeclaration

__all__ = ["register_table", "all_tables", "register_entity", "entity_named", "default_manager",
           "resolve_reference"]

_TABLES: list[type[TableDeclaration]] = []
_ENTITIES: list[Any] = []
_PENDING: list[Any] = []  # Reference fields whose string target is not resolved yet
_RESOLVED: list[Any] = []  # string references already resolved (a later class of that name is refused)


def register_table(table: type[TableDeclaration]) -> None:
    """Record a ``Table`` subclass (called by its metaclass)."""
    _TABLES.append(table)


def all_tables() -> list[type[TableDeclaration]]:
    """Every ``Table`` subclass defined so far, in definition order."""
    return list(_TABLES)


def _same(a: Any, b: Any) -> bool:
    return bool((a.__module__, a.__qualname__) == (b.__module__, b.__qualname__))


def register_entity(cls: Any) -> None:
    """Record an entity class and resolve the string references waiting for its name.

    A re-definition of the same class (same module and qualified name, e.g. a module reload)
    replaces the old one.

    Raises:
        ModelError: a reference already resolved to another class of the same name.
    """
    for ref in _RESOLVED:
        if not isinstance(ref._target, str) and not _same(ref._target, cls) and _matches(cls, ref._target_name):
            raise ModelError(
                f"{cls.__module__}.{cls.__qualname__}: its name makes fields.Reference({ref._target_name!r}) "
                f"ambiguous (it points at {ref._target.__module__}.{ref._target.__qualname__}); write the "
                "reference as fields.Reference('module.ClassName') or pass the class itself.")
    _ENTITIES[:] = [e for e in _ENTITIES if not _same(e, cls)]
    _ENTITIES.append(cls)
    for ref in list(_PENDING):
        if _matches(cls, ref._target_name):
            resolve_reference(ref)


def _matches(cls: Any, name: str) -> bool:
    return bool(name in (cls.__name__, f"{cls.__module__}.{cls.__qualname__}"))


def entity_named(name: str) -> Any:
    """Return the entity class called ``name`` (its class name, or ``module.QualName``), or ``None``.

    Raises:
        ModelError: two entity classes share that name (use ``"module.ClassName"``).
    """
    found = [e for e in _ENTITIES if _matches(e, name)]
    if len(found) > 1:
        where = ", ".join(f"{e.__module__}.{e.__qualname__}" for e in found)
        raise ModelError(f"the entity name {name!r} is ambiguous ({where}); write the reference as "
                         "fields.Reference('module.ClassName') or pass the class itself.")
    return found[0] if found else None


def add_pending_reference(ref: Any) -> None:
    """Remember a ``Reference`` with a string target; it is resolved when that class is built."""
    _PENDING.append(ref)
    resolve_reference(ref, required=False)


def resolve_reference(ref: Any, required: bool = False) -> Any:
    """Resolve a ``Reference`` field's string target; return the class or ``None``.

    Raises:
        ModelError: the name is ambiguous, or (``required``) no entity class has that name.
    """
    cls = entity_named(ref._target_name)
    if cls is not None:
        ref._target = cls
        # identity, not ==: a PynamoDB attribute's == builds a condition expression
        if any(r is ref for r in _PENDING):
            _PENDING[:] = [r for r in _PENDING if r is not ref]
            _RESOLVED.append(ref)
    elif required:
        raise ModelError(f"fields.Reference({ref._target_name!r}): no entity class of that name is defined.")
    return cls


def default_manager(model: Any) -> Any:
    """The manager first declared on ``model`` (``objects`` when none is declared), as in Django."""
    return model._default_manager
