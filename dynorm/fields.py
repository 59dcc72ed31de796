"""Field declarations for entities, built on PynamoDB attributes.

Each field is a PynamoDB :class:`~pynamodb.attributes.Attribute` (so entities stay valid
PynamoDB models) plus :meth:`Field.validate`, which checks a Python value before any
request is sent and raises :class:`dynorm.ValidationError` naming entity, field and value.

Common arguments of every field:
    null (bool): ``None`` is allowed (the attribute is then not written). Default ``False``
        unless a ``default`` is given.
    default: a value or a callable, used for new and loaded instances.
    attr_name (str): the attribute name in DynamoDB when it differs from the field name
        (``fields.String(attr_name="productId")``).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import re
from typing import TYPE_CHECKING, Any, ClassVar

from pynamodb import attributes as pa
from pynamodb.constants import LIST, MAP, NUMBER, STRING

from . import _codec, registry
from .exceptions import ValidationError
from .keys import format_datetime

__all__ = [
    "Field", "String", "Integer", "Number", "Decimal", "Boolean", "DateTime", "ULID",
    "List", "Map", "Set", "Version", "TTL", "Reference",
]


class Field:
    """Mixin giving a PynamoDB attribute dynorm's validation and metadata.

    Attributes:
        name: the field's Python name (set when the entity class is built).
        sortable_text: True when the stored text sorts like the value (strings, ULIDs,
            datetimes), so range lookups may go into a KeyConditionExpression.
        kind: the dynorm field kind this field stores like (``"Integer"``, ``"DateTime"``, ...);
            a user's subclass inherits its base's kind (migration state files record it).
        is_version: the field is the item's optimistic-locking version (``fields.Version``).
        is_set: ``F(name).add()``/``discard()`` apply (``fields.Set``).
        is_list: ``F(name).append()`` applies (``fields.List``).
    """

    sortable_text: ClassVar[bool] = False
    kind: ClassVar[str] = "Field"
    is_version: ClassVar[bool] = False
    is_set: ClassVar[bool] = False
    is_list: ClassVar[bool] = False
    python_types: ClassVar[tuple[type, ...]] = (object,)
    type_label: ClassVar[str] = "value"
    name: str = ""
    # provided by the PynamoDB attribute each field also derives from
    attr_name: str
    attr_type: str
    null: bool

    if TYPE_CHECKING:  # the PynamoDB attribute's method, never defined here (it would shadow it)
        def serialize(self, value: Any) -> Any: ...

    def validate(self, value: Any, entity: str = "?") -> Any:
        """Check (and normalize) a value for this field.

        Args:
            value: the Python value; ``None`` is accepted here (required-ness is checked
                on save by :meth:`check_required`).
            entity: entity class name for the error message.

        Returns:
            The value to store on the instance.

        Raises:
            ValidationError: the value has the wrong type or is out of range.
        """
        if value is None:
            return None
        if isinstance(value, bool) and bool not in self.python_types:
            self._fail(value, entity)
        if not isinstance(value, self.python_types):
            self._fail(value, entity)
        return value

    def check_required(self, value: Any, entity: str = "?") -> None:
        """Raise :class:`ValidationError` when ``value`` is ``None`` and the field is not nullable."""
        if value is None and not getattr(self, "null", False):
            raise ValidationError(
                f"{entity}.{self.name} is required but is None; give it a value or declare it null=True.",
                entity=entity, field=self.name, value=None)

    def _fail(self, value: Any, entity: str, why: str = "") -> None:
        raise ValidationError(
            f"{entity}.{self.name}={value!r}: expected {self.type_label}, got "
            f"{type(value).__name__}{why}.", entity=entity, field=self.name, value=value)


class String(Field, pa.UnicodeAttribute):
    """A string (DynamoDB ``S``)."""

    kind = "String"

    sortable_text = True
    python_types = (str,)
    type_label = "a string"


class Integer(Field, pa.NumberAttribute):
    """An integer (DynamoDB ``N``); booleans are refused."""

    kind = "Integer"

    python_types = (int,)
    type_label = "an integer"

    def deserialize(self, value: Any) -> Any:
        result = super().deserialize(value)
        return int(result) if isinstance(result, float) and result.is_integer() else result


class Number(Field, pa.NumberAttribute):
    """An int or float (DynamoDB ``N``), as PynamoDB's NumberAttribute."""

    kind = "Number"

    python_types = (int, float, decimal.Decimal)
    type_label = "a number"

    def validate(self, value: Any, entity: str = "?") -> Any:
        value = super().validate(value, entity)
        return float(value) if isinstance(value, decimal.Decimal) else value


