"""Pure key templates: fill, partial prefixes, order-preserving and delimiter-safe values.

A key template is a :meth:`str.format` string whose placeholders name entity fields, plus
the reserved ``{version}`` (the entity's key version)::

    >>> t = KeyTemplate("C#{category_id}#P#{product_id}")
    >>> t.fill({"category_id": "1", "product_id": "9"})
    'C#1#P#9'
    >>> t.prefix({"category_id": "1"}).value      # ends at the next literal
    'C#1#P#'

Two key encodings exist (``Table.Meta.key_encoding``):

``"ordered"`` (the default)
    DynamoDB compares sort keys as UTF-8 bytes, which is code-point order. Every character
    whose code is at most that of the *escape character* ``E`` (one past the highest
    character of the delimiter: ``$`` for ``#``) becomes ``E`` plus two upper-case hex
    digits (``#`` -> ``$23``, space -> ``$20``, ``$`` -> ``$24``); every other character is
    kept (case kept). Escaped characters sort below every kept one and in the same order as
    before, so the escape preserves order, and because the delimiter sorts below every
    character a value can produce, ``key(a) < key(b)`` exactly when ``a < b`` -- also for
    whole keys of several fields (tuple order). Numbers get a canonical, order-preserving
    form (``1.5``, ``1.50`` and ``Decimal("1.500")`` give one key; see :func:`number_text`)
    and datetimes are rendered in UTC.
``"percent"`` (dynorm before 0.2)
    ``#`` -> ``%23``, ``%`` -> ``%25``, numbers as ``str()``. Kept byte for byte so that
    existing tables keep working; it does not preserve order, so the planner never puts a
    range on such a key into a KeyConditionExpression (the read is bounded by the prefix
    and the FilterExpression makes it exact).

Nothing here imports PynamoDB or does I/O.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import re
import string
from typing import Any, Callable, Collection, Mapping

from ._value import FrozenValue
from .exceptions import InvalidKeyValue, ModelError

__all__ = [
    "KeyTemplate", "Prefix", "KeyRange", "encode_value", "escape_text", "number_text", "format_datetime",
    "parse_datetime",
    "key_range", "check_delimiter", "spec_kind", "VERSION", "ORDERED", "PERCENT", "KEY_ENCODINGS",
]

VERSION = "version"
ORDERED = "ordered"
PERCENT = "percent"
KEY_ENCODINGS = (ORDERED, PERCENT)
_FORMATTER = string.Formatter()

# -- datetimes -----------------------------------------------------------------------------


def format_datetime(value: _dt.datetime) -> str:
    """Render a datetime as fixed-width, sortable UTC ISO-8601 (``2024-05-01T12:00:00.000000Z``).

    A naive datetime is taken to be UTC already. Years below 1000 are zero-padded
    (``0999-...``), which ``strftime("%Y")`` does not do on every platform.
    """
    if value.tzinfo is not None:
        value = value.astimezone(_dt.timezone.utc)
    return (f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:"
            f"{value.second:02d}.{value.microsecond:06d}Z")


_SHORT_YEAR = re.compile(r"(\d{1,3})-\d\d-\d\d")
# an offset of less than a second (``-00:00:00.999999``): CPython 3.11's fromisoformat reads it as UTC
_SUBSECOND_OFFSET = re.compile(r"([+-])00:00:00\.(\d{1,6})$")


def parse_datetime(value: str) -> _dt.datetime:
    """Read ISO-8601 text as an aware UTC datetime of the same instant: the inverse of :func:`format_datetime`.

    Args:
        value: dynorm's ``2024-05-01T12:00:00.000000Z``; another writer's ISO-8601 text with an
            offset (``2026-01-01T10:00:00+02:00`` reads as 08:00 UTC: converted, never relabelled)
            or without one (taken to be UTC, as a naive datetime is when written); a year below
            1000 written unpadded by an older dynorm (``204-05-01T...``).

    Returns:
        an aware datetime whose ``tzinfo`` is UTC.

    Raises:
        ValueError: not ISO-8601 text, or an instant that falls outside years 1..9999 in UTC.
    """
    text = value[:-1] if value.endswith("Z") else value
    try:
        # fromisoformat is C code, ~10x faster than strptime for the fixed format we write
        parsed = _dt.datetime.fromisoformat(text)
    except ValueError:
        match = _SHORT_YEAR.match(text)
        if match is None:
            raise
        parsed = _dt.datetime.fromisoformat(match.group(1).zfill(4) + text[match.end(1):])
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=_dt.timezone.utc)
    tiny = _SUBSECOND_OFFSET.search(text) if parsed.utcoffset() == _dt.timedelta(0) else None
    if tiny is not None:
        micros = int(tiny.group(2).ljust(6, "0")) * (-1 if tiny.group(1) == "-" else 1)
        parsed = parsed.replace(tzinfo=_dt.timezone(_dt.timedelta(microseconds=micros)))
    try:
        return parsed.astimezone(_dt.timezone.utc)
    except OverflowError:
        raise ValueError(f"{value!r} falls outside years 1..9999 once converted to UTC") from None


def _utc(value: Any) -> Any:
    if isinstance(value, _dt.datetime) and value.tzinfo is not None:
        return value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return value


# -- format specs ----------------------------------------------------------------------------

_INT_SPEC = re.compile(r"0(\d+)d")
_STR_TRUNCATE = re.compile(r"\.\d+")
_DATE_ORDER = "YmdHMSf"

#: spec kinds: exact (equal keys iff equal values, order kept), lossy (order kept, equal keys
#: for different values), unordered (neither order nor equality can be read from the key)
EXACT, LOSSY, UNORDERED = "exact", "lossy", "unordered"


def spec_kind(spec: str) -> str:
    """Classify a placeholder's format spec by what its key text keeps of the value.

    Args:
        spec: the spec after ``:`` in the template (``""``, ``"06d"``, ``"%Y-%m-%d"``, ``".3"``).

    Returns:
        ``"exact"`` (no spec, or a zero-padded integer spec ``0Nd``: equal text iff equal values,
        order kept), ``"lossy"`` (order kept but different values can share a text: a strftime
        spec whose fields run from ``%Y`` down without gaps, a string truncation ``.N``) or
        ``"unordered"`` (any other spec: neither order nor equality follow from the text).
    """
    if not spec or _INT_SPEC.fullmatch(spec):
        return EXACT
    if _STR_TRUNCATE.fullmatch(spec):
        return LOSSY
    if "%" in spec:
        directives = re.findall(r"%(.)", spec.replace("%%", ""))
        if directives and _DATE_ORDER.startswith("".join(directives)):
            return LOSSY
    return UNORDERED


def _apply_spec(value: Any, spec: str) -> str:
    m = _INT_SPEC.fullmatch(spec)
    if m is not None and isinstance(value, int):
        width = int(m.group(1))
        if not 0 <= value < 10 ** width:
            raise ValueError(f"the spec {spec!r} orders only integers from 0 to {10 ** width - 1}")
    value = _utc(value)
    if isinstance(value, _dt.date) and "%Y" in spec:  # strftime does not pad years below 1000 everywhere
        year = f"{value.year:04d}"
        spec = re.sub(r"(?<!%)((?:%%)*)%Y", lambda mm: mm.group(1) + year, spec)
    return format(value, spec)


# -- numbers ---------------------------------------------------------------------------------

_EXP_BIAS = 500


def number_text(value: int | float | decimal.Decimal) -> str:
    """Render a number as canonical text whose string order is the numeric order.

    ``0`` is ``"0"``; a positive number ``d.ddd x 10**e`` is ``"P"`` + ``e + 500`` (3 digits) +
    its significant digits (``42`` -> ``P50142``, ``1.5`` -> ``P50015``); a negative number is
    ``"-"`` + ``499 - e`` (3 digits) + the nines' complement of its digits + ``"~"``
    (``-5`` -> ``-4994~``). ``'-' < '0' < 'P'`` orders the signs; equal numbers (``2``, ``2.0``,
    ``Decimal("2.00")``) give one text.

    Raises:
        ValueError: NaN, infinity, or a decimal exponent outside -500..499.
    """
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("NaN and infinity cannot be put in a key")
        dec = decimal.Decimal(repr(value))
    else:
        dec = decimal.Decimal(value)
        if not dec.is_finite():
            raise ValueError("NaN and infinity cannot be put in a key")
    if dec.is_zero():
        return "0"
    sign, digits_t, exp = dec.as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, digits_t)).rstrip("0")
    adjusted = exp + len(digits_t) - 1
    if not -_EXP_BIAS <= adjusted < _EXP_BIAS:
        raise ValueError("the number is too large or too small for a key (exponent beyond +-500)")
    if not sign:
        return f"P{adjusted + _EXP_BIAS:03d}{digits}"
    return f"-{_EXP_BIAS - 1 - adjusted:03d}{digits.translate(_NINES)}~"


_NINES = str.maketrans("0123456789", "9876543210")


# -- text escaping ----------------------------------------------------------------------------


def check_delimiter(delimiter: str, encoding: str = ORDERED) -> None:
    """Check that ``delimiter`` can be used with ``encoding``.

    Raises:
        ModelError: an empty delimiter, an unknown encoding, or (ordered encoding) a delimiter
            with a character that is not ASCII punctuation (letters, digits, spaces and
            non-ASCII characters cannot be escaped in an order-preserving way).
    """
    if encoding not in KEY_ENCODINGS:
        raise ModelError(f"key_encoding must be one of {', '.join(KEY_ENCODINGS)}, got {encoding!r}.")
    if not isinstance(delimiter, str) or not delimiter:
        raise ModelError("the key delimiter must be a non-empty string.")
    if encoding == ORDERED and not all(0x21 <= ord(c) <= 0x7E and not c.isalnum() for c in delimiter):
        raise ModelError(f"delimiter {delimiter!r}: with key_encoding='ordered' every character of the "
                         "delimiter must be ASCII punctuation (such as '#', the default).")


def _escape_char(delimiter: str) -> str:
    return chr(max(ord(c) for c in delimiter) + 1)


_ESCAPE_TABLES: dict[str, tuple[str, dict[int, str]]] = {}


def _ordered_table(delimiter: str) -> tuple[str, dict[int, str]]:
    table = _ESCAPE_TABLES.get(delimiter)
    if table is None:
        esc = _escape_char(delimiter)
        table = (esc, {c: f"{esc}{c:02X}" for c in range(ord(esc) + 1)})
        _ESCAPE_TABLES[delimiter] = table
    return table


def escape_text(text: str, delimiter: str = "#", encoding: str = ORDERED) -> str:
    """Escape raw key text so it holds no delimiter character and (ordered) keeps its order.

    Args:
        text: the rendered value.
        delimiter: the table's key delimiter.
        encoding: ``"ordered"`` or ``"percent"`` (see the module documentation).

    Returns:
        The escaped text.
    """
    if encoding == PERCENT:
        if "%" in text:
            text = text.replace("%", "%25")
        if delimiter in text:
            text = text.replace(delimiter, "".join(f"%{b:02X}" for b in delimiter.encode()))
        return text
    esc, table = _ordered_table(delimiter)
    # fast path: most key values (ULIDs, ids, names) have no character at or below the escape
    if min(text) > esc:
        return text
    return text.translate(table)


def encode_value(value: Any, spec: str = "", *, delimiter: str = "#", entity: str = "?",
                 field: str = "?", encoding: str = ORDERED) -> str:
    """Turn one field value into its safe key text.

    Args:
        value: str, int, Decimal, float, datetime, date or any object with a meaningful
            ``str()`` (a ULID). ``None``, booleans and containers are refused.
        spec: a :func:`format` spec from the template (``04d``, ``%Y-%m-%d``) or ``""``.
            Datetimes are converted to UTC before the spec is applied.
        delimiter: the key delimiter; escaped inside the result.
        entity, field: named in the error message.
        encoding: ``"ordered"`` (default) or ``"percent"`` (see the module documentation).

    Returns:
        The encoded text (case unchanged).

    Raises:
        InvalidKeyValue: empty, ``None``, wrong type, NaN/infinity, or a value the spec does
            not apply to or cannot order (``{seq:04d}`` with ``-5`` or ``12345``).
    """
    if value is None:
        raise InvalidKeyValue(
            f"{entity}.{field} is None, but the key template needs it; give {field} a value.",
            entity=entity, field=field, value=value)
    if isinstance(value, bool) or isinstance(value, (list, tuple, set, frozenset, dict, bytes)):
        raise InvalidKeyValue(
            f"{entity}.{field}={value!r}: a {type(value).__name__} cannot be part of a key; "
            "use a string, number, datetime or ULID.", entity=entity, field=field, value=value)
    if isinstance(value, str) and type(value) is not str:
        # a str subclass ((str, Enum) members, str subclasses with their own __str__) is stored as
        # its string content; its str() ("Color.RED") would key the item under another text
        value = str.__str__(value)
    if spec == "s" and isinstance(value, str):
        # "s" renders a string as no spec does; one path for both, so {b:s} and {b} give one text
        # for every string (a str subclass too), which lets two such templates share an attribute
        spec = ""
    ordered = encoding != PERCENT
    try:
        if type(value) is str and not spec:  # the common case first
            text = value
        elif spec:
            text = _apply_spec(value, spec) if ordered else format(value, spec)
        elif isinstance(value, _dt.datetime):
            text = format_datetime(value)
        elif isinstance(value, _dt.date):
            text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}" if ordered else value.isoformat()
        elif ordered and isinstance(value, (int, float, decimal.Decimal)):
            text = number_text(value)
        elif isinstance(value, decimal.Decimal):
            text = format(value, "f")
        else:
            text = str(value)
    except (TypeError, ValueError, OverflowError, decimal.InvalidOperation) as exc:
        raise InvalidKeyValue(
            f"{entity}.{field}={value!r} does not fit the key format spec {spec!r}: {exc}." if spec else
            f"{entity}.{field}={value!r} cannot be put in a key: {exc}.",
            entity=entity, field=field, value=value) from exc
    if text == "":
        raise InvalidKeyValue(
            f"{entity}.{field} is empty, but the key template needs a non-empty value.",
            entity=entity, field=field, value=value)
    if ordered and not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidKeyValue(f"{entity}.{field}={value!r} holds a lone surrogate, which is not "
                                  "valid UTF-8 and cannot be stored.", entity=entity, field=field,
                                  value=value) from exc
    return escape_text(text, delimiter, encoding)


class Prefix(FrozenValue):
    """A (possibly partial) rendering of a key template.

    Attributes:
        value: the key text, or the prefix that ends at the literal before the first
            placeholder that was not given.
        used: the field names that went into ``value`` (in template order).
        complete: True when every placeholder was given (``value`` is the whole key).
        next_field: the first placeholder not given (``None`` when complete).
    """

    value: str
    used: tuple[str, ...]
    complete: bool
    next_field: str | None

    def __init__(self, value: str, used: tuple[str, ...], complete: bool, next_field: str | None) -> None:
        self.__dict__.update(value=value, used=used, complete=complete, next_field=next_field)


class KeyTemplate:
    """A parsed key template such as ``"{version}#P#{product_id}"``.

    Args:
        template: the :meth:`str.format` string.
        delimiter: the key delimiter escaped inside values (default ``#``).
        encoding: ``"ordered"`` (default) or ``"percent"`` (see the module documentation).

    Raises:
        ModelError: a placeholder that is not a plain field name, or a ``!conversion``.
    """

    __slots__ = ("template", "delimiter", "encoding", "tokens", "fields", "placeholders", "lossy_fields", "readers")

    def __init__(self, template: str, delimiter: str = "#", encoding: str = ORDERED) -> None:
        if not isinstance(template, str):
            raise ModelError(f"a key template must be a string, got {template!r}")
        if encoding not in KEY_ENCODINGS:
            raise ModelError(f"key_encoding must be one of {', '.join(KEY_ENCODINGS)}, got {encoding!r}.")
        self.template = template
        self.delimiter = delimiter
        self.encoding = encoding
        tokens: list[tuple[str, str | None, str]] = []
        try:
            parsed = list(_FORMATTER.parse(template))
        except ValueError as exc:
            raise ModelError(f"key template {template!r} is malformed: {exc}") from exc
        for literal, name, spec, conversion in parsed:
            if name is not None:
                if not name.isidentifier():
                    raise ModelError(
                        f"key template {template!r}: placeholder {{{name}}} must be a field name "
                        "(no positional fields, attribute access or indexing).")
                if conversion:
                    raise ModelError(f"key template {template!r}: conversions (!{conversion}) are not allowed.")
            tokens.append((literal, name, spec or ""))
        self.tokens = tuple(tokens)
        self.placeholders = tuple(n for _, n, _ in tokens if n is not None)
        self.fields = tuple(n for n in self.placeholders if n != VERSION)
        #: fields whose spec can give one key text to different values (equality needs a filter)
        self.lossy_fields = frozenset(n for _, n, sp in tokens if n is not None and n != VERSION
                                      and spec_kind(sp) != EXACT)
        #: field -> the value as it reads back, applied before a format spec renders it (:meth:`reading`)
        self.readers: Mapping[str, Callable[[Any], Any]] | None = None

    def reading(self, readers: Mapping[str, Callable[[Any], Any]]) -> KeyTemplate:
        """Return this template rendering the values of some fields, where a format spec applies, as they read back.

        A value and the value an item holds once stored and read back can be equal as numbers yet
        render differently through a spec (``format(Decimal("1.850"), ".1f")`` is ``1.8``, the float
        ``1.85`` read back gives ``1.9``): the reader turns the first into the second, so the keys
        written, queried and rendered again from the stored item are one text. Placeholders without
        a spec render numbers canonically (:func:`number_text`) and are left alone, except under the
        ``percent`` encoding, which renders a number as its ``str()``/``format(d, "f")``
        (``Decimal("1.50")`` is ``1.50``, read back ``1.5``).

        Args:
            readers: field name -> a function of one value returning the value as it reads back
                (it must return any value it cannot convert unchanged, for :func:`encode_value` to refuse).

        Returns:
            a copy of this template (equal to it) that applies the readers of the placeholders they
            concern, or this template itself when none of them has a reader.
        """
        used = {n: readers[n] for _, n, sp in self.tokens if n is not None and self._renders_form(sp) and n in readers}
        if not used:
            return self
        copy = KeyTemplate(self.template, self.delimiter, self.encoding)
        copy.readers = used
        return copy

    def __repr__(self) -> str:
        return f"KeyTemplate({self.template!r})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, KeyTemplate) and other.template == self.template
                and other.delimiter == self.delimiter and other.encoding == self.encoding)

    def __hash__(self) -> int:
        return hash(self.template)

    def rendered_form(self, version: str = "", text_fields: Collection[str] = ()) -> tuple[tuple[str, str, str], ...]:
        """The template as it renders, to compare two templates: equal forms render every value alike.

        Literal text is compared as it renders (``"A#{x:}"`` and ``"A#{x}"``; ``"{{"`` and a split
        literal agree); ``{version}`` becomes the key version's text (``version`` given),
        so ``"{version}#X"`` and ``"v1#X"`` agree at key version ``v1``; the spec ``s`` of a field in
        ``text_fields`` (fields whose values are always strings, which ``s`` renders exactly as no spec,
        see :func:`encode_value`) is dropped, so ``{b:s}`` and ``{b}`` agree. Anything else that could
        render differently for some value (another spec, ``s`` on a number) stays distinct.

        Args:
            version: the entity's key version (``""``: ``{version}`` stays a placeholder).
            text_fields: names of fields whose values are always strings.

        Returns:
            ``(literal before, field, spec)`` per placeholder, then ``(literal after, "", "")``.
        """
        out: list[tuple[str, str, str]] = []
        literal_text = ""
        for literal, name, spec in self.tokens:
            literal_text += literal
            if name is None:
                continue
            if name == VERSION and version:
                literal_text += version  # rendered raw, whatever its spec (see prefix())
                continue
            if spec == "s" and name in text_fields:
                spec = ""
            out.append((literal_text, name, spec))
            literal_text = ""
        out.append((literal_text, "", ""))
        return tuple(out)

    @property
    def is_constant(self) -> bool:
        """True when the template has no field placeholders (``"METADATA"``, ``"{version}#BRANDS"``)."""
        return not self.fields

    def spec_of(self, field: str) -> str:
        """Return the format spec used for ``field`` (``""`` when none)."""
        for _, name, spec in self.tokens:
            if name == field:
                return spec
        return ""

    def exact_for(self, field: str) -> bool:
        """True when equal key text means equal values of ``field`` (its spec is not lossy).

        With a lossy spec (``{day:%Y-%m-%d}``, ``{name:.3}``) an equality on the key only
        narrows the read: the planner must also put the exact value into the FilterExpression.
        """
        return field not in self.lossy_fields

    def _renders_form(self, spec: str) -> bool:
        """Whether a placeholder with ``spec`` renders a number's form, not only its value (:meth:`reading`)."""
        return bool(spec) or self.encoding == PERCENT

    def _as_read(self, field: str, spec: str, value: Any) -> Any:
        """``value`` as the placeholder of ``field`` with ``spec`` renders it (:meth:`reading`)."""
        reader = self.readers.get(field) if self.readers is not None and self._renders_form(spec) else None
        return value if reader is None else reader(value)

    def encode(self, field: str, value: Any, *, entity: str = "?", spec: str | None = None) -> str:
        """Encode one value of ``field`` as it appears in this template's keys.

        Args:
            spec: the format spec of the placeholder (a field placed twice may have two); by
                default the field's first (:meth:`spec_of`).

        Raises:
            InvalidKeyValue: the value cannot be put in a key.
        """
        if spec is None:
            spec = self.spec_of(field)
        if self.readers is not None:
            value = self._as_read(field, spec, value)
        return encode_value(value, spec, delimiter=self.delimiter, entity=entity,
                            field=field, encoding=self.encoding)

    def prefix(self, values: Mapping[str, Any], version: str = "", *, entity: str = "?") -> Prefix:
        """Render as much of the template as the given values allow.

        The result ends at the literal preceding the first placeholder missing from
        ``values`` (so ``C#{category_id}#P#{product_id}`` with ``category_id="1"`` gives
        ``C#1#P#``, which never matches category ``10``).

        Args:
            values: field name -> value; values ``None`` count as missing.
            version: the key version for ``{version}``.
            entity: named in error messages.

        Raises:
            InvalidKeyValue: a given value cannot be put in a key.
        """
        used: list[str] = []
        text, missing = self._render(values, version, entity, used)
        return Prefix(text, tuple(used), missing is None, missing)

    def _render(self, values: Mapping[str, Any], version: str, entity: str,
                used: list[str] | None = None) -> tuple[str, str | None]:
        """``(text, None)`` for the whole key, or ``(prefix, first placeholder missing)``: the one
        renderer of :meth:`prefix`, :meth:`fill` and :meth:`try_fill` (``used`` collects the fields).

        Run for every key attribute of every item written, so a plain ASCII string without a spec
        (ids, names) is escaped inline: :func:`encode_value` gives the same text for it.
        """
        out: list[str] = []
        escape = None if self.encoding == PERCENT else _ordered_table(self.delimiter)
        for literal, name, spec in self.tokens:
            out.append(literal)
            if name is None:
                continue
            if name == VERSION:
                if not version:
                    raise InvalidKeyValue(f"{entity}: the key template {self.template!r} uses "
                                          "{version} but the entity has no key_version.",
                                          entity=entity, field=VERSION, value=version)
                out.append(version)
                continue
            value = values.get(name)
            if value is None:
                return "".join(out), name
            if used is not None:
                used.append(name)
            if escape is not None and type(value) is str and not spec and value and value.isascii():
                out.append(value if min(value) > escape[0] else value.translate(escape[1]))
            else:
                if self.readers is not None:  # only templates built by reading(): strings above pay nothing
                    value = self._as_read(name, spec, value)
                out.append(encode_value(value, spec, delimiter=self.delimiter, entity=entity, field=name,
                                        encoding=self.encoding))
        return "".join(out), None

    def fill(self, values: Mapping[str, Any], version: str = "", *, entity: str = "?") -> str:
        """Render the whole key.

        Raises:
            InvalidKeyValue: a placeholder's value is missing or cannot be put in a key.
        """
        text, missing = self._render(values, version, entity)
        if missing is not None:
            raise InvalidKeyValue(
                f"{entity}.{missing} is needed by the key template {self.template!r} but was not given.",
                entity=entity, field=missing, value=None)
        return text

    def try_fill(self, values: Mapping[str, Any], version: str = "", *, entity: str = "?") -> str | None:
        """Render the whole key, or return ``None`` when a placeholder's value is missing (sparse index).

        Raises:
            InvalidKeyValue: a value is present but cannot be put in a key.
        """
        text, missing = self._render(values, version, entity)
        return text if missing is None else None

    def segments(self, version: str = "") -> list[list[tuple[str, bool]]]:
        """Split into delimiter-separated segments of ``(text, is_placeholder)`` parts.

        ``{version}`` is substituted; used by the collision check.
        """
        parts: list[tuple[str, bool]] = []
        for literal, name, _spec in self.tokens:
            if literal:
                parts.append((literal, False))
            if name is not None:
                parts.append((version, False) if name == VERSION and version else (name, True))
        segs: list[list[tuple[str, bool]]] = [[]]
        for text, is_ph in parts:
            if is_ph:
                segs[-1].append((text, True))
                continue
            pieces = text.split(self.delimiter)
            for i, piece in enumerate(pieces):
                if i:
                    segs.append([])
                if piece:
                    segs[-1].append((piece, False))
        return segs

    def ambiguities(self) -> list[tuple[str, str]]:
        """Describe the ways two different value tuples could render the same key text.

        Returns ``(kind, message)`` pairs; kind is ``"segment"``, ``"spec"`` or ``"encoding"``.

        Reported: two placeholders in one delimiter-separated segment (``{a}-{b}``, adjacent
        ``{a}{b}``, a literal in another delimiter such as ``{org}:{user}``), a lossy spec
        (``{x:.3}``, ``{day:%Y-%m-%d}``: different values share a key) or an unordered one, and
        the legacy percent encoding with a multi-character delimiter (only the whole delimiter
        is encoded, so ``acme:`` + ``bob`` meets ``acme`` + ``:bob``).
        """
        out: list[tuple[str, str]] = []
        for seg in self.segments("v"):
            names = [t for t, ph in seg if ph]
            if len(names) > 1:
                out.append(("segment", f"{', '.join('{' + n + '}' for n in names)} share one segment between "
                           f"delimiters {self.delimiter!r}, so a value's text can run into the next one's; "
                           f"separate them with {self.delimiter!r}"))
        for _lit, name, spec in self.tokens:
            if name is None or name == VERSION:
                continue
            kind = spec_kind(spec)
            if kind != EXACT:
                out.append(("spec", f"{{{name}:{spec}}} is {kind}: different values of {name} can give the same key"))
        if self.encoding == PERCENT and len(self.delimiter) > 1:
            out.append(("encoding", "key_encoding='percent' with the multi-character delimiter "
                        f"{self.delimiter!r} only encodes the whole delimiter, so values that start or end "
                        "with part of it collide; use key_encoding='ordered'"))
        return out


# -- range bounds ------------------------------------------------------------------------------


class KeyRange(FrozenValue):
    """Inclusive bounds on the key text for a range lookup (``None`` = unbounded on that side).

    ``lo == hi`` with ``empty`` set means no key can match (a reversed ``between``).
    """

    lo: str | None
    hi: str | None
    empty: bool

    def __init__(self, lo: str | None, hi: str | None, empty: bool = False) -> None:
        self.__dict__.update(lo=lo, hi=hi, empty=empty)


def _successor(prefix: str) -> str | None:
    """The smallest text greater than every text starting with ``prefix`` (``None``: there is none)."""
    text = prefix
    while text:
        last = ord(text[-1])
        if last < 0x10FFFF:
            nxt = last + 1
            if 0xD800 <= nxt <= 0xDFFF:  # surrogates are not characters; UTF-8 order skips them
                nxt = 0xE000
            return text[:-1] + chr(nxt)
        text = text[:-1]
    return None


def key_range(template: KeyTemplate, prefix: Prefix, field: str, lookup: str, value: Any, *,
              entity: str = "?") -> KeyRange | None:
    """Compute the key-text bounds that hold every key whose ``field`` satisfies a range lookup.

    The key is ``prefix.value`` followed by the encoded ``field``, which must be the
    template's last token. Bounds are inclusive (DynamoDB ``BETWEEN``); with a lossy spec they
    can hold more items than match, so the caller keeps the lookup in the FilterExpression.
    The top bound is the successor of the prefix (its last character plus one), never a
    sentinel character: every key of the prefix sorts below it, and it is not itself a key of
    this template (it does not start with the prefix).

    Args:
        template: the sort-key template.
        prefix: the rendered part before ``field`` (:meth:`KeyTemplate.prefix`).
        field: the field the lookup is on.
        lookup: ``"lt"``, ``"lte"``, ``"gt"``, ``"gte"`` or ``"between"``.
        value: the validated value (a ``(low, high)`` pair for ``between``).
        entity: named in error messages.

    Returns:
        A :class:`KeyRange`, or ``None`` when the key cannot narrow the read (legacy percent
        encoding, an unordered spec, a bound the spec cannot render, or no prefix to bound).
    """
    if template.encoding != ORDERED or not template.tokens or template.tokens[-1][1] != field:
        return None
    if spec_kind(template.spec_of(field)) == UNORDERED:
        return None
    pre = prefix.value

    def enc(v: Any) -> str:
        return pre + template.encode(field, v, entity=entity)

    try:
        if lookup in ("gt", "gte"):
            return KeyRange(enc(value), _successor(pre))
        if lookup in ("lt", "lte"):
            return KeyRange(pre or None, enc(value))
        if lookup == "between":
            lo, hi = enc(value[0]), enc(value[1])
            if lo > hi:  # str order is code-point order is UTF-8 byte order
                return KeyRange(pre, pre, empty=True) if pre else None
            return KeyRange(lo, hi)
    except InvalidKeyValue:
        return None
    return None
