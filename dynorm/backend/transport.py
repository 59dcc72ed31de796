"""The direct transport (setting ``transport: direct``): dynorm sends botocore's signed requests.

botocore builds, signs and retries every request as before; only the last step, putting the
signed bytes on a socket and reading the answer, is done here with the standard library's
:mod:`http.client` on kept-alive connections, instead of botocore's urllib3 session (about 60 %
of a GetItem's client CPU on botocore's transport; ``bench/bench_compare.py``).

The seam is botocore's documented ``before-send`` event ("allows a response to be returned that
fulfills the request; if no response is returned botocore will fulfill the request as normal"),
with the session's event hooks (``botocore.session.Session(event_hooks=...)``) a
:class:`SendingEmitter`: botocore's emitter, which after running every ``before-send`` handler as
botocore does (all of them, in botocore's order) and only when none of them answered, emits
``dynorm-send.<service>.<operation>``, where the client's :class:`Sender` is registered. So a
handler that answers a request (a fault-injection hook, a stub, moto's in-process mock) is
answered once, by it, and the request is never also sent. Failures are raised as the exceptions
botocore's own transport raises (:class:`~botocore.exceptions.EndpointConnectionError`,
``ConnectTimeoutError``, ``ReadTimeoutError``, ``ConnectionClosedError``, ``HTTPClientError``),
so botocore's retry handler, ``needs-retry`` hooks and error messages are unchanged. A proxy
configured for the endpoint (``HTTPS_PROXY`` ...) keeps botocore's transport (:func:`usable_for`).

The asyncio clients (aiobotocore) keep aiobotocore's transport.
"""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import threading
import weakref
from typing import Any
from urllib.parse import urlsplit

from botocore.hooks import HierarchicalEmitter, first_non_none_response

__all__ = ["SEND_EVENT", "Sender", "SendingEmitter", "install", "usable_for"]

#: the event the sender is registered on, emitted after ``before-send`` when no handler answered
SEND_EVENT = "dynorm-send"
_BEFORE_SEND = "before-send."


class SendingEmitter(HierarchicalEmitter):
    """botocore's event emitter, which emits :data:`SEND_EVENT` after a ``before-send`` event that
    no handler answered (the session's ``event_hooks``; each client gets a copy, as botocore's)."""

    def emit(self, event_name: str, **kwargs: Any) -> list[tuple[Any, Any]]:
        """Emit ``event_name`` as botocore's emitter does; after ``before-send.<service>.<operation>``
        left unanswered, emit ``dynorm-send.<service>.<operation>`` too (its answers appended).

        Returns:
            ``[(handler, response), ...]`` of every handler called, in order.
        """
        responses: list[tuple[Any, Any]] = super().emit(event_name, **kwargs)
        if event_name.startswith(_BEFORE_SEND) and first_non_none_response(responses) is None:
            responses += super().emit(SEND_EVENT + event_name[len(_BEFORE_SEND) - 1:], **kwargs)
        return responses


class _Body:
    """The raw body of a response already read, in the shape ``AWSResponse.content`` reads."""

    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Any:
        """Yield the body (one chunk)."""
        yield self.body


class _HeadLines:
    """A response's reader while its status line and headers are read: notes a line the
    connection cut short (no line end), which :mod:`http.client` would take as the header
    block's end."""

    __slots__ = ("fp", "cut")

    def __init__(self, fp: Any) -> None:
        self.fp = fp
        self.cut = False

    def readline(self, limit: int = -1) -> bytes:
        """Read one line (at most ``limit`` bytes), noting one cut short by the connection's end."""
        line: bytes = self.fp.readline(limit)
        if not line.endswith(b"\n") and (limit < 0 or len(line) < limit):
            self.cut = True
        return line

    def close(self) -> None:
        """Close the reader (http.client closes it on a malformed status line)."""
        self.fp.close()


class _Response(http.client.HTTPResponse):
    """:mod:`http.client`'s response, which refuses a header block the connection cut short.

    http.client reads the end of the connection as the end of the headers: a 200 cut after its
    status line would read as an empty answer without DynamoDB's headers (``NotDynamoDB``: a write
    the server applied reported as failed), a header cut inside its value as that value. Such an
    answer was lost, as one cut inside its body is.
    """

    def begin(self) -> None:
        """Read the status line and headers (:meth:`http.client.HTTPResponse.begin`).

        Raises:
            http.client.RemoteDisconnected: the connection closed inside the header block.
        """
        lines = _HeadLines(self.fp)
        self.fp = lines  # type: ignore[assignment]
        try:
            super().begin()
        finally:
            if self.fp is lines:
                self.fp = lines.fp
        if lines.cut:
            raise http.client.RemoteDisconnected("the connection closed inside the response's headers")


