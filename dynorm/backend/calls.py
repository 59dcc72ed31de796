"""The one I/O entry point: :func:`call` (botocore) and :func:`acall` (aiobotocore) send one request.

Each records the request (:mod:`.records`) and wraps botocore's errors once (:mod:`.errors`);
the step drivers (:mod:`.steps`) send every planned request through them.
"""

from __future__ import annotations

from typing import Any

from .clients import client, loop_client, request_done
from .errors import answered, botocore_error, client_error
from .records import Stats, record
from .retries import stopping

__all__ = ["call", "acall"]


_METHODS: dict[str, str] = {}  # "GetItem" -> "get_item"


def _method_name(operation: str) -> str:
    name = _METHODS.get(operation)
    if name is None:
        name = "".join("_" + c.lower() if c.isupper() else c for c in operation).lstrip("_")
        _METHODS[operation] = name
    return name


def call(operation: str, params: dict[str, Any], *, stats: Stats | None = None) -> dict[str, Any]:
    """Send one request to DynamoDB and return its response.

    Args:
        operation: the DynamoDB operation name (``"Query"``, ``"PutItem"``, ...).
        params: the request parameters in DynamoDB JSON (as botocore takes them).
        stats: a :class:`Stats` to add this request's figures to.

    Returns:
        The response dict.

    Raises:
        ConditionFailed: ConditionalCheckFailedException (``.item`` = the raw item DynamoDB
            returned, if any).
        TransactionCanceled: TransactionCanceledException, with one reason per action.
        TableDoesNotExist: ResourceNotFoundException.
        ServiceError: any other error, including an unreachable endpoint.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        response = getattr(client(), _method_name(operation))(**params)
    except ClientError as exc:
        raise client_error(operation, params, exc, stats) from exc
    except BotoCoreError as exc:
        raise botocore_error(operation, params, exc, stats, stopping=stopping()) from exc
    return answered(operation, params, response, stats)


async def acall(operation: str, params: dict[str, Any], *, stats: Stats | None = None) -> dict[str, Any]:
    """:func:`call` for asyncio: send one request with aiobotocore and return its response.

    The same records (``capture()``, ``stats``), retries and errors as :func:`call`. A
    cancelled task cancels the request (aiohttp closes its connection): nothing stays in flight.

    Raises:
        the errors of :func:`call`.
    """
    import asyncio

    from botocore.exceptions import BotoCoreError, ClientError

    entry = await loop_client()
    loop = asyncio.get_running_loop()
    method = getattr(entry.client, _method_name(operation))
    entry.in_flight += 1
    try:
        response = await method(**params)
    except asyncio.CancelledError:
        record(operation, params, None, "Cancelled", stats)  # it may have reached DynamoDB
        raise
    except ClientError as exc:
        raise client_error(operation, params, exc, stats) from exc
    except BotoCoreError as exc:
        raise botocore_error(operation, params, exc, stats, stopping=stopping()) from exc
    finally:
        request_done(loop, entry)
    return answered(operation, params, response, stats)
