"""Write sharding of a GSI partition key: the bucket of an item, the bucketed key text, the merge order.

AWS's published designs spread a hot GSI partition over N buckets (``GSI-Bucket = 0..14``) and
query every bucket. ``Index("GSI2", pk=..., sk=..., shards=15)`` declares it; this module holds
the pure parts: which bucket an item is in (:func:`bucket_of`), how the bucket is rendered into the
partition key (:func:`shard_key`), and the order DynamoDB gives a sort key (:func:`sort_value`),
by which the buckets' pages are merged. No I/O, no PynamoDB.
"""

from __future__ import annotations

import decimal
import zlib
from typing import Any, Mapping, Protocol

from ._value import FrozenValue
from .exceptions import InvalidKeyValue
from .keys import KeyTemplate, encode_value

__all__ = ["ShardedIndex", "FrozenSharding", "bucket_of", "shard_key", "sort_value", "given_bucket"]


class ShardedIndex(Protocol):
    """What the bucket needs of an index (:class:`dynorm.options.BoundIndex` is one)."""

    @property
    def index_name(self) -> str | None: ...

    @property
    def pk(self) -> KeyTemplate: ...

    @property
    def shards(self) -> int: ...

    @property
    def shard_by(self) -> tuple[str, ...]: ...


class FrozenSharding(FrozenValue):
    """A sharded index as a migration's frozen state records it (a :class:`ShardedIndex`).

    Attributes:
        index_name: the GSI; pk: its partition-key template (its delimiter and key encoding);
        shards: the bucket count; shard_by: the fields the bucket is computed from.
    """

    index_name: str | None
    pk: KeyTemplate
    shards: int
    shard_by: tuple[str, ...]

    def __init__(self, index_name: str | None, pk: KeyTemplate, shards: int, shard_by: tuple[str, ...]) -> None:
        self.__dict__.update(index_name=index_name, pk=pk, shards=shards, shard_by=shard_by)


def bucket_of(bound: ShardedIndex, values: Mapping[str, Any], entity: str = "?") -> int:
    """The write-sharding bucket of an item: CRC-32 of its ``shard_by`` fields' key text, modulo ``shards``.

    The key text of each field is its order-preserving encoding (the text it has in a key template
    without a spec), joined by ``"\\x00"`` (which no key text holds). CRC-32 (``zlib.crc32``) is
    the same in every process and Python version, unlike ``hash()``.

    Args:
        bound: a sharded index (``bound.shards > 0``).
        values: field name -> value of the item (its primary-key fields at least).
        entity: named in errors.

    Returns:
        the bucket, ``0 <= bucket < bound.shards``.

    Raises:
        InvalidKeyValue: a ``shard_by`` field is missing or cannot be put in a key.
    """
    parts = []
    for name in bound.shard_by:
        value = values.get(name)
        if value is None:
            raise InvalidKeyValue(f"{entity}.{name} is needed to compute the write-sharding bucket of index "
                                  f"{bound.index_name} but was not given.", entity=entity, field=name, value=None)
        parts.append(encode_value(value, "", delimiter=bound.pk.delimiter, entity=entity, field=name,
                                  encoding=bound.pk.encoding))
    return zlib.crc32("\x00".join(parts).encode("utf-8")) % bound.shards


def given_bucket(bound: ShardedIndex, eq: Mapping[str, Any], entity: str = "?") -> int | None:
    """The bucket a query's equalities pin (every ``shard_by`` field given), else ``None`` (all buckets)."""
    if all(eq.get(f) is not None for f in bound.shard_by):
        return bucket_of(bound, eq, entity)
    return None


def shard_key(pk_text: str, bucket: int, delimiter: str) -> str:
    """The partition-key text of ``bucket``: ``pk_text`` + delimiter + the bucket number (``"v1#C#7#3"``)."""
    return f"{pk_text}{delimiter}{bucket}"


def sort_value(av: Mapping[str, Any] | None) -> tuple[int, Any]:
    """A Python value ordering a sort-key attribute value as DynamoDB orders it.

    ``S`` by its UTF-8 bytes, ``N`` numerically, ``B`` by its bytes. A missing value (an item with
    no sort key) sorts first.
    """
    if not av:
        return (0, b"")
    ((kind, v),) = av.items()
    if kind == "N":
        return (1, decimal.Decimal(v))
    if kind == "B":
        return (1, bytes(v))
    return (1, str(v).encode("utf-8"))
