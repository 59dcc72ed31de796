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
import reprlib
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Mapping

from pynamodb import attributes as pa
from pynamodb.constants import LIST, MAP, NUMBER, STRING

from . import _codec, registry
from .exceptions import UnreadableItem, ValidationError
from .keys import format_datetime, parse_datetime

_MISSING = object()
#: ints strictly inside this bound have at most 38 digits: DynamoDB stores them as they are
_INT_BOUND = 10 ** _codec.MAX_DIGITS

__all__ = [
    "Field", "String", "Integer", "Number", "Decimal", "Boolean", "DateTime", "ULID", "Binary",
    "List", "Map", "Set", "Version", "TTL", "Reference", "unreadable_item", "validate_values",
]


class Field:
    """Mixin giving a PynamoDB attribute dynorm's validation and metadata.

    Attributes:
        name: the field's Python name (set when the entity class is built).
        sortable_text: True when the stored text sorts like the value (strings, ULIDs,
            datetimes), so range lookups may go into a KeyConditionExpression.
        ordered_key_text: True when the field's text in a key template (``key_encoding =
            "ordered"``, no format spec) sorts like its values: strings, ULIDs and datetimes, and
            numbers, whose key text is canonical and sorts numerically. ``order_by(field)`` may
            then stand for the sort key of an access path where the field is the first
            sort-key field not pinned by an equality.
        kind: the dynorm field kind this field stores like (``"Integer"``, ``"DateTime"``, ...);
            a user's subclass inherits its base's kind (migration state files record it).
        is_version: the field is the item's optimistic-locking version (``fields.Version``).
        is_set: ``F(name).add()``/``discard()`` apply (``fields.Set``).
        is_list: ``F(name).append()`` applies (``fields.List``).
    """

    sortable_text: ClassVar[bool] = False
    ordered_key_text: ClassVar[bool] = False
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

    if TYPE_CHECKING:  # the PynamoDB attribute's methods, never defined here (it would shadow it)
        def serialize(self, value: Any) -> Any: ...
        def deserialize(self, value: Any) -> Any: ...

    # -- unique=True (dynorm.constraints) ---------------------------------------------------
    unique: bool = False

    def __init__(self, *args: Any, unique: bool = False, **kwargs: Any) -> None:
        """Take dynorm's ``unique=True`` (a :class:`dynorm.UniqueConstraint` on this field alone, see
        ``docs/constraints.md``); every other argument goes to the PynamoDB attribute."""
        super().__init__(*args, **kwargs)
        self.unique = bool(unique)
    # -- end unique=True ----------------------------------------------------------------------

    def __get__(self, instance: Any, owner: Any) -> Any:
        """Return the field's value on an instance (the attribute itself on the class).

        A field an ``only()`` query did not read is *deferred*: reading it loads the
        deferred fields with one GetItem (as Django's deferred fields do) instead of
        showing ``None`` or the default as if it had been read.
        """
        if instance is None:
            return self
        values = instance.attribute_values
        name = instance._dynamo_to_python_attrs.get(self.attr_name, self.attr_name)
        value = values.get(name, _MISSING)
        if value is not _MISSING:
            return value
        state = instance.__dict__.get("_state")  # none yet (a decoded item): nothing is deferred
        deferred = state.deferred if state is not None else None
        if deferred is not None and name in deferred[0]:
            deferred[1](instance, name)
            return instance.attribute_values.get(name)
        return None

    def writer(self) -> tuple[str, str, Any]:
        """Return ``(attribute name, DynamoDB type, serialize)`` for writing a value of this field.

        ``serialize`` is ``None`` when the field stores its value as it is (PynamoDB's own
        ``Attribute.serialize``, which returns the value): a write then skips the call.
        """
        serialize = None if type(self).serialize is pa.Attribute.serialize else self.serialize
        return self.attr_name, self.attr_type, serialize

    def key_reader(self) -> Callable[[Any], Any] | None:
        """Return the function giving a value as an instance holds it once stored and read back, or ``None``.

        A key template placeholder of this field with a format spec renders that value
        (:meth:`dynorm.keys.KeyTemplate.reading`), so the keys written, queried and rendered again
        from the stored item agree. ``None`` (the default): every value reads back as one that a
        spec renders alike.
        """
        return None

    def as_read(self, value: Any) -> Any:
        """Return ``value`` as an instance reading it back holds it: ``deserialize(serialize(value))``.

        The one reader behind every :meth:`key_reader` that returns it. It relies on
        :meth:`serialize` giving the text DynamoDB stores (for numbers, the canonical text DynamoDB
        returns: :func:`dynorm._codec.number_text`). A value that is not of this field's
        ``python_types`` (a bool among them only when declared), or that the field cannot store, is
        returned unchanged, for the key to refuse it naming the field. No request.

        Args:
            value (Any): a value of this field, as given or validated.

        Returns:
            the value an instance reading the stored item holds (``Decimal("-0.0")`` ->
            ``Decimal("0")`` for a :class:`Decimal`; ``Decimal("1.850")`` -> the float ``1.85`` for a
            :class:`Number`), or ``value`` itself.
        """
        if not isinstance(value, self.python_types) or (type(value) is bool and bool not in self.python_types):
            return value
        try:
            return self.deserialize(self.serialize(value))
        except (_codec.BadValue, ValueError, TypeError, ArithmeticError):
            return value

    def neighbour(self, value: Any, step: int) -> Any | None:
        """Return the closest value after (``step=1``) or before (``-1``) ``value``, or ``None``.

        Used to turn a strict bound (``lt``/``gt``) into an inclusive one where DynamoDB
        needs one condition (``BETWEEN``). ``None``: not defined for this field.
        """
        return None

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
            f"{entity}.{self.name}={_short(value)}: expected {self.type_label}, got "
            f"{type(value).__name__}{why}.", entity=entity, field=self.name, value=value)

    def _refuse(self, value: Any, entity: str, exc: _codec.BadValue) -> None:
        """Raise the :class:`ValidationError` for a value DynamoDB would refuse or change."""
        raise ValidationError(f"{entity}.{self.name}={_short(value)}: {exc}; nothing was sent.",
                              entity=entity, field=self.name, value=value) from None


