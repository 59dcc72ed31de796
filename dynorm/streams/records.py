"""DynamoDB Streams records as dynorm reads them (pure): the Lambda event and GetRecords' records alike.

A record is a dict in the shape AWS Lambda passes (``eventName``, ``eventSourceARN``,
``dynamodb: {Keys, NewImage, OldImage, SequenceNumber, StreamViewType}``, ``userIdentity`` for a
TTL deletion); the records of the ``dynamodbstreams`` GetRecords API have the same shape without
``eventSourceARN``. Nothing here sends a request.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..exceptions import ConfigurationError

__all__ = ["StreamRecord", "records_of", "table_name_of", "binary_from_json", "INTERNAL_PREFIX"]

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
            ``keys``, ``new`` and ``old`` hold binary values as ``bytes`` (:func:`binary_from_json`).
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
        if not isinstance(who, Mapping):
            who = {}
        by_ttl = who.get("type") == "Service" and who.get("principalId") == _TTL_PRINCIPAL
        keys = binary_from_json(body.get("Keys") or {})
        return cls(raw=raw, position=position, event=str(event), keys=dict(keys) if isinstance(keys, Mapping) else {},
                   new=binary_from_json(body.get("NewImage")), old=binary_from_json(body.get("OldImage")),
                   sequence_number=body.get("SequenceNumber"), expired=event == "REMOVE" and by_ttl)

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


def binary_from_json(value: Any) -> Any:
    """An item (or attribute map) in DynamoDB JSON with its binary values as ``bytes``.

    GetRecords (botocore) gives ``{"B": b"..."}``; an AWS Lambda event is JSON, where a binary is
    base64 text (``{"B": "AP8="}``). A ``str`` in a ``B`` or ``BS`` slot, at any depth (``M``, ``L``),
    is decoded from base64. Returns ``value`` itself when there is nothing to decode (or it is not
    a map); text that is not base64 is left as it is (the item then reads as unreadable).
    """
    if not isinstance(value, Mapping):
        return value
    out = {k: _av_from_json(v) for k, v in value.items()}
    return value if all(out[k] is value[k] for k in out) else out


def _b64(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text


def _av_from_json(av: Any) -> Any:
    if not isinstance(av, Mapping) or len(av) != 1:
        return av
    (kind, v), = av.items()
    if kind == "B" and isinstance(v, str):
        return {"B": _b64(v)}
    if kind == "BS" and isinstance(v, list) and any(isinstance(x, str) for x in v):
        return {"BS": [_b64(x) for x in v]}
    if kind == "M" and isinstance(v, Mapping):
        m = binary_from_json(v)
        return av if m is v else {"M": m}
    if kind == "L" and isinstance(v, list):
        items = [_av_from_json(x) for x in v]
        return av if all(a is b for a, b in zip(items, v)) else {"L": items}
    return av