class _OneWrite:
    """For :mod:`http.client`'s connections: a request's header block and its body leave in one
    write. http.client writes them apart (``_send_output``: the header block, then the body), which
    costs a second system call and, with TCP_NODELAY, a second segment per request."""

    _head: bytes | None = None
    _hold = False

    def request_in_one_write(self, method: str, target: str, body: bytes | None, headers: dict[str, str]) -> None:
        """:meth:`http.client.HTTPConnection.request`, its header block held until the body is written."""
        self._hold = bool(body)
        try:
            self.request(method, target, body=body, headers=headers)  # type: ignore[attr-defined]
        finally:
            self._hold, self._head = False, None

    def send(self, data: Any) -> None:
        """:meth:`http.client.HTTPConnection.send`; the header block of a request with a body is
        held and written with the body."""
        if self._hold:
            if self._head is None:
                self._head = data
                return
            data, self._head, self._hold = self._head + data, None, False
        super().send(data)  # type: ignore[misc]


class _HTTPConnection(_OneWrite, http.client.HTTPConnection):
    """:class:`http.client.HTTPConnection` with :class:`_OneWrite` and :class:`_Response`."""

    response_class = _Response


class _HTTPSConnection(_OneWrite, http.client.HTTPSConnection):
    """:class:`http.client.HTTPSConnection` with :class:`_OneWrite` and :class:`_Response`."""

    response_class = _Response


class _Pool:
    """Idle kept-alive connections to one host (LIFO; a connection serves one request at a time)."""

    def __init__(self, scheme: str, host: str, port: int | None, sender: Sender) -> None:
        self.scheme, self.host, self.port = scheme, host, port
        self.sender = sender
        self.idle: list[_HTTPConnection | _HTTPSConnection] = []
        self.lock = threading.Lock()

    def take(self) -> _HTTPConnection | _HTTPSConnection:
        """An idle connection still open, or a new one (not yet connected)."""
        with self.lock:
            while self.idle:
                conn = self.idle.pop()
                if not _dropped(conn):
                    return conn
                conn.close()
        if self.scheme == "https":
            return _HTTPSConnection(self.host, self.port, timeout=self.sender.connect_timeout,
                                    context=self.sender.ssl_context())
        return _HTTPConnection(self.host, self.port, timeout=self.sender.connect_timeout)

    def give(self, conn: _HTTPConnection | _HTTPSConnection) -> None:
        """Keep ``conn`` for the next request (at most ``max_pool`` are kept)."""
        with self.lock:
            if len(self.idle) < self.sender.max_pool:
                self.idle.append(conn)
                return
        conn.close()


def _dropped(conn: http.client.HTTPConnection) -> bool:
    """True when an idle connection was closed by the server (its socket reads as ready: EOF or
    unexpected bytes), as urllib3 checks before reusing one."""
    sock = conn.sock
    if sock is None:
        return True
    import select

    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


_senders: weakref.WeakSet[Sender] = weakref.WeakSet()


def _forget_connections_in_child() -> None:
    """After ``fork()``, in the child: forget the parent's kept-alive connections (never closed
    here: closing the child's copy of a socket leaves the parent's open), so the two processes never
    read each other's answers on one connection."""
    for sender in list(_senders):
        sender._pools = {}
        sender._lock = threading.Lock()  # another thread of the parent may have held it


os.register_at_fork(after_in_child=_forget_connections_in_child)


