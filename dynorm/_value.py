"""The base of dynorm's internal records: what ``@dataclass`` gives them, without its cost at import.

A dataclass writes its ``__init__``, ``__repr__`` and ``__eq__`` (frozen: also ``__setattr__``,
``__delattr__`` and ``__hash__``) as source text and compiles each one when the class is created:
0.4 ms a class, 0.7 ms frozen, on Python 3.11 (3.13 compiles them together,
python/cpython#109870). dynorm's internal records cost about 15 ms of every process's start that
way, more than the whole of its own import otherwise (docs/performance.md, "Cold start"). Their
classes write ``__init__`` by hand and take the rest from :class:`Value` or :class:`FrozenValue`,
one implementation generic over the fields, so declaring one costs what declaring any class does.

The fields of a class are its ``__init__``'s parameters, in order; ``__init__`` stores each one
under its name. The public records (``Settings``, ``Plan``, ``Page``, ``Stats``, ``Capture``,
``RequestRecord``) stay dataclasses, since applications may use ``dataclasses.replace`` or
``dataclasses.fields`` on them.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, ClassVar, TypeVar

__all__ = ["FrozenValue", "Value"]

V = TypeVar("V", bound="Value")


class Value:
    """A record compared, shown and copied by its fields, as a ``@dataclass`` is.

    - ``repr``: ``Name(field=value, ...)``, the fields in ``__init__``'s order;
    - ``==``: records of the same class with equal fields (else ``NotImplemented``); unhashable,
      as a mutable dataclass is;
    - :meth:`replace`: a copy with some fields changed (``dataclasses.replace``);
    - the defaults of ``__init__`` as class attributes, and ``__match_args__``.

    Unlike a dataclass, it is not known to ``dataclasses.fields``, ``asdict`` or ``replace``, and
    a ``@dataclass`` subclass does not see its fields.
    """

    __slots__ = ()
    #: the fields: ``__init__``'s parameters after ``self``, in order (set for each subclass)
    _fields: ClassVar[tuple[str, ...]] = ()
    _key: ClassVar[Any]
    __match_args__: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__init__
        code = getattr(init, "__code__", None)  # None: object's (FrozenValue itself)
        if code is None:
            return
        fields = cls._fields = code.co_varnames[1:code.co_argcount + code.co_kwonlyargcount]
        cls.__match_args__ = fields  # type: ignore[misc]  # ``case Window(start, stop):``, as a dataclass
        # the defaults as class attributes, as a dataclass has them (``RetryPolicy.max_attempts``)
        positional = fields[:code.co_argcount - 1]
        for name, default in zip(positional[len(positional) - len(init.__defaults__ or ()):], init.__defaults__ or ()):
            setattr(cls, name, default)
        for name, default in (init.__kwdefaults__ or {}).items():
            setattr(cls, name, default)
        # the fields' values as one tuple, read in one C call, for == and hash (a 1-tuple for one
        # field: tuples compare items by identity first, so a record holding NaN equals itself)
        if len(fields) > 1:
            cls._key = attrgetter(*fields)
        else:
            get = attrgetter(*fields) if fields else None
            cls._key = staticmethod(lambda record: (get(record),) if get is not None else ())

    @recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(self._key(self) == other._key(other))  # type: ignore[attr-defined]
        return NotImplemented  # (defining __eq__ leaves the class unhashable, as a mutable dataclass)

    def replace(self: V, **changes: Any) -> V:
        """Return a copy with ``changes`` applied, as ``dataclasses.replace`` does for a dataclass.

        Args:
            changes: field name to new value.

        Returns:
            a new record of the same class (built by its ``__init__``).

        Raises:
            TypeError: a name in ``changes`` is not a field.
        """
        values = {name: getattr(self, name) for name in self._fields}
        values.update(changes)
        return type(self)(**values)


class FrozenValue(Value):
    """A :class:`Value` that cannot be changed once built, hashed by its fields (a frozen dataclass).

    Its ``__init__`` stores the fields with ``self.__dict__.update(...)``; assigning or deleting an
    attribute afterwards raises ``dataclasses.FrozenInstanceError``, as a frozen dataclass does.
    """

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(self._key(self))
