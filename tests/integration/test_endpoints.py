"""Credentials and endpoints a user outside this repository meets (issue 12, section 1).

Real requests only: the credentials are read off the Authorization header botocore signs, and the
"not DynamoDB" endpoint is a real HTTP server on 127.0.0.1 answering with an HTML page.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
from typing import Any, Iterator

import pytest

from dynorm import ServiceError, backend, capture, conf
from tests.faults import Hook, deliver
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


@contextlib.contextmanager
def _stand_in(handler: type[http.server.BaseHTTPRequestHandler], dynamodb_local: str) -> Iterator[str]:
    """Serve ``handler`` on a loopback port and point dynorm at it (one attempt) for the block."""
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


@pytest.fixture(params=[200, 404, 502])
def html_endpoint(request: pytest.FixtureRequest, dynamodb_local: str) -> Iterator[str]:
    with _stand_in(type("Handler", (_Html,), {"status": request.param}), dynamodb_local) as endpoint:
        yield endpoint


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


# -- a server that is not DynamoDB, credentials, profiles, create_table's lost response and TTL --

class _NotDynamoDB(http.server.BaseHTTPRequestHandler):
    """Answers every request as "success" without being DynamoDB."""

    mode = "204"

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.mode == "204":
            self.send_response(204)
            self.end_headers()
            return
        body = b"{}" if self.mode == "200-json" else b""
        self.send_response(200)
        if self.mode == "200-json":
            self.send_header("Content-Type", "application/json")
            self.send_header("x-amzn-RequestId", "not-really")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(params=["204", "200-empty-no-content-type", "200-json"])
def not_dynamodb(request: pytest.FixtureRequest, dynamodb_local: str) -> Iterator[str]:
    with _stand_in(type("Handler", (_NotDynamoDB,), {"mode": request.param}), dynamodb_local) as endpoint:
        yield endpoint


def test_a_server_that_is_not_dynamodb_never_acknowledges_a_write_or_reads_as_missing(not_dynamodb: str) -> None:
    # acknowledged means present: a 204, an empty 200 or a bare JSON {} is not DynamoDB's answer
    with capture() as c, pytest.raises(ServiceError) as err:
        Store(store_id="a", name="A").save()
    msg = str(err.value)
    assert len(c.operations) == 1 and msg.startswith(c.operations[0])  # save(): one UpdateItem
    assert "\n" not in msg and not_dynamodb in msg and "did not answer as DynamoDB" in msg
    assert err.value.code == "NotDynamoDB"
    with pytest.raises(ServiceError, match="GetItem.*did not answer as DynamoDB"):
        Store.objects.get(store_id="a")
    with pytest.raises(ServiceError, match="did not answer as DynamoDB"):
        Store.objects.filter(store_id="a").count()


def test_dynamodb_locals_answers_carry_what_backend_call_checks(dynamodb_local: str) -> None:
    meta = backend.call("ListTables", {})["ResponseMetadata"]
    assert meta["HTTPStatusCode"] == 200 and meta["RequestId"]
    assert "x-amz-json" in meta["HTTPHeaders"]["content-type"]


@pytest.mark.usefixtures("_fresh_client")
def test_a_missing_aws_profile_is_a_configuration_error_and_configure_is_all_or_nothing(
        dynamodb_local: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from dynorm import ConfigurationError

    monkeypatch.setenv("AWS_PROFILE", "dynorm-no-such-profile")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/dynorm-test-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/dynorm-test-credentials")
    backend.reset_client()
    before = conf.get_settings()
    with capture() as c, pytest.raises(ConfigurationError, match="dynorm-no-such-profile") as err:
        conf.configure(endpoint="http://127.0.0.1:9", table_prefix="other-")
        Store.objects.get(store_id="a")
    assert "AWS_PROFILE" in str(err.value) and c.count == 0
    monkeypatch.delenv("AWS_PROFILE")
    backend.reset_client()
    assert (conf.get_settings().endpoint, conf.get_settings().table_prefix) == (before.endpoint, before.table_prefix)


@pytest.mark.usefixtures("_fresh_client")
def test_an_access_key_dynamodb_local_refuses_is_explained(dynamodb_local: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "fake_key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake_secret")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    backend.reset_client()
    with pytest.raises(ServiceError) as err:
        Store.objects.get(store_id="a")
    assert err.value.code == "UnrecognizedClientException"
    assert "letters and digits" in str(err.value) and "AWS_ACCESS_KEY_ID" in str(err.value)


def _lost_table() -> type:
    import uuid

    from dynorm import Entity, Table, fields

    class LostTable(Table):
        class Meta:
            table_name = f"lost-{uuid.uuid4().hex[:8]}"
            ttl_attribute = "expires"

    class LostItem(Entity):
        xid = fields.String()
        expires = fields.TTL(null=True)

        class Meta:
            table = LostTable
            pk = "X#{xid}"
            sk = "X"

    return LostTable


@pytest.mark.parametrize("exist_ok", [True, False])
def test_create_table_with_a_lost_response_is_created_and_finished(dynamodb_local: str, exist_ok: bool) -> None:
    # CreateTable reaches DynamoDB, its answer is lost, botocore retries: ResourceInUseException.
    # The table is this call's: True, ACTIVE, TTL on (also with exist_ok=False: nothing failed)

    import botocore.exceptions

    table = _lost_table()
    sent = {"n": 0}

    def applied_then_lost(request: Any, **kwargs: Any) -> None:
        sent["n"] += 1
        if sent["n"] == 1:
            deliver(request)
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    try:
        with Hook("before-send.dynamodb.CreateTable", applied_then_lost):
            created = table.create_table(exist_ok=exist_ok)
        ttl = backend.call("DescribeTimeToLive", {"TableName": table.table_name()})["TimeToLiveDescription"]
        assert (created, ttl.get("TimeToLiveStatus"), sent["n"]) == (True, "ENABLED", 2)
        assert table.describe()["TableStatus"] == "ACTIVE"  # type: ignore[index]
    finally:
        table.delete_table(wait=False)


def test_create_table_exist_ok_turns_on_the_declared_ttl(dynamodb_local: str) -> None:
    from dynorm import schema

    table = _lost_table()
    params = schema.create_action(table).params
    backend.call("CreateTable", params)  # created elsewhere, without TTL
    try:
        with capture() as c:
            assert table.create_table(exist_ok=True) is False
        assert "UpdateTimeToLive" in c.operations
        ttl = backend.call("DescribeTimeToLive", {"TableName": table.table_name()})["TimeToLiveDescription"]
        assert ttl.get("TimeToLiveStatus") == "ENABLED"
        with capture() as c:
            assert table.create_table(exist_ok=True) is False  # already on: no UpdateTimeToLive
        assert "UpdateTimeToLive" not in c.operations
        with pytest.raises(ServiceError, match="ResourceInUse"):
            table.create_table()
    finally:
        table.delete_table(wait=False)


class _Body:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


@pytest.mark.parametrize("wire", ["direct", "botocore"])
@pytest.mark.parametrize("body", [b"", b"<html><title>Gateway</title></html>", b'{"Item": {"n": {"S": "A', b"[1]"],
                         ids=["empty", "html", "truncated", "array"])
def test_a_dynamodb_200_whose_body_is_not_a_json_object_is_a_service_error_never_does_not_exist(
        dynorm_tables: Any, wire: str, body: bytes) -> None:
    """DynamoDB's status, content type and request id, but a body no item can be read from."""
    import botocore.awsrequest

    def answer(**_: Any) -> Any:
        headers = {"content-type": "application/x-amz-json-1.0", "x-amzn-requestid": "dynorm-fault-injected"}
        return botocore.awsrequest.AWSResponse("http://127.0.0.1", 200, headers, _Body(body))

    with conf.overridden(wire=wire):
        Store(store_id="b", name="B").save()
        with Hook("before-send.dynamodb.GetItem", answer), capture() as c, pytest.raises(ServiceError) as err:
            Store.objects.get(store_id="b")
        assert c.operations == ["GetItem"]
        assert err.value.code == "UnreadableResponse" and err.value.operation == "GetItem"
        assert not err.value.maybe_applied and "can be sent again" in str(err.value)
        assert not isinstance(err.value, Store.DoesNotExist)
        with Hook("before-send.dynamodb.PutItem", answer), pytest.raises(ServiceError) as err:
            backend.call("PutItem", {"TableName": Store._meta.table.table_name(),
                                     "Item": Store._meta.primary_key({"store_id": "c"})})
        assert err.value.code == "UnreadableResponse" and err.value.maybe_applied