class Decimal(Field, pa.Attribute[decimal.Decimal]):
    """An exact decimal (DynamoDB ``N``), returned as :class:`decimal.Decimal`."""

    kind = "Decimal"

    attr_type = NUMBER
    python_types = (int, decimal.Decimal, float)
    type_label = "a Decimal or int"

    def validate(self, value: Any, entity: str = "?") -> Any:
        value = super().validate(value, entity)
        if value is None:
            return None
        result = decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value)
        if not result.is_finite():
            self._fail(value, entity, " (NaN and infinity cannot be stored)")
        return result

    def serialize(self, value: Any) -> str:
        return _codec.to_av(decimal.Decimal(value))["N"]

    def deserialize(self, value: Any) -> decimal.Decimal:
        return decimal.Decimal(value)


class Boolean(Field, pa.BooleanAttribute):
    """A boolean (DynamoDB ``BOOL``)."""

    kind = "Boolean"

    python_types = (bool,)
    type_label = "a bool"


class DateTime(Field, pa.Attribute[_dt.datetime]):
    """A timezone-aware datetime stored as sortable UTC ISO-8601 text (``S``).

    Args:
        auto_now (bool): set to the current time on every save.
        auto_now_add (bool): set to the current time when a new instance is made.

    Naive datetimes are taken to be UTC. Values come back as aware UTC datetimes.
    """

    kind = "DateTime"

    attr_type = STRING
    sortable_text = True
    python_types = (_dt.datetime,)
    type_label = "a datetime"

    def __init__(self, *, auto_now: bool = False, auto_now_add: bool = False, **kwargs: Any) -> None:
        if auto_now_add or auto_now:
            kwargs.setdefault("default_for_new", _utcnow)
        super().__init__(**kwargs)
        self.auto_now = auto_now
        self.auto_now_add = auto_now_add

    def validate(self, value: Any, entity: str = "?") -> Any:
        value = super().validate(value, entity)
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return value

    def serialize(self, value: _dt.datetime) -> str:
        return format_datetime(value)

    def deserialize(self, value: str) -> _dt.datetime:
        # fromisoformat is C code, ~10x faster than strptime for the fixed format we write
        return _dt.datetime.fromisoformat(value[:-1] if value.endswith("Z") else value).replace(
            tzinfo=_dt.timezone.utc)


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


# 26 characters of Crockford base32; the first digit is at most 7 (128-bit value).
_ULID_TEXT = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}", re.IGNORECASE)


def _new_ulid() -> str:
    from ulid import ULID as _ULID

    return str(_ULID())


class ULID(Field, pa.UnicodeAttribute):
    """A ULID stored as its 26-character text (sortable by creation time).

    Args:
        auto (bool): give new instances a fresh ULID when none is passed.

    Accepts a ``ulid.ULID`` or its text; stores and returns the text.
    """

    kind = "ULID"

    sortable_text = True
    python_types = (str,)
    type_label = "a ULID (26 characters of Crockford base32)"

    def __init__(self, *, auto: bool = False, **kwargs: Any) -> None:
        if auto:
            kwargs.setdefault("default_for_new", _new_ulid)
        super().__init__(**kwargs)
        self.auto = auto

    def validate(self, value: Any, entity: str = "?") -> Any:
        if value is not None and type(value).__name__ == "ULID":
            return str(value)
        value = super().validate(value, entity)
        if value is not None and not _ULID_TEXT.fullmatch(value):
            self._fail(value, entity, " text that is not a valid ULID")
        return value


class _Plain(Field, pa.Attribute[Any]):
    """A value stored through dynorm's plain codec (lists and maps of any JSON-like values)."""

    def serialize(self, value: Any) -> Any:
        av = _codec.to_av(value)
        return av[self.attr_type]

    def deserialize(self, value: Any) -> Any:
        return _codec.from_av({self.attr_type: value})

    def validate(self, value: Any, entity: str = "?") -> Any:
        value = super().validate(value, entity)
        if value is not None:
            try:
                _codec.to_av(value)
            except TypeError as exc:
                self._fail(value, entity, f" ({exc})")
            bad = _empty_map_key(value)
            if bad is not None:
                self._fail(value, entity, f" (a map key at {bad or 'the top'} is empty; DynamoDB needs non-empty keys)")
        return value


