"""Comparing what the two wires (``direct``, ``botocore``) give for one request, types included."""

from __future__ import annotations

from typing import Any

__all__ = ["typed", "comparable"]

#: response headers that differ between two answers to the same request
_VOLATILE_HEADERS = {"date", "x-amzn-requestid"}


def typed(value: Any) -> Any:
    """``value`` as a tree that compares equal only when values *and* types are equal
    (``1 == 1.0 == True`` and ``b"a" != "a"`` are told apart); dict order is ignored."""
    if isinstance(value, dict):
        return ("dict", tuple(sorted(((repr(k), typed(v)) for k, v in value.items()), key=lambda kv: kv[0])))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(typed(v) for v in value))
    return (type(value).__name__, value)


def comparable(response: dict[str, Any]) -> Any:
    """A parsed response without what differs between two answers (request id, date), :func:`typed`."""
    out = dict(response)
    meta = dict(out.pop("ResponseMetadata", {}) or {})
    meta.pop("RequestId", None)
    meta["HTTPHeaders"] = {k: v for k, v in (meta.get("HTTPHeaders") or {}).items() if k not in _VOLATILE_HEADERS}
    out["ResponseMetadata"] = meta
    return typed(out)
