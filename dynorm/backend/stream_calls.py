"""Requests to DynamoDB Streams (the ``dynamodbstreams`` API): DescribeStream, GetShardIterator, GetRecords.

One botocore ``dynamodbstreams`` client per connection, built with the same settings, credentials,
retries and timeouts as the DynamoDB client (:mod:`.clients`), on the same endpoint (DynamoDB Local
serves both APIs on one port). :func:`stream_call` records each request for ``capture()`` and wraps
botocore's errors once, as :func:`dynorm.backend.calls.call` does for DynamoDB.
"""

from __future__ import annotations

import threading
from typing import Any

from .. import conf
from .clients import _botocore_session, _client_arguments, _connection, _credentials_known, collector_paused
from .errors import answered, botocore_error, client_error

__all__ = ["streams_client", "stream_call"]

_lock = threading.Lock()
#: connection -> (the botocore session it was built from, the client); a session dropped by
#: ``reset_client()`` makes its clients stale (credentials are resolved again)
_built: dict[tuple[Any, ...], tuple[Any, Any]] = {}


def streams_client() -> Any:
    """Return the botocore ``dynamodbstreams`` client for the current settings (built once, thread-safe).

    Register botocore event hooks on it for fault injection
    (``streams_client().meta.events.register("before-send.dynamodb-streams.GetRecords", hook)``).
    """
    settings = conf.get_settings()
    key = _connection(settings)
    session = _botocore_session()
    with _lock:
        entry = _built.get(key)
        if entry is None or entry[0] is not session:
            arguments = _client_arguments(settings, pool=4, session=session)
            with collector_paused(_credentials_known(session, arguments)):
                entry = (session, session.create_client("dynamodbstreams", **arguments))
            _built[key] = entry
        return entry[1]


def stream_call(operation: str, params: dict[str, Any]) -> dict[str, Any]:
    """Send one DynamoDB Streams request and return its response.

    Args:
        operation: ``"DescribeStream"``, ``"GetShardIterator"``, ``"GetRecords"`` or ``"ListStreams"``.
        params: its parameters (``StreamArn``, ``ShardIterator``, ...).

    Returns:
        The response dict.

    Raises:
        ServiceError: DynamoDB Streams refused (``code``: ``ExpiredIteratorException``,
            ``TrimmedDataAccessException``, ``ResourceNotFoundException`` for an unknown stream, ...)
            or could not be reached.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    method = "".join("_" + c.lower() if c.isupper() else c for c in operation).lstrip("_")
    try:
        response = getattr(streams_client(), method)(**params)
    except ClientError as exc:
        raise client_error(operation, params, exc, None) from exc
    except BotoCoreError as exc:
        raise botocore_error(operation, params, exc, None) from exc
    return answered(operation, params, response, None)