_repr = reprlib.Repr()
_repr.maxlevel = 3
_repr.maxstring = _repr.maxother = 80


def _short(value: Any) -> str:
    """A bounded repr for messages: a value nested 2,000 deep or 400 KB long stays one short line."""
    return _repr.repr(value)


class String(Field, pa.UnicodeAttribute):
    """A string (DynamoDB ``S``); strings with lone surrogates (no UTF-8 form) are refused."""

    kind = "String"

    sortable_text = True
    ordered_key_text = True
    python_types = (str,)
    type_label = "a string"

    def validate(self, value: Any, entity: str = "?") -> Any:
        if type(value) is str and value.isascii() and str in self.python_types:
            return value  # what the checks below conclude for a plain ASCII string, at a fraction of the CPU
        value = super().validate(value, entity)
        if value is not None and not value.isascii():
            try:
                _codec.check_text(value)
            except _codec.BadValue as exc:
                self._refuse(value, entity, exc)
        return value


class _Numeric(Field):
    """Shared by the ``N`` fields: exact text both ways, values DynamoDB would change refused."""

    ordered_key_text = True  # keys.number_text: canonical key text in numeric order

    def validate(self, value: Any, entity: str = "?") -> Any:
        if type(value) is int and -_INT_BOUND < value < _INT_BOUND and int in self.python_types:
            return value  # an int of at most 38 digits passes every check below (_codec.number_text's fast path)
        value = super().validate(value, entity)
        if value is not None:
            try:
                _codec.number_text(value)
            except _codec.BadValue as exc:
                self._refuse(value, entity, exc)
        return value

    def serialize(self, value: Any) -> str:
        """Render the number as DynamoDB ``N`` text, exactly (never through a float)."""
        return _codec.number_text(value)

    def deserialize(self, value: str) -> Any:
        """Read ``N`` text: an int when integral in form; a non-integral number reads back as the
        float whose shortest repr is the stored text (``"0.1"`` -> ``0.1``), else a
        :class:`decimal.Decimal` (nothing is rounded). The stored text cannot say whether a float
        or a Decimal was written: use :class:`Decimal` to always read Decimals."""
        return _read_number(value)


def _read_number(text: str) -> int | float | decimal.Decimal:
    if "." not in text and "e" not in text and "E" not in text:
        return int(text)
    f = float(text)
    exact = decimal.Decimal(text)
    return f if decimal.Decimal(repr(f)) == exact else exact


class Integer(_Numeric, pa.NumberAttribute):
    """An integer (DynamoDB ``N``); booleans, and ints of more than 38 significant digits, are refused."""

    kind = "Integer"

    python_types = (int,)
    type_label = "an integer"

    def neighbour(self, value: Any, step: int) -> Any | None:
        """Return ``value + step`` (no integer lies between them)."""
        return value + step

    def deserialize(self, value: str) -> Any:
        """Read ``N`` text as an int (a non-integral number another writer stored comes back as is)."""
        result = _read_number(value)
        if not isinstance(result, int) and result == int(result):
            return int(result)
        return result


