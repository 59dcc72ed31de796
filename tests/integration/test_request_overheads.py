"""What dynorm leaves out of botocore's per-request work (issue 24), and what every request still carries.

Real requests to DynamoDB Local, read at ``before-send`` (what botocore puts on the wire after
signing), on both wires.
"""

from __future__ import annotations

from typing import Any

import pytest

from dynorm import backend, conf


def _sent_headers(count: int = 2) -> list[Any]:
    """The headers of ``count`` ListTables requests, as botocore sends them."""
    seen: list[Any] = []

    def grab(request: Any, **_: Any) -> None:
        seen.append(request.headers)

    events = backend.client().meta.events
    events.register("before-send.dynamodb.ListTables", grab)
    try:
        for _ in range(count):
            backend.client().list_tables(Limit=1)
    finally:
        events.unregister("before-send.dynamodb.ListTables", grab)
    return seen


@pytest.mark.parametrize("wire", ["direct", "botocore"])
def test_the_user_agent_is_botocores_client_string_computed_once(dynamodb_local: str, wire: str) -> None:
    """Every request carries botocore's User-Agent of the client (SDK, OS, language, retry mode),
    the same on every request: no per-request rebuild (botocore's cost ~14% of a GetItem)."""
    with conf.overridden(wire=wire):
        agent = backend.client().meta.config.user_agent
        headers = _sent_headers()
    assert [h["User-Agent"].decode() for h in headers] == [agent, agent]
    assert agent.startswith("Botocore/") and " lang/python#" in agent and "cfg/retry-mode#standard" in agent
    assert all(h["Authorization"].startswith(b"AWS4-HMAC-SHA256 ") for h in headers)  # still signed by botocore


def test_the_user_agent_keeps_the_app_id(dynamodb_local: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``AWS_SDK_UA_APP_ID`` (botocore's ``user_agent_appid``) is still sent."""
    monkeypatch.setenv("AWS_SDK_UA_APP_ID", "shop-42")
    backend.reset_client()
    try:
        [headers] = _sent_headers(1)
    finally:
        monkeypatch.delenv("AWS_SDK_UA_APP_ID")
        backend.reset_client()
    assert headers["User-Agent"].decode().endswith(" app/shop-42")
