"""Pure key templates: fill, partial prefixes for ``begins_with``, delimiter-safe values.

A key template is a :meth:`str.format` string whose placeholders name entity fields, plus
the reserved ``{version}`` (the entity's key version)::

    >>> t = KeyTemplate("C#{category_id}#P#{product_id}")
    >>> t.fill({"category_id": "1", "product_id": "9"})
    'C#1#P#9'
    >>> t.prefix({"category_id": "1"}).value      # ends at the next literal
    'C#1#P#'

Values are percent-encoded so that they can never contain the delimiter (``#``): a value
``"1#P#2"`` becomes ``1%23P%232`` and cannot reach another partition or escape its prefix.
Nothing here imports PynamoDB or does I/O.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import string
from dataclasses import dataclass
from typing import Any, Mapping

from .exceptions import InvalidKeyValue, ModelError

__all__ = ["KeyTemplate", "Prefix", "encode_value", "format_datetime", "VERSION"]

VERSION = "version"
_FORMATTER = string.Formatter()


def format_datetime(value: _dt.datetime) -> str:
    """Render a datetime as fixed-width, sortable UTC ISO-8601 (``2024-05-01T12:00:00.000000Z``).

    A naive datetime is taken to be UTC already.
    """
    if value.tzinfo is not None:
        value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    # isoformat, not strftime: glibc's %Y writes year 204 as '204', which breaks the order and the read
    return value.isoformat(timespec="microseconds") + "Z"


def encode_value(value: Any, spec: str = "", *, delimiter: str = "#", entity: str = "?",
                 field: str = "?") -> str:
    """Turn one field value into its safe key text.

    Args:
        value: str, int, Decimal, float, datetime, date or any object with a meaningful
            ``str()`` (a ULID). ``None``, booleans and containers are refused.
        spec: a :func:`format` spec from the template (``04d``, ``%Y-%m-%d``) or ``""``.
        delimiter: the key delimiter; it and ``%`` are percent-encoded in the result.
        entity, field: named in the error message.

    Returns:
        The encoded text (case unchanged).

    Raises:
        InvalidKeyValue: empty, ``None``, wrong type, or a spec that does not apply.
    """
    if value is None:
        raise InvalidKeyValue(
            f"{entity}.{field} is None, but the key template needs it; give {field} a value.",
            entity=entity, field=field, value=value)
    if isinstance(value, bool) or isinstance(value, (list, tuple, set, frozenset, dict, bytes)):
        raise InvalidKeyValue(
            f"{entity}.{field}={value!r}: a {type(value).__name__} cannot be part of a key; "
            "use a string, number, datetime or ULID.", entity=entity, field=field, value=value)
    try:
        if spec:
            text = format(value, spec)
        elif isinstance(value, _dt.datetime):
            text = format_datetime(value)
        elif isinstance(value, _dt.date):
            text = value.isoformat()
        elif isinstance(value, decimal.Decimal):
            text = format(value, "f")
        else:
            text = str(value)
    except (TypeError, ValueError) as exc:
        raise InvalidKeyValue(
            f"{entity}.{field}={value!r} does not fit the key format spec {spec!r}: {exc}.",
            entity=entity, field=field, value=value) from exc
    if text == "":
        raise InvalidKeyValue(
            f"{entity}.{field} is empty, but the key template needs a non-empty value.",
            entity=entity, field=field, value=value)
    if "%" in text:
        text = text.replace("%", "%25")
    if delimiter in text:
        text = text.replace(delimiter, "".join(f"%{b:02X}" for b in delimiter.encode()))
    return text


@dataclass(frozen=True)
class Prefix:
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


class KeyTemplate:
    """A parsed key template such as ``"{version}#P#{product_id}"``.

    Args:
        template: the :meth:`str.format` string.
        delimiter: the key delimiter percent-encoded inside values (default ``#``).

    Raises:
        ModelError: a placeholder that is not a plain field name, or a ``!conversion``.
    """

    __slots__ = ("template", "delimiter", "tokens", "fields", "placeholders")

    def __init__(self, template: str, delimiter: str = "#") -> None:
        if not isinstance(template, str):
            raise ModelError(f"a key template must be a string, got {template!r}")
        self.template = template
        self.delimiter = delimiter
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

    def __repr__(self) -> str:
        return f"KeyTemplate({self.template!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeyTemplate) and other.template == self.template

    def __hash__(self) -> int:
        return hash(self.template)

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
        out: list[str] = []
        used: list[str] = []
        for literal, name, spec in self.tokens:
            out.append(literal)
            if name is None:
                continue
            if name == VERSION:
                value: Any = version
                if not version:
                    raise InvalidKeyValue(f"{entity}: the key template {self.template!r} uses "
                                          "{version} but the entity has no key_version.",
                                          entity=entity, field=VERSION, value=version)
            else:
                value = values.get(name)
                if value is None:
                    return Prefix("".join(out), tuple(used), False, name)
                used.append(name)
            out.append(encode_value(value, spec, delimiter=self.delimiter, entity=entity, field=name))
        return Prefix("".join(out), tuple(used), True, None)

    def fill(self, values: Mapping[str, Any], version: str = "", *, entity: str = "?") -> str:
        """Render the whole key.

        Raises:
            InvalidKeyValue: a placeholder's value is missing or cannot be put in a key.
        """
        result = self.prefix(values, version, entity=entity)
        if not result.complete:
            missing = result.next_field
            raise InvalidKeyValue(
                f"{entity}.{missing} is needed by the key template {self.template!r} but was not given.",
                entity=entity, field=missing, value=None)
        return result.value

    def try_fill(self, values: Mapping[str, Any], version: str = "", *, entity: str = "?") -> str | None:
        """Render the whole key, or return ``None`` when a placeholder's value is missing (sparse index).

        Raises:
            InvalidKeyValue: a value is present but cannot be put in a key.
        """
        result = self.prefix(values, version, entity=entity)
        return result.value if result.complete else None

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
