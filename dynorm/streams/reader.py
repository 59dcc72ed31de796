"""Reading a table's stream with the ``dynamodbstreams`` API (for ``dynorm streams tail``, tests, scripts).

:class:`StreamReader` finds the table's latest stream (DescribeTable), its shards (DescribeStream) and
an iterator per shard (GetShardIterator), then reads what is there (GetRecords per shard until it
returns nothing new). In production, read a stream with AWS Lambda (:func:`dynorm.streams.handler`)
or the Kinesis Client Library: this reader keeps no checkpoints.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .. import backend
from ..backend.stream_calls import stream_call
from ..exceptions import ConfigurationError, ServiceError
from .changes import Change, changes

if TYPE_CHECKING:  # pragma: no cover
    from ..tables import Table

__all__ = ["StreamReader", "START_POSITIONS"]

#: Where a reader starts: records written from now on, or every record the stream still holds (24 h).
START_POSITIONS = ("LATEST", "TRIM_HORIZON")


class StreamReader:
    """Reads the records of a table's stream, shard by shard, from ``start`` on.

    Args:
        table: the ``Table`` class whose stream is read (``Meta.stream`` set, the table migrated).
        start: ``"LATEST"`` (records written after this reader is made) or ``"TRIM_HORIZON"``
            (every record the stream holds).

    Requests: DescribeTable, DescribeStream (per 100 shards), GetShardIterator per shard.

    Raises:
        ConfigurationError: ``start`` is not one of :data:`START_POSITIONS`, or the table has no stream
            (the message says how to turn it on).
        TableDoesNotExist: the table does not exist.
    """

    def __init__(self, table: type[Table], start: str = "LATEST") -> None:
        if start not in START_POSITIONS:
            raise ConfigurationError(f"StreamReader: start must be one of {', '.join(START_POSITIONS)}, got {start!r}.")
        self.table = table
        desc = backend.call("DescribeTable", {"TableName": table.table_name()})["Table"]
        arn = desc.get("LatestStreamArn")
        if not (desc.get("StreamSpecification") or {}).get("StreamEnabled") or not arn:
            if table._meta.stream:
                raise ConfigurationError(
                    f"table {table.table_name()} has no stream yet: {table.__name__}.Meta.stream = "
                    f"{table._meta.stream!r} is declared but not applied; run `dynorm makemigrations` and "
                    f"`dynorm migrate` (or {table.__name__}.sync()).")
            raise ConfigurationError(
                f"table {table.table_name()} has no stream: set {table.__name__}.Meta.stream = "
                "'NEW_AND_OLD_IMAGES', then run `dynorm makemigrations` and `dynorm migrate` (or "
                f"{table.__name__}.sync()).")
        self.arn: str = arn
        self.start = start
        self._iterators: dict[str, str | None] = {}  # shard id -> next iterator (None: closed, read to its end)
        self._at_latest: set[str] = set()  # shards whose LATEST iterator has read nothing yet
        self._discover(start)

    def _shards(self) -> list[dict[str, Any]]:
        shards: list[dict[str, Any]] = []
        params: dict[str, Any] = {"StreamArn": self.arn}
        while True:
            desc = stream_call("DescribeStream", params)["StreamDescription"]
            shards += desc.get("Shards", [])
            last = desc.get("LastEvaluatedShardId")
            if not last:
                return shards
            params = {"StreamArn": self.arn, "ExclusiveStartShardId": last}

    def _discover(self, start: str) -> None:
        """Add an iterator for each shard not seen yet (a child shard from its start)."""
        for shard in self._shards():
            sid = shard["ShardId"]
            if sid in self._iterators:
                continue
            known_parent = shard.get("ParentShardId") in self._iterators
            kind = "TRIM_HORIZON" if known_parent or start == "TRIM_HORIZON" else "LATEST"
            self._iterators[sid] = self._iterator(sid, kind)
            if kind == "LATEST":
                self._at_latest.add(sid)

    def _iterator(self, shard: str, kind: str) -> str:
        return str(stream_call("GetShardIterator", {"StreamArn": self.arn, "ShardId": shard,
                                                    "ShardIteratorType": kind})["ShardIterator"])

    def _get_records(self, shard: str, iterator: str) -> dict[str, Any]:
        """GetRecords; a LATEST iterator taken on an empty shard is taken again at TRIM_HORIZON when refused.

        DynamoDB Local gives such an iterator the shard's starting sequence number, while writes to other
        tables advance the sequence numbers: its first record then lies past it, and GetRecords answers
        TrimmedDataAccessException (measured with DynamoDB Local 3.3). The shard held nothing when the
        iterator was taken, so every record it holds now was written after: TRIM_HORIZON reads them.
        """
        try:
            return stream_call("GetRecords", {"ShardIterator": iterator})
        except ServiceError as exc:
            if exc.code != "TrimmedDataAccessException" or shard not in self._at_latest:
                raise
            self._at_latest.discard(shard)
            return stream_call("GetRecords", {"ShardIterator": self._iterator(shard, "TRIM_HORIZON")})

    def poll(self) -> list[dict[str, Any]]:
        """Return the records written since the last poll (GetRecords per open shard until one is empty).

        Each record gets ``eventSourceARN`` (the stream's ARN) when it lacks it, as AWS Lambda's records
        have it, so :func:`~dynorm.streams.changes` finds the table without ``table=``.
        """
        self._discover("TRIM_HORIZON")
        out: list[dict[str, Any]] = []
        for sid, iterator in list(self._iterators.items()):
            while iterator is not None:
                resp = self._get_records(sid, iterator)
                iterator = resp.get("NextShardIterator")
                records = resp.get("Records", [])
                if records:
                    self._at_latest.discard(sid)
                for r in records:
                    r.setdefault("eventSourceARN", self.arn)
                out += records
                if not records:
                    break
            self._iterators[sid] = iterator
        return out

    def changes(self, **options: Any) -> list[Change]:
        """The changes of the records written since the last poll (:meth:`poll`, then
        :func:`~dynorm.streams.changes` with ``table`` and ``options``)."""
        return list(changes(self.poll(), table=self.table, **options))

    def follow(self, interval: float = 1.0, stop: Callable[[], bool] | None = None,
               **options: Any) -> Iterator[Change]:
        """Yield changes as they are written: :meth:`changes` every ``interval`` seconds until ``stop()`` is true.

        Args:
            interval: seconds between polls when nothing new came.
            stop: called before each poll; ``None``: follow until the caller stops iterating.
            options: as for :func:`~dynorm.streams.changes`.
        """
        while stop is None or not stop():
            found = self.changes(**options)
            yield from found
            if not found:
                time.sleep(interval)
