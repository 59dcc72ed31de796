"""Fault injection on real requests through botocore's event hooks (never by mocking dynorm)."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from typing import Any, Callable, Iterator

import botocore.awsrequest

from dynorm import backend

__all__ = ["Hook", "deliver", "fake_response", "fake_aio_response", "raw_at", "serve_loopback", "stored_item"]


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **kwargs: Any) -> Iterator[bytes]:
        yield self.body


def fake_response(status: int, body: dict[str, Any]) -> botocore.awsrequest.AWSResponse:
    headers = {"content-type": "application/x-amz-json-1.0", "x-amzn-requestid": "dynorm-fault-injected"}
    return botocore.awsrequest.AWSResponse("http://127.0.0.1", status, headers, _Raw(json.dumps(body).encode()))


class _AioRaw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    async def read(self) -> bytes:
        return self.body


def fake_aio_response(status: int, body: dict[str, Any]) -> Any:
    """:func:`fake_response` for an aiobotocore client (its ``before-send`` hooks answer with an
    ``AioAWSResponse``, whose content is awaited)."""
    from aiobotocore.awsrequest import AioAWSResponse

    headers = {"content-type": "application/x-amz-json-1.0", "x-amzn-requestid": "dynorm-fault-injected"}
    return AioAWSResponse("http://127.0.0.1", status, headers, _AioRaw(json.dumps(body).encode()))


def serve_loopback(handle: Callable[[socket.socket], None], backlog: int = 64) -> tuple[socket.socket, int]:
    """Listen on 127.0.0.1 (a free port) and call ``handle`` with each connection accepted, on a
    daemon thread, until the listener is closed. Returns the listener and its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(backlog)

    def accept() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # the listener was closed
                return
            handle(client)

    threading.Thread(target=accept, daemon=True).start()
    return listener, listener.getsockname()[1]


class Hook:
    """A botocore before-send / after-call hook registered for the test's duration."""

    def __init__(self, event: str, fn: Callable[..., Any]) -> None:
        self.event, self.fn = event, fn

    def __enter__(self) -> Hook:
        backend.register_hook(self.event, self.fn)
        return self

    def __exit__(self, *exc: Any) -> None:
        backend.unregister_hook(self.event, self.fn)


def deliver(request: Any, body: bytes | None = None) -> bytes:
    """Send botocore's signed ``request`` to the server ourselves and return the response body.

    The server applies it; a hook that then raises ``ConnectionClosedError`` makes botocore
    retry, exactly as when a response is lost on the network. An HTTP error answer is
    returned as its body too. ``body`` replaces the request body (the signature then no longer
    matches: DynamoDB Local does not check it). 127.0.0.1 only.
    """
    headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
    req = urllib.request.Request(request.url, data=request.body if body is None else body, headers=headers)
    try:
        return urllib.request.urlopen(req, timeout=10).read()  # type: ignore[no-any-return]  # noqa: S310
    except urllib.error.HTTPError as exc:
        return exc.read()  # type: ignore[no-any-return]


def raw_at(table: type, pk: str, sk: str) -> dict[str, Any] | None:
    """The raw stored item at ``PK``/``SK`` of ``table`` (a consistent GetItem), or ``None``."""
    resp = backend.call("GetItem", {"TableName": table.table_name(), "Key": {"PK": {"S": pk}, "SK": {"S": sk}},
                                    "ConsistentRead": True})
    return resp.get("Item")


def stored_item(model: Any, **key: Any) -> dict[str, Any]:
    """The raw stored item of entity ``model`` at the primary key of the field values ``key``.

    A consistent GetItem; ``KeyError`` when no item is there.
    """
    resp = backend.call("GetItem", {"TableName": model._meta.table.table_name(), "ConsistentRead": True,
                                    "Key": model._meta.primary_key(key)})
    return dict(resp["Item"])
