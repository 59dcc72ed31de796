"""Plain Python values <-> DynamoDB JSON attribute values (``{"S": "x"}``), without boto3."""

from __future__ import annotations

import datetime as _dt
import decimal
from typing import Any, Mapping

from .keys import format_datetime

_NUMBER_CONTEXT = decimal.Context(prec=38)


def _number(value: Any) -> str:
    if isinstance(value, float):
        value = decimal.Decimal(repr(value))
    if isinstance(value, decimal.Decimal):
        return format(value.normalize(_NUMBER_CONTEXT), "f") if value == value.to_integral() else str(value)
    return str(value)


def to_av(value: Any) -> dict[str, Any]:
    """Serialize a Python value to a DynamoDB attribute value.

    Raises:
        TypeError: a value of a type DynamoDB cannot store.
    """
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, (int, float, decimal.Decimal)):
        return {"N": _number(value)}
    if isinstance(value, (bytes, bytearray)):
        return {"B": bytes(value)}
    if isinstance(value, _dt.datetime):
        return {"S": format_datetime(value)}
    if isinstance(value, Mapping):
        return {"M": {str(k): to_av(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"L": [to_av(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        if all(isinstance(v, str) for v in value):
            return {"SS": sorted(value)}
        if all(isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool) for v in value):
            return {"NS": sorted(_number(v) for v in value)}
        if all(isinstance(v, (bytes, bytearray)) for v in value):
            return {"BS": sorted(bytes(v) for v in value)}
        raise TypeError("a set must hold only strings, only numbers or only bytes")
    if hasattr(value, "__str__") and type(value).__name__ == "ULID":
        return {"S": str(value)}
    raise TypeError(f"cannot store a {type(value).__name__} in DynamoDB")


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


def av_size(av: Mapping[str, Any]) -> int:
    """Size of one attribute value as DynamoDB counts it (bytes; numbers approximated from above)."""
    (kind, value), = av.items()
    if kind == "S":
        return len(value.encode("utf-8"))
    if kind == "N":
        return (len(value.lstrip("-").replace(".", "")) + 1) // 2 + 1
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
        return sum((len(v.lstrip("-").replace(".", "")) + 1) // 2 + 1 for v in value)
    if kind == "BS":
        return sum(len(v) for v in value)
    return 0


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """Size of a whole item in bytes: attribute names plus values, as DynamoDB counts it."""
    return sum(len(name.encode("utf-8")) + av_size(av) for name, av in item.items())


def item_from_av(item: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Deserialize a whole DynamoDB JSON item to ``{attribute name: value}``."""
    return {k: from_av(v) for k, v in item.items()}
