"""DynamoDB Streams records as dynorm reads them (pure): the Lambda event and GetRecords' records alike.

A record is a dict in the shape AWS Lambda passes (``eventName``, ``eventSourceARN``,
``dynamodb: {Keys, NewImage, OldImage, SequenceNumber, StreamViewType}``, ``userIdentity`` for a
TTL deletion); the records of the ``dynamodbstreams`` GetRecords API have the same shape without
``eventSourceARN``. Nothing here sends a request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..exceptions import ConfigurationError

__all__ = ["StreamRecord", "records_of", "table_name_of", "INTERNAL_PREFIX"]

#: Partition keys and entity types of dynorm's own items (the migration ledger, its lock and key-version
#: record under ``dynorm#migrations``; unique-constraint sentinels under ``dynorm#unique#``, type
#: ``dynorm#unique``): hidden from streams unless asked for.
INTERNAL_PREFIX = "dynorm#"

#: ``arn:aws:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL`` -> NAME
_TABLE_IN_ARN = re.compile(r":table/([^/]+)(?:/|$)")

#: The identity of a deletion made by DynamoDB's Time to Live (AWS documents it on the stream record).
_TTL_PRINCIPAL = "dynamodb.amazonaws.com"


@dataclass(frozen=True)
class StreamRecord:
    """One stream record, read once.

    Attributes:
        raw: the record as given.
        position: its index in the batch.
        event: ``"INSERT"``, ``"MODIFY"`` or ``"REMOVE"``.
        keys: the item's table key (DynamoDB JSON).
        new, old: ``NewImage`` / ``OldImage`` (DynamoDB JSON), ``None`` when the view type leaves them out.
        sequence_number: ``dynamodb.SequenceNumber`` (the ``itemIdentifier`` of a batch failure).
        expired: a deletion made by DynamoDB's Time to Live (``userIdentity`` of the service).
    """

    raw: Mapping[str, Any]
    position: int
    event: str
    keys: dict[str, Any]
    new: dict[str, Any] | None
    old: dict[str, Any] | None
    sequence_number: str | None
    expired: bool

    @classmethod
    def read(cls, raw: Mapping[str, Any], position: int) -> StreamRecord:
        """Read one record (see the module docstring for its shape).

        Raises:
            ConfigurationError: not a DynamoDB Streams record (no ``eventName`` or ``dynamodb``).
        """
        body = raw.get("dynamodb") if isinstance(raw, Mapping) else None
        event = raw.get("eventName") if isinstance(raw, Mapping) else None
        if not isinstance(body, Mapping) or event not in ("INSERT", "MODIFY", "REMOVE"):
            shown = repr(raw)[:120]
            raise ConfigurationError(
                f"dynorm.streams: record {position} is not a DynamoDB Streams record ({shown}); pass the Lambda "
                "event ({'Records': [...]}) or the records of GetRecords, each with eventName and dynamodb.")
        who = raw.get("userIdentity") or {}
        by_ttl = who.get("type") == "Service" and who.get("principalId") == _TTL_PRINCIPAL
        return cls(raw=raw, position=position, event=str(event), keys=dict(body.get("Keys") or {}),
                   new=body.get("NewImage"), old=body.get("OldImage"), sequence_number=body.get("SequenceNumber"),
                   expired=event == "REMOVE" and by_ttl)

    @property
    def image(self) -> dict[str, Any]:
        """The fullest image there is: the new one, else the old one, else only the keys."""
        return self.new if self.new is not None else self.old if self.old is not None else self.keys


def records_of(event_or_records: Any) -> list[Mapping[str, Any]]:
    """The list of records in a Lambda event (``{"Records": [...]}``), a GetRecords response, or a list.

    Raises:
        ConfigurationError: anything else.
    """
    if isinstance(event_or_records, Mapping):
        if "Records" not in event_or_records:
            raise ConfigurationError(
                "dynorm.streams: the event has no 'Records'; pass the Lambda event, a GetRecords response "
                "or a list of records.")
        return list(event_or_records["Records"])
    if isinstance(event_or_records, (str, bytes)) or not isinstance(event_or_records, Iterable):
        raise ConfigurationError(f"dynorm.streams: expected a Lambda event or a list of stream records, got "
                                 f"{type(event_or_records).__name__}.")
    return list(event_or_records)


def table_name_of(raw: Mapping[str, Any]) -> str | None:
    """The physical table name in a record's ``eventSourceARN`` (``None`` when it has none)."""
    arn = raw.get("eventSourceARN")
    match = _TABLE_IN_ARN.search(arn) if isinstance(arn, str) else None
    return match.group(1) if match else None
