"""Credentials and endpoints a user outside this repository meets (issue 12, section 1).

Real requests only: the credentials are read off the Authorization header botocore signs, and the
"not DynamoDB" endpoint is a real HTTP server on 127.0.0.1 answering with an HTML page.
"""

from __future__ import annotations

import http.server
import threading
from typing import Any, Iterator

import pytest

from dynorm import ServiceError, backend, capture, conf
from tests.faults import Hook
from tests.models import Store


def _signed_key(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    """Send one GetItem with the given AWS_* environment; return the access key id it was signed with."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/dynorm-test-credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/dynorm-test-config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    backend.reset_client()
    seen: list[str] = []

    def grab(request: Any, **kwargs: Any) -> None:
        auth = request.headers.get("Authorization", b"")
        auth = auth.decode() if isinstance(auth, bytes) else auth
        seen.append(auth.split("Credential=", 1)[1].split("/", 1)[0])

    with Hook("before-send.dynamodb.GetItem", grab):
        with pytest.raises(Store.DoesNotExist):
            Store.objects.get(store_id="nobody")
    return seen[0]


@pytest.fixture
def _fresh_client() -> Iterator[None]:
    yield
    backend.reset_client()  # drop the client signed with the test's environment


@pytest.mark.usefixtures("_fresh_client")
def test_credentials_from_botocores_chain_are_used_for_dynamodb_local(monkeypatch: pytest.MonkeyPatch) -> None:
    # DynamoDB Local without -sharedDb keeps one database per access key: the user's own key must be
    # used, or their AWS CLI / NoSQL Workbench see an empty server (the old code signed with a dummy key)
    assert _signed_key(monkeypatch, AWS_ACCESS_KEY_ID="AKIAUSERKEY1", AWS_SECRET_ACCESS_KEY="s3cret") == "AKIAUSERKEY1"


@pytest.mark.usefixtures("_fresh_client")
def test_dummy_credentials_only_when_none_resolve_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _signed_key(monkeypatch) == backend.LOCAL_CREDENTIALS[0]
    assert backend.credentials_for(conf.Settings(endpoint="https://dynamodb.eu-west-1.amazonaws.com")) is None
    assert backend.credentials_for(conf.Settings()) is None  # AWS itself: never dummy credentials


@pytest.mark.usefixtures("_fresh_client")
def test_pynamodb_escape_hatch_follows_the_same_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAUSERKEY2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cret")
    backend.reset_client()
    conf.configure(region=conf.get_settings().region)  # settings reload: the PynamoDB Meta is re-pointed
    meta = Store.Meta
    assert getattr(meta, "aws_access_key_id", None) is None  # PynamoDB resolves the user's own chain


# -- an endpoint that is not DynamoDB --------------------------------------------------------

class _Html(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = (b"<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>\n<body><h1>Welcome</h1>"
                + b"<p>" + b"lorem ipsum " * 200 + b"</p></body></html>")
        self.send_response(self.status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(params=[200, 404, 502])
def html_endpoint(request: pytest.FixtureRequest, dynamodb_local: str) -> Iterator[str]:
    handler = type("Handler", (_Html,), {"status": request.param})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    conf.configure(endpoint=endpoint, max_attempts=1)
    try:
        yield endpoint
    finally:
        conf.configure(endpoint=dynamodb_local, max_attempts=conf.Settings().max_attempts)
        server.shutdown()
        server.server_close()


def test_a_web_server_is_reported_in_one_line_naming_endpoint_and_operation(html_endpoint: str) -> None:
    with capture() as c, pytest.raises(ServiceError) as err:
        Store.objects.get(store_id="s1")
    msg = str(err.value)
    assert "\n" not in msg and "<" not in msg and "lorem" not in msg and len(msg) < 400
    assert html_endpoint in msg and "GetItem" in msg and Store._meta.table.table_name() in msg
    assert "did not answer as DynamoDB" in msg
    assert c.operations == ["GetItem"]


def test_a_200_html_page_is_never_read_as_no_such_item(html_endpoint: str) -> None:
    # botocore parses a 200 HTML page into an empty response: that must not become "does not exist"
    with pytest.raises(ServiceError, match="did not answer as DynamoDB"):
        Store.objects.filter(store_id="s1").count()


def test_batch_and_list_errors_name_their_tables_never_a_question_mark(html_endpoint: str) -> None:
    with pytest.raises(ServiceError) as err:
        Store.objects.in_bulk([{"store_id": "a"}, {"store_id": "b"}])
    assert "?" not in str(err.value) and Store._meta.table.table_name() in str(err.value)
    with pytest.raises(ServiceError) as err:
        backend.call("ListTables", {})
    assert "?" not in str(err.value) and "ListTables" in str(err.value)


def test_unreachable_loopback_endpoint_hints_the_dynorm_command(dynamodb_local: str) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf.configure(endpoint=f"http://127.0.0.1:{port}", max_attempts=1)
    try:
        with pytest.raises(ServiceError) as err:
            Store.objects.get(store_id="s1")
    finally:
        conf.configure(endpoint=dynamodb_local, max_attempts=conf.Settings().max_attempts)
    assert "`dynorm local start`" in str(err.value) and "make" not in str(err.value)
