"""Plain Python values <-> DynamoDB JSON attribute values (``{"S": "x"}``), without boto3.

Serialization refuses, with :class:`BadValue`, every value DynamoDB would refuse or store
changed (measured on DynamoDB Local 3.3): NaN and infinity, numbers with more than 38
significant digits or outside 1E-130 .. 9.99E+125 in magnitude, maps/lists nested more
than 31 deep (32 levels counting the attribute), strings with lone surrogates (not UTF-8),
empty map keys, map keys that are not strings (never turned into text), empty sets (at any
depth), and number sets whose elements collide once rendered. Nothing here rounds a number.
A value of a type DynamoDB cannot store raises ``TypeError`` at the top, and ``BadValue`` with
its path when it is inside a map or list.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from typing import Any, Mapping

from .keys import format_datetime

__all__ = ["BadValue", "to_av", "from_av", "number_text", "check_text", "key_size_problem",
           "av_size", "item_size", "item_from_av", "MAX_ITEM_BYTES", "MAX_DIGITS", "MAX_NESTING",
           "MAX_PARTITION_KEY_BYTES", "MAX_SORT_KEY_BYTES"]

_NUMBER_CONTEXT = decimal.Context(prec=38)

#: Significant digits DynamoDB keeps in a number (a 39th is refused, never rounded).
MAX_DIGITS = 38
#: Adjusted exponents DynamoDB accepts: magnitudes 1E-130 .. 9.99...E+125 (and zero).
_MIN_ADJUSTED, _MAX_ADJUSTED = -130, 125
#: Maps/lists inside one another in one attribute; DynamoDB Local refuses a 32nd
#: (its "32 levels" count the attribute itself).
MAX_NESTING = 31
#: Key attribute sizes in UTF-8 bytes (DynamoDB: partition <= 2048, sort <= 1024).
MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024
# ints strictly inside this bound have <= 38 digits and are always storable: the fast path
_INT_BOUND = 10 ** MAX_DIGITS


class BadValue(ValueError):
    """A value DynamoDB would refuse or store changed.

    Attributes:
        reason: what is wrong, in words (may contain ``{where}``, replaced by the path).
        path: where inside the value (``.address.city``, ``[3]``; ``""`` for the value itself).
    """

    def __init__(self, reason: str, path: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path

    def __str__(self) -> str:
        where = self.path or "the top"
        if "{where}" in self.reason:
            return self.reason.replace("{where}", where)
        return f"{self.reason} (at {self.path})" if self.path else self.reason


def number_text(value: int | float | decimal.Decimal) -> str:
    """Render a number as DynamoDB ``N`` text, exactly, or refuse it.

    Args:
        value: an int, float or Decimal (not a bool).

    Returns:
        the text DynamoDB stores and returns for that number: plain digits, no exponent, no trailing
        zero, zero as ``0`` (``Decimal("1.50")`` -> ``1.5``, ``Decimal("1E+2")`` -> ``100``, ``1e-07`` ->
        ``0.0000001``, ``Decimal("-0.0")`` -> ``0``); a float has the digits of its shortest repr.

    Raises:
        BadValue: NaN or infinity, more than 38 significant digits, or a magnitude outside
            DynamoDB's range 1E-130 .. 9.99E+125.
    """
    if type(value) is int and -_INT_BOUND < value < _INT_BOUND:
        return str(value)  # the check is this one comparison: cheaper than any memo
    seen = _RENDERED.get(id(value))
    if seen is not None and seen[0] is value:
        return seen[1]  # this very (immutable) number was checked and rendered already
    text = _number_text(value)
    if len(_RENDERED) >= _RENDERED_MAX:
        _RENDERED.clear()
    _RENDERED[id(value)] = (value, text)
    return text


#: The numbers :func:`number_text` rendered lately, by identity (the entry holds the number, so its id
#: is not reused while the entry stands): a number given to ``Entity(...)`` is checked there, again by
#: ``full_clean()`` and rendered by ``serialize()`` (three calls per number per write, issue 24): the
#: Decimal work is done once. A refused number raises every time (it is never stored here).
_RENDERED: dict[int, tuple[Any, str]] = {}
_RENDERED_MAX = 512


def _number_text(value: int | float | decimal.Decimal) -> str:
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise BadValue(f"{value!r} cannot be stored: DynamoDB has no NaN or infinity")
        d = decimal.Decimal(repr(value))
    elif isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise BadValue(f"{value!r} cannot be stored: DynamoDB has no NaN or infinity")
        d = value
    else:
        d = decimal.Decimal(value)
    if not d:
        return "0"
    digits = d.as_tuple().digits
    significant = len(digits)
    while significant > 1 and digits[significant - 1] == 0:
        significant -= 1
    if significant > MAX_DIGITS:
        raise BadValue(f"the number has {significant} significant digits; DynamoDB keeps at most {MAX_DIGITS} "
                       "and dynorm never rounds (round it yourself, or store it as a string)")
    adjusted = d.adjusted()
    if not _MIN_ADJUSTED <= adjusted <= _MAX_ADJUSTED:
        raise BadValue(f"the number's magnitude 1E{adjusted:+d} is outside DynamoDB's range "
                       "1E-130 .. 9.99E+125")
    # DynamoDB's own text (measured on DynamoDB Local): no exponent, no trailing zero ("1.50" -> "1.5",
    # "1E-7" -> "0.0000001"); sending it makes the item sent the item stored, so a value read back
    # (Field.as_read) and the keys rendered from it can be known without a request
    return format(d.normalize(_NUMBER_CONTEXT), "f")


def check_text(value: str) -> str:
    """Return ``value`` when it can be stored as UTF-8 (DynamoDB's encoding).

    Raises:
        BadValue: the string holds a lone surrogate (``"\\ud800"``), which has no UTF-8 form.
    """
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise BadValue(f"the string holds a lone surrogate {value[exc.start]!r} at index {exc.start}, "
                           "which has no UTF-8 form") from None
    return value


def key_size_problem(text: str | bytes, partition: bool) -> str | None:
    """Say why a rendered key attribute value is too long for DynamoDB, or ``None`` when it fits.

    Args:
        text: the key attribute's final text (after templates and escaping), or a binary key value.
        partition: True for a partition key (<= 2048 bytes), False for a sort key (<= 1024 bytes).
    """
    limit = MAX_PARTITION_KEY_BYTES if partition else MAX_SORT_KEY_BYTES
    if isinstance(text, bytes):
        size = len(text)
        if size <= limit:
            return None
        return f"{size} bytes, over DynamoDB's {limit}-byte limit for a {'partition' if partition else 'sort'} key"
    if len(text) * 4 <= limit:  # UTF-8 needs at most 4 bytes a character: no need to encode
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return None
    return (f"{size} bytes in UTF-8, over DynamoDB's {limit}-byte limit for a "
            f"{'partition' if partition else 'sort'} key")



def to_av(value: Any, depth: int = 1) -> dict[str, Any]:
    """Serialize a Python value to a DynamoDB attribute value, exactly or not at all.

    Args:
        value: the value; depth: the nesting level it is stored at (1: an attribute's value;
            ``1 + n`` at a document path of ``n`` parts), so maps and lists inside it stay within
            DynamoDB's 32 levels.

    Raises:
        TypeError: ``value`` itself is of a type DynamoDB cannot store.
        BadValue: a value DynamoDB would refuse or change, or one of a type it cannot store
            inside a map or list (see the module docs); ``.path`` says where inside the value.
    """
    return _to_av(value, depth)


#: DynamoDB refuses an empty SS/NS/BS anywhere in a request (measured on DynamoDB Local: "An string set
#: may not be empty", for the whole PutItem, UpdateItem, batch or transaction), at the top of an attribute
#: and inside a map or list alike. A top-level ``fields.Set`` that is empty is not stored at all (the field
#: never asks for its encoding), so this error is only ever seen for nested sets and expression operands.
_EMPTY_SET = ("an empty set at {where} cannot be stored: DynamoDB has no empty sets (it refuses the whole "
              "request); leave the entry out, or store None or an empty list there")


#: A map key that is not a string: DynamoDB map keys are strings, and turning one into text would store a
#: different value than was given (``{b"k": 1}`` read back as ``{"b'k'": 1}``, ``{1: "x"}`` as ``{"1": "x"}``).
_NOT_TEXT_KEY = ("the map key {key} at {{where}} is not a string ({kind}): DynamoDB map keys are strings, and dynorm "
                 "never turns one into text (it would read back as {text}); convert the keys to str yourself")


def _key_repr(key: Any) -> str:
    text = repr(key)
    return text if len(text) <= 60 else text[:57] + "..."


def _too_deep() -> BadValue:
    return BadValue(f"maps and lists are nested more than {MAX_NESTING} deep at {{where}}; DynamoDB "
                    "refuses deeper nesting")


def _to_av(value: Any, depth: int) -> dict[str, Any]:
    kind = type(value)  # exact-type dispatch first: isinstance(x, Mapping) is slow
    if kind is str:
        return {"S": value if value.isascii() else check_text(value)}
    if kind is int:
        return {"N": number_text(value)}
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, str):
        return {"S": check_text(value)}
    if isinstance(value, (int, float, decimal.Decimal)):
        return {"N": number_text(value)}
    if isinstance(value, (bytes, bytearray)):
        return {"B": bytes(value)}
    if isinstance(value, _dt.datetime):
        try:
            return {"S": format_datetime(value)}
        except OverflowError:
            raise BadValue(f"{value!r} falls outside years 1..9999 once converted to UTC") from None
    if kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
        if depth > MAX_NESTING:
            raise _too_deep()
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise BadValue(_NOT_TEXT_KEY.format(key=_key_repr(k), kind=type(k).__name__, text=_key_repr(str(k))))
            if not k:
                raise BadValue("a map key at {where} is empty; DynamoDB needs non-empty keys")
            try:
                out[k if k.isascii() else check_text(k)] = _to_av(v, depth + 1)
            except BadValue as exc:
                exc.path = f".{k}{exc.path}"
                raise
            except TypeError as exc:  # an unstorable value inside: say where it is
                raise BadValue(str(exc), f".{k}") from None
        return {"M": out}
    if isinstance(value, (list, tuple)):
        if depth > MAX_NESTING:
            raise _too_deep()
        items = []
        for i, v in enumerate(value):
            try:
                items.append(_to_av(v, depth + 1))
            except BadValue as exc:
                exc.path = f"[{i}]{exc.path}"
                raise
            except TypeError as exc:
                raise BadValue(str(exc), f"[{i}]") from None
        return {"L": items}
    if isinstance(value, (set, frozenset)):
        if not value:
            raise BadValue(_EMPTY_SET)
        if all(isinstance(v, str) for v in value):
            return {"SS": sorted(check_text(v) for v in value)}
        if all(isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool) for v in value):
            texts = sorted(number_text(v) for v in value)
            if len({decimal.Decimal(t) for t in texts}) != len(texts):
                raise BadValue("two numbers of the set are stored as the same number (e.g. 0.1 and "
                               "Decimal('0.1')); DynamoDB refuses duplicates in a set")
            return {"NS": texts}
        if all(isinstance(v, (bytes, bytearray)) for v in value):
            return {"BS": sorted(bytes(v) for v in value)}
        raise TypeError("a set must hold only strings, only numbers or only bytes")
    if hasattr(value, "__str__") and type(value).__name__ == "ULID":
        return {"S": str(value)}
    raise TypeError(f"cannot store a {type(value).__name__} in DynamoDB (store a str, number, bool, None, bytes, "
                    "datetime, set, list or dict there)")


def _parse_number(text: str) -> int | decimal.Decimal:
    if "." in text or "e" in text or "E" in text:
        return decimal.Decimal(text)
    return int(text)


def from_av(av: Mapping[str, Any]) -> Any:
    """Deserialize a DynamoDB attribute value to a plain Python value.

    Numbers come back as ``int`` when integral in form, else ``Decimal``.
    """
    (kind, value), = av.items()
    if kind == "S":
        return value
    if kind == "N":
        return _parse_number(value)
    if kind == "BOOL":
        return value
    if kind == "NULL":
        return None
    if kind == "M":
        return {k: from_av(v) for k, v in value.items()}
    if kind == "L":
        return [from_av(v) for v in value]
    if kind == "SS":
        return set(value)
    if kind == "NS":
        return {_parse_number(v) for v in value}
    if kind == "B":
        return value
    if kind == "BS":
        return set(value)
    raise TypeError(f"unknown DynamoDB attribute type {kind!r}")


#: DynamoDB's item size limit in bytes.
MAX_ITEM_BYTES = 400 * 1024


def _utf8_len(text: str) -> int:
    """Length of ``text`` in UTF-8 bytes (no copy for ASCII text: ``isascii`` reads a flag)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _number_size(text: str) -> int:
    """Bytes of an ``N`` value as DynamoDB counts them, approximated from above: one per two digits, plus one."""
    return (len(text.lstrip("-").replace(".", "")) + 1) // 2 + 1


def av_size(av: Mapping[str, Any]) -> int:
    """Size of one attribute value as DynamoDB counts it (bytes; numbers approximated from above)."""
    (kind, value), = av.items()
    if kind == "S":
        return _utf8_len(value)
    if kind == "N":
        return _number_size(value)
    if kind == "B":
        return len(value)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + av_size(v) for v in value)
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + av_size(v) for k, v in value.items())
    if kind == "SS":
        return sum(len(v.encode("utf-8")) for v in value)
    if kind == "NS":
        return sum(_number_size(v) for v in value)
    if kind == "BS":
        return sum(len(v) for v in value)
    return 0


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """Size of a whole item in bytes: attribute names plus values, as DynamoDB counts it
    (:func:`av_size` per value, names and text in UTF-8 bytes).

    Checked on every written item (the 400 KB limit), so it is kept cheap: the names and the text
    values are joined and measured at once (one ``isascii`` for the lot, no encoding when it is
    ASCII), numbers are counted inline, and only other values take the generic walk (the walk per
    value cost 3.1 µs of a 13-attribute item, this 1.6 µs: issue 24).
    """
    texts = list(item)
    total = 0
    for av in item.values():
        value = av.get("S")
        if type(value) is str and len(av) == 1:
            texts.append(value)
            continue
        value = av.get("N")
        if type(value) is str and len(av) == 1:
            total += _number_size(value)
        else:
            total += av_size(av)
    text = "".join(texts)
    return total + (len(text) if text.isascii() else len(text.encode("utf-8")))


def item_from_av(item: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Deserialize a whole DynamoDB JSON item to ``{attribute name: value}``."""
    return {k: from_av(v) for k, v in item.items()}
