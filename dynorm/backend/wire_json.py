"""DynamoDB's JSON on the wire, encoded and decoded directly: no walk of botocore's service model.

DynamoDB's data-plane bodies already are the AttributeValue JSON dynorm speaks (``{"S": "x"}``,
``{"N": "12.5"}``: numbers stay text, exact). botocore nevertheless walks every request and every
response attribute by attribute against the service model: about 80% of the client CPU of a
Query of 100 items (measured with bench/bench_wire.py). This module is the pure codec; the seams
that put it under botocore's transport are in :mod:`dynorm.backend.wire`.

- :func:`dumps`: request parameters to the JSON body botocore's serializer would send (``bytes``
  values as base64 text, sets as lists), with orjson when installed (``dynorm[fast]``), else the
  standard library.
- :func:`loads`: a response body to Python, orjson or the standard library.
- :func:`output_decoder`: for an operation's output shape, a function giving exactly botocore's
  parse of a body: the members the model knows, ``null`` members left out, ``B``/``BS`` base64
  decoded to ``bytes``, everything else as JSON gave it (``N`` stays text). AttributeValues are
  walked only when a body needs it (binary values, a ``null``, a member botocore would drop).
- :func:`routing_params`: what botocore's serializer and endpoint rules still get to see.

Nothing here imports botocore: a shape is used only through its public attributes
(``type_name``, ``name``, ``members``, ``member``, ``value``, ``is_tagged_union``).
"""

from __future__ import annotations

import base64
import json
from itertools import chain, repeat
from typing import Any, Callable, Iterable

__all__ = ["DIRECT_OPERATIONS", "dumps", "loads", "has_binary", "output_decoder", "routing_params",
           "json_library", "Unsupported"]

#: The data-plane operations whose bodies go through this codec; every other operation (table DDL,
#: TTL, backups, ...) keeps botocore's serializer and parser.
DIRECT_OPERATIONS = frozenset({
    "GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan",
    "BatchGetItem", "BatchWriteItem", "TransactGetItems", "TransactWriteItems",
})

#: The members of DynamoDB's ``AttributeValue`` (botocore keeps these, in any order).
_AV_MEMBERS = frozenset({"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"})

_b64decode = base64.b64decode  # botocore's own blob parser: base64.b64decode, not validating


class Unsupported(Exception):
    """An output shape this codec does not decode exactly as botocore would (a timestamp, a
    document, a tagged union other than AttributeValue, a recursive structure): the operation
    keeps botocore's parser."""


# -- JSON libraries: orjson when installed (dynorm[fast]), else the standard library -----------------
_orjson: Any = None
_checked = False


def _fast() -> Any:
    """orjson, imported on first use (``import dynorm`` stays lean), or ``None`` when not installed."""
    global _orjson, _checked
    if not _checked:
        try:
            import orjson as module
        except ImportError:
            module = None  # type: ignore[assignment]
        _orjson, _checked = module, True
    return _orjson


def json_library() -> str:
    """Return ``"orjson"`` when the fast JSON library is installed (``pip install 'dynorm[fast]'``), else ``"json"``."""
    return "orjson" if _fast() is not None else "json"


