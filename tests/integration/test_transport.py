"""The direct transport (``transport: direct``) sends each signed request once, on kept-alive
connections, and fails the way botocore's transport fails, so botocore's retries and dynorm's
exactly-once writes hold: checked on the wire through a relay on 127.0.0.1 in front of DynamoDB
Local that can drop a response after the server applied the request, or close idle connections.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any, Callable, Iterator

import pytest

from dynorm import ConfigurationError, backend, conf
from dynorm.backend import transport
from tests.faults import fake_response, serve_loopback, stored_item
from tests.models import Tally

pytestmark = pytest.mark.dynamodb_local_only("a relay in front of DynamoDB Local's port; moto has none")


class Relay:
    """A TCP relay on 127.0.0.1 to ``target``: pipes bytes both ways, counts connections, and can
    swallow the next response (closing the client's connection once the server answered), pass on
    only its first bytes (``cut_next_response``: a function of the response's first bytes giving
    how many) before closing, or close every connection it holds (as a server closes idle
    keep-alive connections)."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.connections = 0
        self.drop_next_response = threading.Event()
        self.cut_next_response: Callable[[bytes], int] | None = None
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self.listener, self.port = serve_loopback(self._relay)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _relay(self, client: socket.socket) -> None:
        self.connections += 1
        upstream = socket.create_connection(("127.0.0.1", self.target))
        self.pairs.append((client, upstream))
        threading.Thread(target=self._pipe, args=(client, upstream, False), daemon=True).start()
        threading.Thread(target=self._pipe, args=(upstream, client, True), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket, answers: bool) -> None:
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                if answers and self.drop_next_response.is_set():
                    self.drop_next_response.clear()
                    break  # the server applied the request and answered: the client never hears it
                cut = self.cut_next_response if answers else None
                if cut is not None:
                    self.cut_next_response = None
                    b.sendall(data[:cut(data)])  # the server applied it: the client hears a part
                    break
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            _close(s)

    def close_all(self) -> None:
        """Close every connection (client and server side)."""
        for client, upstream in self.pairs:
            _close(client)
            _close(upstream)
        self.pairs.clear()

    def stop(self) -> None:
        self.close_all()
        self.listener.close()


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()


@pytest.fixture()
def relay(dynamodb_local: str, dynorm_tables: Any) -> Iterator[Relay]:
    port = int(dynamodb_local.rsplit(":", 1)[1])
    r = Relay(port)
    try:
        with conf.overridden(endpoint=r.endpoint, transport="direct"):
            list(Tally.objects.filter(name="warm-up"))  # the key-version check's GetItem, once per process
            yield r
    finally:
        r.stop()


class Sends:
    """Counts the requests the direct transport sends (a handler on ``dynorm-send`` before it)."""

    def __init__(self) -> None:
        self.operations: list[str] = []

    def __call__(self, event_name: str, **_: Any) -> None:
        self.operations.append(event_name.rsplit(".", 1)[1])


@pytest.fixture()
def sends() -> Iterator[Sends]:
    counter = Sends()
    events = backend.client().meta.events
    events.register_first(transport.SEND_EVENT, counter)
    try:
        yield counter
    finally:
        events.unregister(transport.SEND_EVENT, counter)


def test_requests_go_through_the_direct_transport_on_one_kept_alive_connection(relay: Relay, sends: Sends) -> None:
    Tally.objects.create(name="a", n=1)
    for _ in range(5):
        assert Tally.objects.get(name="a").n == 1
    assert sends.operations == ["PutItem"] + ["GetItem"] * 5
    assert relay.connections == 1


@pytest.mark.parametrize("setting", ["direct", "botocore"])
def test_a_hook_registered_on_the_client_that_answers_is_the_answer_and_nothing_is_sent(
        dynorm_tables: Any, setting: str) -> None:
    """A ``before-send`` handler registered directly on ``client().meta.events`` (not through
    ``register_hook``) that answers: the request never reaches DynamoDB, on either transport."""
    def answer(**_: Any) -> Any:
        return fake_response(200, {})

    with conf.overridden(transport=setting):
        events = backend.client().meta.events
        events.register("before-send.dynamodb.PutItem", answer)
        try:
            Tally.objects.create(name="answered", n=1)
        finally:
            events.unregister("before-send.dynamodb.PutItem", answer)
    with pytest.raises(KeyError):
        stored_item(Tally, name="answered")


def test_a_hook_that_raises_before_send_stops_the_request(dynorm_tables: Any, sends: Sends) -> None:
    class Refused(Exception):
        pass

    def refuse(**_: Any) -> None:
        raise Refused

    with backend_hook("before-send.dynamodb.PutItem", refuse), pytest.raises(Exception) as caught:
        Tally.objects.create(name="refused", n=1)
    assert isinstance(caught.value, Refused) or isinstance(caught.value.__cause__, Refused)
    assert sends.operations == []
    with pytest.raises(KeyError):
        stored_item(Tally, name="refused")


class backend_hook:  # noqa: N801 - used as a context manager, like a function
    def __init__(self, event: str, fn: Any) -> None:
        self.event, self.fn = event, fn

    def __enter__(self) -> None:
        backend.register_hook(self.event, self.fn)

    def __exit__(self, *exc: Any) -> None:
        backend.unregister_hook(self.event, self.fn)


def test_a_lost_response_is_retried_by_botocore_and_the_write_is_applied_once(relay: Relay, sends: Sends) -> None:
    """The server applies a create and the connection closes before its answer: the transport
    raises botocore's ConnectionClosedError, botocore retries, and dynorm's create reports success
    for the item it wrote (not an IntegrityError against itself)."""
    relay.drop_next_response.set()
    tally = Tally.objects.create(name="lost", n=3)
    assert sends.operations == ["PutItem", "PutItem"]  # the first answer lost, the retry answered
    assert relay.connections == 2
    stored = stored_item(Tally, name="lost")
    assert stored["n"] == {"N": "3"} and tally.n == 3
    assert [i.name for i in Tally.objects.scan() if i.name == "lost"] == ["lost"]


@pytest.mark.parametrize("cut", [
    pytest.param(lambda head: 3, id="inside-the-status-line"),
    pytest.param(lambda head: head.index(b"\r\n") + 2, id="after-the-status-line"),
    pytest.param(lambda head: head.index(b"\r\n\r\n") // 2, id="inside-the-headers"),
    pytest.param(lambda head: head.index(b"\r\n\r\n") + 3, id="inside-the-blank-line"),
])
def test_a_response_cut_inside_its_headers_is_a_lost_response_and_the_write_is_applied_once(
        relay: Relay, sends: Sends, cut: Callable[[bytes], int]) -> None:
    """The server applies a create and the connection closes in the middle of the answer's header
    block: not a complete answer (http.client would read what came as every header there is, an
    empty 200 "not from DynamoDB" or a header without its value), but a lost one, which botocore
    retries and dynorm's create reports as the success it was."""
    relay.cut_next_response = cut
    tally = Tally.objects.create(name="cut", n=3)
    assert sends.operations == ["PutItem", "PutItem"]
    assert stored_item(Tally, name="cut")["n"] == {"N": "3"} and tally.n == 3
    assert [i.name for i in Tally.objects.scan() if i.name == "cut"] == ["cut"]


def test_on_botocores_transport_a_write_whose_answer_is_cut_after_its_status_line_may_have_been_applied(
        relay: Relay) -> None:
    """botocore's transport (urllib3 over http.client) reads a connection closed after the status
    line as an empty 200: the error must not say the write failed when the server applied it."""
    from dynorm import ServiceError

    with conf.overridden(transport="botocore"):
        relay.cut_next_response = lambda head: head.index(b"\r\n") + 2
        with pytest.raises(ServiceError) as err:
            Tally.objects.create(name="cut-botocore", n=3)
    assert err.value.code == "NotDynamoDB" and err.value.maybe_applied
    assert "may have been applied" in str(err.value)
    assert stored_item(Tally, name="cut-botocore")["n"] == {"N": "3"}  # it was


def test_an_increment_whose_response_is_lost_is_applied_exactly_once(relay: Relay) -> None:
    from dynorm import F

    Tally.objects.create(name="inc", n=0)
    relay.drop_next_response.set()
    Tally.objects.filter(name="inc").update(n=F("n") + 1)
    assert stored_item(Tally, name="inc")["n"] == {"N": "1"}


def test_an_idle_connection_the_server_closed_is_replaced_without_a_retry(relay: Relay, sends: Sends) -> None:
    Tally.objects.create(name="idle", n=1)
    relay.close_all()  # as a server closes keep-alive connections it has not heard from
    seen: list[int] = []

    def attempts(parsed: dict[str, Any], **_: Any) -> None:
        seen.append(parsed["ResponseMetadata"]["RetryAttempts"])

    with backend_hook("after-call.dynamodb.GetItem", attempts):
        assert Tally.objects.get(name="idle").n == 1
    assert seen == [0]  # a new connection at once, not a failed send retried
    assert sends.operations == ["PutItem", "GetItem"]
    assert relay.connections == 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() only")
def test_a_forked_child_opens_its_own_connection_and_the_parent_keeps_its_own(relay: Relay, sends: Sends) -> None:
    """A process forked with a kept-alive connection open (a pre-forking server that warmed its
    client up) never shares it: two processes on one connection could read each other's answers."""
    Tally.objects.create(name="parent", n=1)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one request, its answer must be its own
        try:
            ok = Tally.objects.get(name="parent").n == 1
            os.write(write, b"ok" if ok else b"no")
        finally:
            os._exit(0)
    os.close(write)
    assert os.read(read, 2) == b"ok"
    os.waitpid(pid, 0)
    os.close(read)
    assert relay.connections == 2  # the child's own
    assert Tally.objects.get(name="parent").n == 1
    assert relay.connections == 2  # the parent's connection still serves it


def test_the_transport_setting_is_validated_and_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match="setting 'transport' = 'urllib3'.*'direct'.*'botocore'"):
        conf.configure(transport="urllib3")
    monkeypatch.setenv("DYNORM_TRANSPORT", "botocore")
    before = conf.snapshot()
    try:
        conf.reset()
        assert conf.get_settings().transport == "botocore"
    finally:
        conf.restore(before)


def test_a_proxy_for_the_endpoint_keeps_botocores_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert not transport.usable_for("https://dynamodb.eu-west-1.amazonaws.com")
    monkeypatch.setenv("NO_PROXY", "amazonaws.com")
    assert transport.usable_for("https://dynamodb.eu-west-1.amazonaws.com")


def test_a_request_leaves_in_one_write_header_block_and_body_together(dynamodb_local: str) -> None:
    """http.client writes a request's header block and its body apart (two system calls, two TCP
    segments with TCP_NODELAY); the direct transport's connections write them once."""
    port = int(dynamodb_local.rsplit(":", 1)[1])
    conn = transport._HTTPConnection("127.0.0.1", port, timeout=5)
    conn.connect()
    writes: list[bytes] = []
    real = conn.sock

    class Recording:
        def sendall(self, data: bytes) -> None:
            writes.append(bytes(data))
            real.sendall(data)

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    conn.sock = Recording()  # type: ignore[assignment]
    body = b'{"Limit": 1}'
    conn.request_in_one_write("POST", "/", body, {"Content-Type": "application/x-amz-json-1.0",
                                                  "X-Amz-Target": "DynamoDB_20120810.ListTables"})
    conn.sock = real
    response = conn.getresponse()
    response.read()
    conn.close()
    assert len(writes) == 1 and writes[0].startswith(b"POST / HTTP/1.1\r\n") and writes[0].endswith(b"\r\n\r\n" + body)
    assert response.status in (200, 400)  # unsigned: DynamoDB Local may refuse it; it answered the whole request
