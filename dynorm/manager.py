"""Managers: the class-level entry point to querysets (``Product.objects``).

As in Django, a manager class is generated from a queryset class
(:meth:`BaseManager.from_queryset`), so custom queryset methods appear on the manager.
A manager is reachable from the entity class only, never from an instance.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .query import QuerySet

if TYPE_CHECKING:  # pragma: no cover
    from ._protocols import EntityLike

__all__ = ["BaseManager", "Manager"]

T = TypeVar("T", bound="EntityLike")


class BaseManager(Generic[T]):
    """Hands out querysets for one entity class.

    Attributes:
        model: the entity class (set when the manager is attached).
        name: the attribute name it is attached as.
    """

    _queryset_class: type[QuerySet[Any]] = QuerySet

    def __init__(self) -> None:
        self.model: type[T] | None = None
        self.name: str | None = None

    def contribute_to_class(self, model: type[T], name: str) -> None:
        """Attach to ``model`` as ``name`` (called by the entity metaclass)."""
        self.model = model
        self.name = name
        setattr(model, name, self)

    def __get__(self, instance: Any, owner: type) -> Any:
        if instance is not None:
            raise AttributeError(
                f"Manager isn't accessible via {owner.__name__} instances; use {owner.__name__}.{self.name}.")
        return self

    def __repr__(self) -> str:
        return f"<{type(self).__name__} for {self.model.__name__ if self.model else '?'}>"

    def get_queryset(self) -> QuerySet[T]:
        """Return a new queryset over all of this entity's items (lazy)."""
        if self.model is None:
            raise TypeError("this manager is not attached to an entity class")
        return self._queryset_class(self.model)

    @classmethod
    def from_queryset(cls, queryset_class: type[QuerySet[Any]],
                      class_name: str | None = None) -> type[BaseManager[Any]]:
        """Build a manager class exposing ``queryset_class``'s public methods."""
        def make(name: str) -> Any:
            def method(self: BaseManager[Any], *args: Any, **kwargs: Any) -> Any:
                return getattr(self.get_queryset(), name)(*args, **kwargs)
            method.__name__ = name
            method.__doc__ = getattr(queryset_class, name).__doc__
            return method

        attrs: dict[str, Any] = {"_queryset_class": queryset_class}
        for name, _member in inspect.getmembers(queryset_class, predicate=inspect.isfunction):
            if name.startswith("_") or hasattr(cls, name) or name == "as_manager" \
                    or getattr(_member, "queryset_only", False):  # Django's guard: no Entity.objects.delete()
                continue
            attrs[name] = make(name)
        return type(class_name or f"{cls.__name__}From{queryset_class.__name__}", (cls,), attrs)


class Manager(BaseManager.from_queryset(QuerySet)):  # type: ignore[misc]
    """The default manager (``Entity.objects``): every :class:`QuerySet` method, plus writes."""