def _empty_map_key(value: Any, path: str = "") -> str | None:
    """Path of the first empty map key inside ``value`` (``None`` when there is none)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "":
                return path
            found = _empty_map_key(v, f"{path}.{k}")
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = _empty_map_key(v, f"{path}[{i}]")
            if found is not None:
                return found
    return None


class List(_Plain):
    """A list of plain values (DynamoDB ``L``): strings, numbers, bools, maps, lists."""

    kind = "List"
    is_list = True

    attr_type = LIST
    python_types = (list, tuple)
    type_label = "a list"

    def validate(self, value: Any, entity: str = "?") -> Any:
        value = super().validate(value, entity)
        return list(value) if isinstance(value, tuple) else value


class Map(_Plain):
    """A dict of plain values (DynamoDB ``M``) with string keys."""

    kind = "Map"

    attr_type = MAP
    python_types = (dict,)
    type_label = "a dict"


class Set(Field, pa.Attribute[Any]):
    """A set of strings or of numbers (DynamoDB ``SS`` / ``NS``).

    Args:
        of: ``str`` (default) or ``int``/``float``/``decimal.Decimal``.

    An empty set is not stored (DynamoDB has no empty sets) and reads back as ``set()``.
    """

    kind = "Set"
    is_set = True

    python_types = (set, frozenset)
    type_label = "a set"

    def __init__(self, of: type = str, **kwargs: Any) -> None:
        if of not in (str, int, float, decimal.Decimal):
            raise TypeError("fields.Set(of=...) takes str, int, float or decimal.Decimal")
        kwargs.setdefault("null", True)
        if "default_for_new" not in kwargs:
            kwargs.setdefault("default", set)  # DynamoDB stores no empty set: missing reads as set()
        self.of = of
        self.attr_type = "SS" if of is str else "NS"
        super().__init__(**kwargs)

    def validate(self, value: Any, entity: str = "?") -> Any:
        value = super().validate(value, entity)
        if value is None:
            return None
        allowed: tuple[type, ...] = (str,) if self.of is str else (int, float, decimal.Decimal)
        bad = [v for v in value if isinstance(v, bool) or not isinstance(v, allowed)]
        if bad:
            self._fail(value, entity, f" (element {bad[0]!r} is not {self.of.__name__})")
        return set(value)

    def serialize(self, value: Any) -> Any:
        if not value:
            return None
        return _codec.to_av(set(value))[self.attr_type]

    def deserialize(self, value: Any) -> Any:
        result = _codec.from_av({self.attr_type: value})
        if self.of in (float, decimal.Decimal):
            return {self.of(v) for v in result}
        return result


class Reference(_Plain):
    """A reference to another entity, stored as a map of its primary-key fields (``M``).

    Args:
        target: the referenced entity class, or its class name (``"Person"``, or
            ``"app.models.Person"`` when two entities share a class name), resolved as soon as
            that class is defined; an ambiguous name raises :class:`dynorm.ModelError`.

    Assign an instance, a key dict, or (one-field primary keys) the bare key value; the
    field reads back as the key dict. ``obj.related(name)`` returns the referenced instance
    (GetItem, or nothing when the queryset used ``prefetch(name)``: one BatchGetItem per
    100 keys for all results).
    """

    kind = "Reference"

    attr_type = MAP
    python_types = (dict, object)
    type_label = "an entity instance or key dict"

    def __init__(self, target: Any, **kwargs: Any) -> None:
        kwargs.setdefault("null", True)
        super().__init__(**kwargs)
        self._target = target
        self._target_name = target if isinstance(target, str) else None
        if isinstance(target, str):
            registry.add_pending_reference(self)  # resolved when the class of that name is built

    @property
    def target(self) -> Any:
        """The referenced entity class.

        Raises:
            ModelError: a name given as a string matches no entity class, or several.
        """
        if isinstance(self._target, str):
            return registry.resolve_reference(self, required=True)
        return self._target

    def validate(self, value: Any, entity: str = "?") -> Any:
        if value is None:
            return None
        target = self.target
        fields = target._meta.key_fields
        if isinstance(value, target):
            return dict(value.key)
        if isinstance(value, dict):
            missing = [f for f in fields if value.get(f) is None]
            if missing or set(value) - set(fields):
                self._fail(value, entity, f" (a {target.__name__} key needs exactly {', '.join(fields)})")
            return dict(value)
        if len(fields) == 1 and isinstance(value, str):
            return {fields[0]: value}
        self._fail(value, entity)
        return None


class Version(Field, pa.VersionAttribute):
    """The item's version number; declaring it turns on optimistic locking.

    ``save()`` and ``delete()`` are then conditional on the version that was read, and a
    lost race raises :class:`dynorm.StaleWrite`. The first save writes version 1.
    """

    kind = "Version"
    is_version = True

    python_types = (int,)
    type_label = "an integer version"
    null = True


class TTL(Field, pa.TTLAttribute):
    """Expiry time for DynamoDB's TTL (stored as epoch seconds, ``N``).

    Accepts an aware datetime or a :class:`datetime.timedelta` from now. Name the attribute
    in ``Table.Meta.ttl_attribute`` so ``create_table`` turns TTL on.
    """

    kind = "TTL"

    python_types = (_dt.datetime, _dt.timedelta)
    type_label = "a datetime or timedelta"

    def validate(self, value: Any, entity: str = "?") -> Any:
        value = super().validate(value, entity)
        if isinstance(value, _dt.datetime) and value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return value