def _default(value: Any) -> Any:
    """What JSON cannot hold, as botocore's serializer sends it: binary as base64 text, a set as a list."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (set, frozenset)):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(params: dict[str, Any], *, library: str | None = None) -> bytes:
    """Encode request parameters as the JSON body of a DynamoDB request.

    The body means what botocore's serializer would send for the same parameters: ``bytes``
    (``B``, ``BS``) as base64 text, sets as lists, every other value as JSON has it (``N`` values
    are text already). Key order and whitespace may differ; DynamoDB reads JSON, not bytes.

    Args:
        params: request parameters in DynamoDB JSON, as ``client.put_item(**params)`` takes them.
        library: ``"orjson"`` or ``"json"`` to force one (tests); default: orjson when installed.

    Returns:
        The UTF-8 JSON body.

    Raises:
        TypeError, ValueError: a value JSON cannot hold (a ``Decimal``, a ``float`` NaN); the caller
            then leaves the request to botocore's serializer, which raises its own error.
    """
    fast = _fast() if library != "json" else None
    if fast is not None:
        try:
            return fast.dumps(params, default=_default)  # type: ignore[no-any-return]
        except TypeError:
            pass  # an int beyond 64 bits, a lone surrogate: the standard library, as botocore does
    return json.dumps(params, default=_default, separators=(",", ":"), allow_nan=False).encode("utf-8")


def loads(body: bytes, *, library: str | None = None) -> Any:
    """Decode a JSON response body (orjson when installed, else the standard library).

    Args:
        body: the HTTP response body.
        library: ``"orjson"`` or ``"json"`` to force one (tests).

    Raises:
        ValueError: the body is not JSON (the caller hands the response to botocore's parser).
    """
    fast = _fast() if library != "json" else None
    if fast is not None:
        try:
            return fast.loads(body)
        except ValueError:
            pass  # e.g. a lone surrogate escape: the standard library decodes it as botocore does
    return json.loads(body)


def has_binary(body: bytes) -> bool:
    """Whether a response body may hold a binary value (``"B"`` or ``"BS"``) to decode.

    An unescaped ``"B"`` can only be a whole JSON string, so a body without it holds no binary
    value (an attribute named ``B`` or a string equal to ``"B"`` only costs the slower walk). A
    body with ``\\u`` escapes is walked too: a key could be spelt with one.
    """
    return b'"B"' in body or b'"BS"' in body or b"\\u" in body


# -- output shapes: a decoder per shape, compiled once ------------------------------------------------
#: node, binary -> botocore's value for it
Decoder = Callable[[Any, bool], Any]
#: node -> the AttributeValues it holds (for :func:`_plain`)
Values = Callable[[Any], Iterable[Any]]


def _identity(node: Any, binary: bool) -> Any:
    return node


def _attribute_value(node: Any) -> Any:
    """One AttributeValue as botocore parses it: known members, no ``null`` ones, binary decoded."""
    out = {}
    for kind, value in node.items():
        if value is None or kind not in _AV_MEMBERS:
            continue
        if kind == "B":
            value = _b64decode(value)
        elif kind == "BS":
            value = [None if v is None else _b64decode(v) for v in value]
        elif kind == "M":
            value = {k: None if v is None else _attribute_value(v) for k, v in value.items()}
        elif kind == "L":
            value = [None if v is None else _attribute_value(v) for v in value]
        out[kind] = value
    return out


def _attribute_values(node: Any, binary: bool) -> Any:
    return _attribute_value(node) if binary else node


def _plain(values: Iterable[Any]) -> bool:
    """Whether AttributeValues are as botocore parses them already: only the ten members (nested
    ones too). ``null`` members are found by the caller in the body's bytes.

    Iterates in C (the members of a thousand AttributeValues are one ``set()`` of a chain): about
    40 µs per 1,000 flat AttributeValues, 120 µs when each item also holds an ``M`` and an ``L``
    (orjson parses that body in about 170 µs); the walk costs 2-3 times the parse.
    """
    try:
        avs = list(values)
        members = set(chain.from_iterable(avs))
        if not members <= _AV_MEMBERS:
            return False
        if "M" in members and not _plain(chain.from_iterable(map(dict.values, filter(None, map(dict.get, avs, _M))))):
            return False
        return "L" not in members or _plain(chain.from_iterable(filter(None, map(dict.get, avs, _L))))
    except (TypeError, AttributeError):  # not an object where an AttributeValue is: walked as botocore does
        return False


_M, _L = repeat("M"), repeat("L")


def _one(node: Any) -> Iterable[Any]:
    return (node,)


def _compile(shape: Any, active: frozenset[str]) -> tuple[Decoder, bool]:
    """The decoder of ``shape`` and whether it is needed only for AttributeValues to walk (else identity)."""
    dec, values = _compile_values(shape, active)
    return dec, values is not None


def _compile_values(shape: Any, active: frozenset[str]) -> tuple[Decoder, Values | None]:
    """The decoder of ``shape`` and, when it holds only AttributeValues, how to list them."""
    kind = shape.type_name
    if shape.name == "AttributeValue" and kind == "structure":
        return _attribute_values, _one
    if kind == "structure":
        if shape.is_tagged_union or getattr(shape, "is_document_type", False) or shape.name in active:
            raise Unsupported(f"shape {shape.name}")
        inner = active | {shape.name}
        members = []
        for name, member in shape.members.items():
            dec, _ = _compile(member, inner)
            members.append((name, member.serialization.get("name", name), None if dec is _identity else dec))
        return _structure(members), None
    if kind == "list":
        dec, held = _compile_values(shape.member, active)
        if dec is _identity:
            return _identity, None
        values: Values | None = None if held is None else _over(held)
        return _list(dec, values), values
    if kind == "map":
        if shape.key.type_name != "string":
            raise Unsupported(f"map key of {shape.name}")
        dec, held = _compile_values(shape.value, active)
        if dec is _identity:
            return _identity, None
        values = None if held is None else dict.values if held is _one else _over_values(held)
        return _map(dec, values), values
    if kind == "blob":
        return (lambda node, binary: _b64decode(node)), None
    if kind in ("string", "integer", "long", "double", "float", "boolean"):
        return _identity, None
    raise Unsupported(f"{kind} in {shape.name}")


def _structure(members: list[tuple[str, str, Decoder | None]]) -> Decoder:
    """A structure: its known members only (in the model's order), ``null`` ones left out, as
    botocore's ``_handle_structure`` does; always run, since it drops members the model lacks."""

    def decode(node: Any, binary: bool) -> Any:
        if node is None:
            return None
        out = {}
        for name, json_name, dec in members:
            value = node.get(json_name)
            if value is not None:
                out[name] = value if dec is None else dec(value, binary)
        return out

    return decode


def _over(inner: Values) -> Values:
    if inner is _one:
        return lambda node: node
    return lambda node: chain.from_iterable(map(inner, node))


def _over_values(inner: Values) -> Values:
    return lambda node: chain.from_iterable(map(inner, node.values()))


# A container of AttributeValues (``values`` given) is handed on as parsed unless the body has binary
# values or it holds a member botocore would drop: then it is walked as botocore parses it.
def _list(dec: Decoder, values: Values | None) -> Decoder:
    def decode(node: Any, binary: bool) -> Any:
        if values is not None and not binary:
            if _plain(values(node)):
                return node
            binary = True
        return [None if item is None else dec(item, binary) for item in node]

    return decode


def _map(dec: Decoder, values: Values | None) -> Decoder:
    def decode(node: Any, binary: bool) -> Any:
        if values is not None and not binary:
            if _plain(values(node)):
                return node
            binary = True
        return {key: None if value is None else dec(value, binary) for key, value in node.items()}

    return decode


def output_decoder(shape: Any) -> Callable[[bytes], dict[str, Any]]:
    """Compile a decoder for one operation's output shape (a botocore ``StructureShape``).

    Args:
        shape: the operation model's ``output_shape``.

    Returns:
        ``decode(body) -> dict``: botocore's parse of a successful response body, without
        ``ResponseMetadata``.

    Raises:
        Unsupported: the shape holds a type this codec does not decode as botocore does.
    """
    top, _ = _compile(shape, frozenset())

    def decode(body: bytes) -> dict[str, Any]:
        if not body:
            return {}
        data = loads(body)
        if not isinstance(data, dict):
            raise ValueError("the body is not a JSON object")
        # botocore leaves out null members: a body with one is walked (a false alarm, "null" in a text, costs the walk)
        return top(data, has_binary(body) or b"null" in body)  # type: ignore[no-any-return]

    return decode


# -- requests: what botocore still sees --------------------------------------------------------------
def routing_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters botocore's serializer and endpoint rules see once the body is encoded here.

    Every top-level name stays (so a misspelt parameter still fails in botocore's serializer) with
    its scalar values (``TableName``, ``Limit``, ``ClientRequestToken``: endpoint rules may read
    them); maps and lists are emptied, except the table names that endpoint rules read from
    ``RequestItems`` (its keys) and ``TransactItems`` (each action's ``TableName``).

    Args:
        params: the full request parameters (not changed).

    Returns:
        A new dict, cheap for botocore to serialize.
    """
    out: dict[str, Any] = {}
    for name, value in params.items():
        if name == "RequestItems" and isinstance(value, dict):
            out[name] = {table: ({} if isinstance(v, dict) else []) for table, v in value.items()}
        elif name == "TransactItems" and isinstance(value, list):
            out[name] = [_action_tables(action) for action in value]
        elif isinstance(value, dict):
            out[name] = {}
        elif isinstance(value, (list, tuple, set, frozenset)):
            out[name] = []
        else:
            out[name] = value
    return out


def _action_tables(action: Any) -> Any:
    if not isinstance(action, dict):
        return action
    return {kind: ({"TableName": body["TableName"]} if isinstance(body, dict) and "TableName" in body else {})
            for kind, body in action.items()}
