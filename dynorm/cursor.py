"""Opaque, signed pagination cursors wrapping LastEvaluatedKey (pure; no I/O).

A cursor carries the LastEvaluatedKey and the context it was made for (table, entity type,
index, key version and a fingerprint of the request: key condition, filter, projection,
direction and their values), signed with HMAC-SHA256. Reading it checks the signature first,
then that the context matches the queryset it is used with, so a cursor can only resume the
query that produced it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from typing import Any

from .exceptions import ConfigurationError, InvalidCursor

__all__ = ["encode_cursor", "decode_cursor", "encode_shard_cursor", "decode_shard_cursor", "signing_secret"]

_VERSION = 1
#: signs cursors of this process when no secret is configured and the endpoint is DynamoDB
#: Local: random, so nobody can forge one (cursors then do not survive a restart)
_PROCESS_SECRET = secrets.token_urlsafe(32)


def signing_secret(configured: str | None, endpoint: str | None, is_local: bool) -> str:
    """Return the key that signs and checks cursors.

    Args:
        configured: ``settings.cursor_secret`` (``None`` when not set).
        endpoint: the DynamoDB endpoint (``None`` = AWS), named in the error.
        is_local: True when the endpoint is on the loopback interface (DynamoDB Local).

    Returns:
        ``configured`` when set; for DynamoDB Local without one, a random key of this process.

    Raises:
        ConfigurationError: no secret is configured and the endpoint is not on the loopback
            interface (a key anyone could derive would let them forge cursors).
    """
    if configured:
        return configured
    if is_local:
        return _PROCESS_SECRET
    raise ConfigurationError(
        f"pagination cursors need a secret against {endpoint or 'AWS'}: set cursor_secret in dynorm.yaml "
        "or call dynorm.configure(cursor_secret=...) with a long "
        "random string shared by every process that serves the same cursors.")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sig(secret: str, payload: bytes) -> str:
    return _b64(hmac.new(secret.encode(), payload, hashlib.sha256).digest()[:18])


def _encode_key(key: dict[str, Any]) -> dict[str, Any]:
    # a binary key attribute (a multi-attribute GSI's B attribute) travels as {"b": base64 text}
    return {a: {"b": _b64(v["B"])} if "B" in v else v for a, v in key.items()}


def _sign(body: dict[str, Any], context: dict[str, Any], secret: str) -> str:
    payload = json.dumps({"v": _VERSION, "c": context, **body}, separators=(",", ":"), sort_keys=True).encode()
    return f"{_b64(payload)}.{_sig(secret, payload)}"


def encode_cursor(last_evaluated_key: dict[str, Any], context: dict[str, Any], secret: str) -> str:
    """Wrap a LastEvaluatedKey into a URL-safe, signed cursor string.

    Args:
        last_evaluated_key: DynamoDB JSON key from a Query/Scan response.
        context: what the cursor must match when used (table, entity, index, key version,
            query fingerprint).
        secret: the signing key.
    """
    return _sign({"k": _encode_key(last_evaluated_key)}, context, secret)


def encode_shard_cursor(positions: list[Any], context: dict[str, Any], secret: str) -> str:
    """Wrap the position of every bucket of a write-sharded index's fan-out into a signed cursor.

    Args:
        positions: per bucket, in bucket order: ``None`` (nothing used from it yet) or the key of
            the last item the merge used from it (its ExclusiveStartKey). The last of them in merge
            order is the position the next page resumes from (:class:`dynorm.shard_merge.ShardMerge`).
        context, secret: as for :func:`encode_cursor`.
    """
    return _sign({"s": [p if p is None else _encode_key(p) for p in positions]}, context, secret)


def _open(cursor: str, context: dict[str, Any], secret: str) -> dict[str, Any]:
    """Check a cursor's signature, version and context; return its payload."""
    if not isinstance(cursor, str) or cursor.count(".") != 1:
        raise InvalidCursor("malformed cursor: pass the exact string from Page.cursor.")
    body, sig = cursor.split(".")
    try:
        payload = _unb64(body)
    except (binascii.Error, ValueError) as exc:
        raise InvalidCursor("malformed cursor: pass the exact string from Page.cursor.") from exc
    if not hmac.compare_digest(_sig(secret, payload).encode(), sig.encode("utf-8", "surrogatepass")):
        raise InvalidCursor("cursor signature does not match: it was altered or made elsewhere.")
    try:
        data = json.loads(payload)
        made_for = data["c"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidCursor("malformed cursor payload.") from exc
    if data.get("v") != _VERSION or not isinstance(made_for, dict):
        raise InvalidCursor("cursor was made by another dynorm version; start again without a cursor.")
    if made_for.get("kv") != context.get("kv"):
        raise InvalidCursor(
            f"stale cursor: it was made for key version {made_for.get('kv')!r}, the entity now uses "
            f"{context.get('kv')!r} (a migration ran); start again without a cursor.")
    same_fan_out = "n" in made_for and "n" in context and all(made_for.get(k) == context.get(k) for k in "iq")
    for k, what in (("n", "shard count (shards)"), ("sb", "shard_by")):
        if same_fan_out and made_for.get(k) != context.get(k):
            raise InvalidCursor(
                f"stale cursor: the index's {what} changed since it was made (a migration ran), so every "
                "bucket's position is another's; start again without a cursor.")
    for k in sorted({*context, *made_for}):
        if made_for.get(k) != context.get(k):
            raise InvalidCursor(f"cursor belongs to another query ({k} differs); use it only with the "
                                "queryset that produced it.")
    return data  # type: ignore[no-any-return]


def decode_cursor(cursor: str, context: dict[str, Any], secret: str, key_attributes: set[str]) -> dict[str, Any]:
    """Check a cursor and return its LastEvaluatedKey.

    Args:
        cursor: the string from ``Page.cursor``.
        context: what it must have been made for (compared field by field).
        secret: the signing key.
        key_attributes: the attribute names a LastEvaluatedKey of this query may hold.

    Raises:
        InvalidCursor: malformed, tampered with, made for another query, or stale (the key
            version changed since, e.g. after a migration).
    """
    return _decode_key(_open(cursor, context, secret).get("k"), key_attributes)


def decode_shard_cursor(cursor: str, context: dict[str, Any], secret: str, key_attributes: set[str],
                        shards: int) -> list[Any]:
    """Check a cursor of a write-sharded fan-out and return each bucket's position (see :func:`encode_shard_cursor`).

    A sharded index is a GSI with a partition-key template, so every key attribute of its fan-out
    (the table's and the index's) is a non-empty string: each position must hold every one of
    ``key_attributes`` as one, or DynamoDB would refuse it as an ExclusiveStartKey.

    A cursor of an earlier dynorm marked a bucket read to its end ``"done"`` and dropped its
    position; when the last item of its page came from that bucket, the merge position it resumes
    from is lost, so no such cursor can be resumed exactly: it is refused.

    Raises:
        InvalidCursor: as :func:`decode_cursor`; the cursor does not hold ``shards`` positions, or a
            position lacks a key attribute or holds one that is not a non-empty string; or it was
            issued by an earlier dynorm version (a bucket marked ``"done"``).
    """
    positions = _open(cursor, context, secret).get("s")
    if not isinstance(positions, list) or len(positions) != shards:
        raise InvalidCursor("cursor holds an invalid key.")
    if "done" in positions:
        raise InvalidCursor(
            "this cursor was issued by an earlier dynorm version, whose cursors of a write-sharded index "
            "cannot be resumed exactly (an item could come twice); restart the query from the first page "
            "(page() without a cursor).")
    out: list[Any] = []
    for p in positions:
        if p is not None and not (isinstance(p, dict) and set(p) == key_attributes and all(
                isinstance(v, dict) and set(v) == {"S"} and v["S"] for v in p.values())):
            raise InvalidCursor(f"cursor holds an invalid key: each position must hold "
                                f"{', '.join(sorted(key_attributes))} as non-empty strings; pass the exact "
                                "string from Page.cursor.")
        out.append(None if p is None else _decode_key(p, key_attributes))
    return out


def _decode_key(key: Any, key_attributes: set[str]) -> dict[str, Any]:
    if not (isinstance(key, dict) and key and set(key) <= key_attributes and all(
            isinstance(v, dict) and len(v) == 1 and isinstance(next(iter(v.values())), str) for v in key.values())):
        raise InvalidCursor("cursor holds an invalid key.")
    out: dict[str, Any] = {}
    for a, v in key.items():
        if "b" in v:
            try:
                raw = base64.b64decode(v["b"] + "=" * (-len(v["b"]) % 4), altchars=b"-_", validate=True)
            except (binascii.Error, ValueError) as exc:
                raise InvalidCursor("cursor holds an invalid key.") from exc
            if not raw:  # no key attribute holds empty bytes
                raise InvalidCursor("cursor holds an invalid key.")
            out[a] = {"B": raw}
        else:
            out[a] = v
    return out