class Number(_Numeric, pa.NumberAttribute):
    """An int, float or Decimal (DynamoDB ``N``), stored exactly.

    A Decimal is stored with all its digits (never through a float). Reading gives an int
    when the stored number is integral in form; a non-integral number reads back as the float
    whose shortest repr is the stored text (so ``Decimal("0.1")`` reads back as ``0.1``), else
    as a Decimal. The stored text cannot say which type was written: :class:`Decimal` gives
    Decimals always. NaN, infinity, more than 38 significant digits and magnitudes outside
    1E-130 .. 9.99E+125 are refused before any request (:class:`dynorm.ValidationError`).
    """

    kind = "Number"

    python_types = (int, float, decimal.Decimal)
    type_label = "a number"

    def key_reader(self) -> Callable[[Any], Any] | None:
        """Return :meth:`~Field.as_read`: a Decimal given may read back as a float that a spec renders
        otherwise (``Decimal("1.850")`` is the float ``1.85``: ``{n:.1f}`` gives ``1.9``, not the
        Decimal's ``1.8``), the float ``1e23`` as the int ``10**23``."""
        return self.as_read


class Decimal(Field, pa.Attribute[decimal.Decimal]):
    """An exact decimal (DynamoDB ``N``), returned as :class:`decimal.Decimal`."""

    kind = "Decimal"

    ordered_key_text = True  # keys.number_text: canonical key text in numeric order
    attr_type = NUMBER
    python_types = (int, decimal.Decimal, float)
    type_label = "a Decimal or int"

    def validate(self, value: Any, entity: str = "?") -> Any:
        value = super().validate(value, entity)
        if value is None:
            return None
        result = decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value)
        try:
            _codec.number_text(result)
        except _codec.BadValue as exc:
            self._refuse(value, entity, exc)
        return result

    def serialize(self, value: Any) -> str:
        """Render the value as the ``N`` text DynamoDB stores (:func:`dynorm._codec.number_text`); a float
        as the Decimal of its shortest repr, as :meth:`validate` takes it."""
        return _codec.number_text(decimal.Decimal(repr(value)) if isinstance(value, float) else decimal.Decimal(value))

    def deserialize(self, value: Any) -> decimal.Decimal:
        """Read ``N`` text as the :class:`decimal.Decimal` of that text (the form DynamoDB returns:
        ``Decimal("1.5")`` for a ``Decimal("1.50")`` written)."""
        return decimal.Decimal(value)

    def key_reader(self) -> Callable[[Any], Any] | None:
        """Return :meth:`~Field.as_read`: DynamoDB stores one text for equal numbers, so a Decimal reads
        back in its canonical form, which a spec can render otherwise than the form given
        (``{d:.1f}`` of ``Decimal("-0.0")`` is ``-0.0``, of the ``Decimal("0")`` read back ``0.0``;
        ``{d:g}`` of ``Decimal("1E+2")`` is ``1e+2``, read back ``100``)."""
        return self.as_read


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

    Naive datetimes are taken to be UTC. Values come back as aware UTC datetimes: the instant
    written, whatever offset it was given in (the stored text is UTC, ``...Z``). Text another
    writer stored with an offset (``2026-01-01T10:00:00+02:00``) reads as that instant in UTC
    (08:00Z); text without one is taken to be UTC.
    """

    kind = "DateTime"

    attr_type = STRING
    sortable_text = True
    ordered_key_text = True
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
        if value is not None and value.year in (1, 9999):  # only these can leave 1..9999 in UTC
            try:
                value.astimezone(_dt.timezone.utc)
            except OverflowError:
                self._fail(value, entity, " that falls outside years 1..9999 once converted to UTC")
        return value

    def serialize(self, value: _dt.datetime) -> str:
        return format_datetime(value)

    def neighbour(self, value: Any, step: int) -> Any | None:
        """Return ``value`` moved by one microsecond, the resolution stored."""
        try:
            return value + _dt.timedelta(microseconds=step)
        except OverflowError:
            return None

    def deserialize(self, value: str) -> _dt.datetime:
        """Read stored ISO-8601 text as an aware UTC datetime of the same instant (:func:`~dynorm.keys.parse_datetime`).

        Raises:
            ValueError: not ISO-8601 text, or an instant that falls outside years 1..9999 in UTC.
        """
        return parse_datetime(value)


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
    ordered_key_text = True
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


class Binary(Field, pa.BinaryAttribute):
    """Bytes, stored as DynamoDB's binary type ``B`` (raw bytes, no base64 text in the item).

    ``B`` is one of the three key types (with ``S`` and ``N``): a Binary field can be a key
    attribute of a multi-attribute GSI (``{"pk": {"digest": "B"}}``), where items sort by
    unsigned byte order. Accepts ``bytes``, ``bytearray`` and ``memoryview``; returns ``bytes``.
    An empty value is stored (DynamoDB allows it outside keys) but refused in an index key
    attribute, before any request.
    """

    kind = "Binary"

    python_types = (bytes, bytearray, memoryview)
    type_label = "bytes"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("legacy_encoding", False)  # raw B values, not PynamoDB 5's base64 text
        super().__init__(**kwargs)

    def validate(self, value: Any, entity: str = "?") -> Any:
        value = super().validate(value, entity)
        return None if value is None else bytes(value)

    def neighbour(self, value: Any, step: int) -> Any | None:
        """The smallest bytes after ``value`` (``value + b"\\x00"``); none before."""
        return bytes(value) + b"\x00" if step > 0 else None


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
            _check_plain(self, value, entity)
        return value


def _check_plain(field: Field, value: Any, entity: str) -> None:
    """Refuse a value the plain codec cannot store exactly (types, numbers, nesting, keys, text)."""
    try:
        _codec.to_av(value)
    except TypeError as exc:
        field._fail(value, entity, f" ({exc})")
    except _codec.BadValue as exc:
        field._refuse(value, entity, exc)


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
        if value:  # an empty set is not stored (the attribute is left out), so it needs no encoding
            _check_plain(self, set(value), entity)
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
            _check_plain(self, value, entity)
            return dict(value)
        if len(fields) == 1 and isinstance(value, str):
            _check_plain(self, value, entity)
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



def unreadable_item(cls: Any, raw: Mapping[str, Any], error: BaseException,
                    key_attributes: Iterable[str]) -> UnreadableItem:
    """Describe why a stored item could not be decoded into ``cls`` (pure; no I/O).

    Tries each attribute the class declares, in order, to find the one that fails: stored
    with another DynamoDB type than the field reads, or refused by the field's decoder.

    Args:
        cls: the entity class the item's type attribute names.
        raw: the item in DynamoDB JSON.
        error: what decoding raised.
        key_attributes: the table's key attribute names (PK, SK), to name the item.

    Returns:
        an :class:`UnreadableItem` naming entity, table key, attribute and stored value.
    """
    key = {a: next(iter(raw[a].values())) for a in key_attributes if a and a in raw}
    attribute = stored = None
    why = f"{type(error).__name__}: {error}"
    for name, attr in cls.get_attributes().items():
        av = raw.get(attr.attr_name)
        if not av or "NULL" in av:
            continue
        kind = next(iter(av))
        if attr.attr_type not in av:
            attribute, stored = attr.attr_name, av
            why = (f"it is stored as {kind} but {cls.__name__}.{name} ({type(attr).__name__}) reads "
                   f"{attr.attr_type}")
            break
        try:
            attr.deserialize(av[attr.attr_type])
        except Exception as exc:  # noqa: BLE001 - any decoder failure is the answer sought
            attribute, stored = attr.attr_name, av
            why = f"{cls.__name__}.{name} ({type(attr).__name__}) cannot read it: {type(exc).__name__}: {exc}"
            break
    keytext = ", ".join(f"{a}={v!r}" for a, v in key.items())
    where = f"attribute {attribute!r} = {_short(stored)}: {why}" if attribute else why
    return UnreadableItem(f"{cls.__name__} item {keytext} cannot be read: {where}.", entity=cls.__name__,
                          key=key, attribute=attribute, stored=stored, raw=raw)


def decode_item(cls: Any, raw: Mapping[str, Any]) -> Any:
    """Decode one item read by key (``refresh_from_db()``, a deferred-field load).

    Raises:
        UnreadableItems: the item cannot be decoded; its one error names the entity, the table
            key and the attribute (``.errors[0].raw`` is the item in DynamoDB JSON).
    """
    from .exceptions import UnreadableItems

    try:
        return cls.from_raw_data(dict(raw))
    except Exception as exc:  # noqa: BLE001 - pynamodb raises several kinds
        tmeta = cls._meta.table._meta
        problem = unreadable_item(cls, raw, exc, (tmeta.pk_attribute, tmeta.sk_attribute or ""))
        raise UnreadableItems(f"{problem} Repair it (.errors[0].raw) or read it by hand.", [problem]) from exc


def validate_values(meta: Any, values: Mapping[str, Any]) -> None:
    """Validate plain field values up front (before a read that precedes a write, as in
    ``get_or_create``), so a bad value is refused before any request.

    Args:
        meta: the entity's ``Options``; values: field name -> value (names that are not fields,
            e.g. lookups, and ``None`` values are left to the call that uses them).

    Raises:
        ValidationError: naming entity, field and value.
    """
    for name, value in values.items():
        f = meta.fields.get(name)
        if f is not None and value is not None:
            f.validate(value, meta.entity)