class Sender:
    """The ``before-send`` handler that sends a signed request with :mod:`http.client`.

    Args:
        connect_timeout: seconds to wait for a connection (the ``connect_timeout`` setting).
        read_timeout: seconds to wait for each read of the response (``read_timeout``).
        max_pool: idle connections kept per host (botocore's ``max_pool_connections``).
        ca_bundle: the certificate bundle for HTTPS (botocore's ``ca_bundle`` / ``AWS_CA_BUNDLE``),
            or ``None`` for botocore's default bundle.
    """

    def __init__(self, connect_timeout: float, read_timeout: float, max_pool: int = 10,
                 ca_bundle: str | None = None) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_pool = max_pool
        self.ca_bundle = ca_bundle
        self._pools: dict[str, _Pool] = {}
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None
        _senders.add(self)

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context of HTTPS connections (certificates verified, botocore's CA bundle)."""
        if self._ssl is None:
            from botocore.httpsession import get_cert_path

            self._ssl = ssl.create_default_context(cafile=get_cert_path(self.ca_bundle or True))
        return self._ssl

    def _pool(self, url: str) -> tuple[_Pool, str]:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        pool = self._pools.get(origin)
        if pool is None:
            with self._lock:
                pool = self._pools.setdefault(origin, _Pool(parts.scheme, parts.hostname or "", parts.port, self))
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        return pool, target

    def __call__(self, request: Any, **_: Any) -> Any:
        """Send ``request`` (botocore's ``AWSPreparedRequest``) and return botocore's ``AWSResponse``
        (``None``, leaving it to botocore's transport, for a streaming response).

        Raises:
            botocore.exceptions.EndpointConnectionError: the endpoint refused or could not be resolved.
            botocore.exceptions.ConnectTimeoutError: no connection within ``connect_timeout``.
            botocore.exceptions.ReadTimeoutError: no response within ``read_timeout``.
            botocore.exceptions.ConnectionClosedError: the connection closed before a whole response.
            botocore.exceptions.HTTPClientError: any other failure of the exchange.
        """
        if request.stream_output:  # no data-plane operation streams; botocore's transport does
            return None
        from botocore import exceptions as bx
        from botocore.awsrequest import AWSResponse

        pool, target = self._pool(request.url)
        conn = pool.take()
        url = request.url
        try:
            if conn.sock is None:
                try:
                    conn.connect()
                except (TimeoutError, socket.timeout) as exc:
                    raise bx.ConnectTimeoutError(endpoint_url=url, error=exc) from exc
                except ssl.SSLError as exc:
                    raise bx.SSLError(endpoint_url=url, error=exc) from exc
                except OSError as exc:  # refused, unreachable, unknown host
                    raise bx.EndpointConnectionError(endpoint_url=url, error=exc) from exc
                sock: socket.socket = conn.sock  # type: ignore[assignment]
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no wait for the previous answer's ACK
                sock.settimeout(self.read_timeout)
            try:
                body = request.body
                if body is not None and not isinstance(body, bytes):
                    body = body.encode("utf-8") if isinstance(body, str) else bytes(body.read())
                conn.request_in_one_write(request.method, target, body, dict(request.headers.items()))
                response = conn.getresponse()
                content = response.read()
            except (TimeoutError, socket.timeout) as exc:
                raise bx.ReadTimeoutError(endpoint_url=url, error=exc) from exc
            except (http.client.HTTPException, ConnectionError) as exc:  # closed, reset, malformed
                raise bx.ConnectionClosedError(endpoint_url=url, request=request, error=exc) from exc
            except OSError as exc:
                raise bx.HTTPClientError(error=exc) from exc
        except BaseException:  # Ctrl-C included: a half-used connection is never reused
            conn.close()
            raise
        if response.will_close:
            conn.close()
        else:
            pool.give(conn)
        return AWSResponse(url, response.status, response.getheaders(), _Body(content))

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            with pool.lock:
                idle, pool.idle = pool.idle, []
            for conn in idle:
                conn.close()


def usable_for(endpoint_url: str) -> bool:
    """True when the direct transport can send to ``endpoint_url``: no proxy is configured for it
    (``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY``, read by botocore's ``get_environ_proxies`` as
    botocore's endpoint does when it builds its transport; dynorm sets no ``proxies`` itself).

    Args:
        endpoint_url: the client's endpoint (``client.meta.endpoint_url``).
    """
    from botocore.utils import get_environ_proxies

    return not get_environ_proxies(endpoint_url).get(urlsplit(endpoint_url).scheme)


def install(client: Any, session: Any, connect_timeout: float, read_timeout: float, max_pool: int) -> Sender | None:
    """Put the direct transport on one botocore DynamoDB client (``None``: a proxy keeps botocore's).

    Args:
        client: the client (``session.create_client("dynamodb", ...)`` of a session whose
            ``event_hooks`` is a :class:`SendingEmitter`; on another the sender is never called).
        session: its botocore session (its ``ca_bundle`` setting is used for HTTPS).
        connect_timeout: seconds; the ``connect_timeout`` setting.
        read_timeout: seconds; the ``read_timeout`` setting.
        max_pool: idle connections kept per host.

    Returns:
        The sender registered (its :meth:`Sender.close` closes its connections).
    """
    if not usable_for(client.meta.endpoint_url):
        return None
    sender = Sender(connect_timeout, read_timeout, max_pool, session.get_config_variable("ca_bundle"))
    client.meta.events.register(SEND_EVENT, sender, unique_id="dynorm-transport-send")
    return sender
