"""Fault injection on real requests through botocore's event hooks (never by mocking dynorm)."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator

import botocore.awsrequest

from dynorm import backend

__all__ = ["Hook", "fake_response"]


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **kwargs: Any) -> Iterator[bytes]:
        yield self.body


def fake_response(status: int, body: dict[str, Any]) -> botocore.awsrequest.AWSResponse:
    headers = {"content-type": "application/x-amz-json-1.0", "x-amzn-requestid": "dynorm-fault-injected"}
    return botocore.awsrequest.AWSResponse("http://127.0.0.1", status, headers, _Raw(json.dumps(body).encode()))


class Hook:
    """A botocore before-send / after-call hook registered for the test's duration."""

    def __init__(self, event: str, fn: Callable[..., Any]) -> None:
        self.event, self.fn = event, fn

    def __enter__(self) -> Hook:
        backend.register_hook(self.event, self.fn)
        return self

    def __exit__(self, *exc: Any) -> None:
        backend.unregister_hook(self.event, self.fn)
