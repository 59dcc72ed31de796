"""The only module that talks to DynamoDB: one botocore client, request records, error wrapping.

Every request goes through :func:`call`, which records it (operation, table, index,
consumed capacity, items) for :func:`capture` blocks and queryset ``stats``, and wraps
botocore errors once into dynorm errors (the botocore error stays as ``__cause__``).
Retries of throttled requests are botocore's (standard mode, ``settings.max_attempts``).
"""

from __future__ import annotations

import os
import random
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncGenerator, AsyncIterator, Callable, Generator, Iterator

from . import conf
from .exceptions import (
    ConditionFailed,
    ConfigurationError,
    DynormError,
    ServiceError,
    TableDoesNotExist,
    TransactionCanceled,
)

__all__ = ["client", "call", "paginate", "aclient", "acall", "apaginate", "aclose", "drive", "adrive", "stream",
           "collect", "first_emit", "astream", "Send", "Sleep", "Emit", "Pager", "RetryPolicy", "register_hook",
           "unregister_hook", "set_send_guard", "capture", "Capture", "RequestRecord", "Stats", "LOCAL_CREDENTIALS",
           "credentials_for", "describe_endpoint", "tables_of", "no_retries_after"]

#: Dummy credentials, used only when botocore's credential chain resolves none *and* the endpoint
#: is on the loopback interface (DynamoDB Local checks nothing but needs *some* letters-and-digits key).
LOCAL_CREDENTIALS = ("dynormlocal", "dynormlocal")

@dataclass(frozen=True)
class RetryPolicy:
    """The one backoff policy of dynorm's own retry loops (unprocessed batch items and keys,
    ``update_with_retry``): sleep ``uniform(0, min(max_delay, base_delay * 2**attempt))``.

    Throttled requests as a whole are retried inside botocore (standard mode), not here.

    Attributes:
        max_attempts: tries at most (the first one included).
        base_delay, max_delay: seconds.
    """

    max_attempts: int = 8
    base_delay: float = 0.05
    max_delay: float = 2.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based): full jitter."""
        return random.uniform(0, min(self.max_delay, self.base_delay * 2 ** attempt))


_client_lock = threading.Lock()
_clients: dict[tuple[Any, ...], Any] = {}  # one client per connection (_connection)
_last: tuple[conf.Settings, Any] | None = None  # the settings last asked for and their client
_session: Any = None
_UNRESOLVED: Any = object()
_resolved: Any = _UNRESOLVED  # botocore's chain is walked once per process (IMDS may take seconds)


def _botocore_session() -> Any:
    global _session
    if _session is None:
        import botocore.session

        _session = botocore.session.get_session()
    return _session


def credentials_for(settings: conf.Settings) -> tuple[str, str] | None:
    """Return the explicit credentials a client for ``settings`` needs, or ``None`` for botocore's own.

    dynorm never replaces credentials the user has: whatever botocore's chain resolves
    (environment, ``~/.aws``, SSO, instance role) is used, also for DynamoDB Local, which keeps
    one database per access key and region unless started with ``-sharedDb`` (so the AWS CLI,
    NoSQL Workbench and dynorm see the same tables). Only when the chain resolves nothing and the
    endpoint is on the loopback interface are the dummy :data:`LOCAL_CREDENTIALS` used.

    Args:
        settings: the settings the client is built for.

    Returns:
        ``(access_key_id, secret_access_key)`` to pass to the client, or ``None`` to let botocore
        resolve them (no request to DynamoDB is sent).
    """
    global _resolved
    if not settings.is_local:
        return None
    if _resolved is _UNRESOLVED:
        from botocore.exceptions import BotoCoreError

        try:
            _resolved = _botocore_session().get_credentials()
        except BotoCoreError as exc:
            if type(exc).__name__ not in _CREDENTIAL_CHAIN_ERRORS:
                raise
            raise _credential_chain_error("", exc, settings) from exc
    return None if _resolved is not None else LOCAL_CREDENTIALS


def describe_endpoint(settings: conf.Settings | None = None) -> str:
    """Return where requests go, for messages: the endpoint URL, or ``AWS (region)``."""
    settings = settings or conf.get_settings()
    return settings.endpoint or f"AWS ({settings.region})"


def _connection(settings: conf.Settings) -> tuple[Any, ...]:
    """The settings a client is built from; other settings never replace the client."""
    return (settings.region, settings.endpoint, settings.is_local, settings.max_attempts,
            settings.connect_timeout, settings.read_timeout)


def client() -> Any:
    """Return the botocore DynamoDB client for the current settings (built once, thread-safe).

    Use it to register botocore event hooks, e.g. for fault-injection tests:
    ``dynorm.backend.client().meta.events.register("before-send.dynamodb.Query", hook)``.
    A settings change that does not touch the connection (``cursor_secret``, ``table_prefix``,
    ``models``, ...) keeps this client and its hooks; a new endpoint, region, retry or timeout
    setting builds a new client, which gets the hooks registered with :func:`register_hook`.
    One client is kept per connection, so threads using :func:`dynorm.conf.overridden` settings
    each get the client of their own endpoint.
    """
    global _last
    settings = conf.get_settings()
    last = _last  # one read: another thread may replace it meanwhile
    if last is not None and last[0] is settings:
        return last[1]
    key = _connection(settings)
    with _client_lock:
        built = _clients.get(key)
        if built is None:
            from botocore.config import Config

            session = _botocore_session()
            kwargs: dict[str, Any] = {}
            explicit = credentials_for(settings)
            if explicit is not None:
                kwargs["aws_access_key_id"], kwargs["aws_secret_access_key"] = explicit
            # parameter_validation off, as PynamoDB does: every request is built by dynorm's
            # planners and DynamoDB validates it anyway; walking the shapes costs ~10% per call
            config = Config(retries={"mode": "standard", "total_max_attempts": settings.max_attempts},
                            connect_timeout=settings.connect_timeout, read_timeout=settings.read_timeout,
                            max_pool_connections=32, parameter_validation=False)
            built = session.create_client("dynamodb", region_name=settings.region,
                                          endpoint_url=settings.endpoint, config=config, **kwargs)
            for event, handler in _hooks:
                built.meta.events.register(event, handler)
            _clients[key] = built
        _last = (settings, built)
        return built


_hooks: list[tuple[str, Any]] = []


def register_hook(event: str, handler: Any) -> None:
    """Register a botocore event hook on the client, now and on every client built later.

    The asyncio clients (:func:`aclient`) get it too, already built or not.

    Args:
        event: a botocore event name (``"before-send.dynamodb.PutItem"``, ``"after-call.dynamodb.*"``).
        handler: the callable botocore calls with the event's keyword arguments.
    """
    with _client_lock:
        _hooks.append((event, handler))
        for built in _clients.values():
            built.meta.events.register(event, handler)
    client()  # the current settings' client, built now (with every hook) if it did not exist
    for clients in list(_aclients.values()):  # the asyncio clients already built
        for entry in clients.clients():
            entry.client.meta.events.register(event, handler)


def unregister_hook(event: str, handler: Any) -> None:
    """Remove a hook added with :func:`register_hook` (from the current client and later ones)."""
    with _client_lock:
        _hooks[:] = [(e, h) for e, h in _hooks if (e, h) != (event, handler)]
        for built in _clients.values():
            built.meta.events.unregister(event, handler)
    for clients in list(_aclients.values()):
        for entry in clients.clients():
            entry.client.meta.events.unregister(event, handler)


@dataclass
class Stats:
    """Cost of the requests made for one queryset evaluation or capture block.

    Attributes:
        requests: number of requests sent.
        items: items returned (``Count``; for GetItem 0 or 1).
        scanned: items read before filtering (``ScannedCount``).
        read_capacity: read capacity units consumed.
        write_capacity: write capacity units consumed.
    """

    requests: int = 0
    items: int = 0
    scanned: int = 0
    read_capacity: float = 0.0
    write_capacity: float = 0.0

    def add(self, record: RequestRecord) -> None:
        """Add one request's figures."""
        self.requests += 1
        self.items += record.items
        self.scanned += record.scanned
        self.read_capacity += record.read_capacity
        self.write_capacity += record.write_capacity


@dataclass
class RequestRecord:
    """One request sent to DynamoDB.

    Attributes:
        operation: ``GetItem``, ``Query``, ``PutItem``, ...
        table: table name; index: index name or ``None``.
        params: the request parameters as sent.
        items, scanned: ``Count``/``ScannedCount`` (or 1/0 for a found GetItem).
        read_capacity, write_capacity: consumed capacity units (when DynamoDB reports them).
        error: the DynamoDB error code when the request failed, else ``None``.
    """

    operation: str
    table: str | None
    index: str | None
    params: dict[str, Any]
    items: int = 0
    scanned: int = 0
    read_capacity: float = 0.0
    write_capacity: float = 0.0
    error: str | None = None


@dataclass
class Capture:
    """Requests recorded inside a :func:`capture` block (from every thread)."""

    requests: list[RequestRecord] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.requests)

    @property
    def count(self) -> int:
        """Number of requests sent."""
        return len(self.requests)

    @property
    def operations(self) -> list[str]:
        """The operations sent, in order (``["Query", "GetItem"]``)."""
        return [r.operation for r in self.requests]

    @property
    def stats(self) -> Stats:
        """Totals over the captured requests."""
        total = Stats()
        for r in self.requests:
            total.add(r)
        return total


_captures: list[Capture] = []
_captures_lock = threading.Lock()


@contextmanager
def capture() -> Iterator[Capture]:
    """Record every request sent (by any thread) while the block runs.

    Example::

        with dynorm.capture() as c:
            list(Product.objects.by_brand("3"))
        assert c.operations == ["Query"]

    Yields:
        a :class:`Capture` whose ``requests`` fill in as requests are sent.
    """
    cap = Capture()
    with _captures_lock:
        _captures.append(cap)
    try:
        yield cap
    finally:
        with _captures_lock:
            _captures.remove(cap)


def _consumed(consumed: Any) -> tuple[float, float]:
    if not consumed:
        return 0.0, 0.0
    if isinstance(consumed, list):
        r = w = 0.0
        for c in consumed:
            cr, cw = _consumed(c)
            r += cr
            w += cw
        return r, w
    read = consumed.get("ReadCapacityUnits")
    write = consumed.get("WriteCapacityUnits")
    if read is None and write is None:
        total = float(consumed.get("CapacityUnits", 0.0))
        return total, 0.0
    return float(read or 0.0), float(write or 0.0)


_WRITE_OPS = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}


def _record(operation: str, params: dict[str, Any], response: dict[str, Any] | None,
            error: str | None, stats: Stats | None) -> RequestRecord:
    rec = RequestRecord(operation, params.get("TableName") or tables_of(params) or None, params.get("IndexName"),
                        params, error=error)
    if response is not None:
        if operation == "GetItem":
            rec.items = 1 if "Item" in response else 0
        else:
            rec.items = int(response.get("Count", 0))
            rec.scanned = int(response.get("ScannedCount", 0))
        r, w = _consumed(response.get("ConsumedCapacity"))
        if operation in _WRITE_OPS and not w:
            r, w = 0.0, r
        rec.read_capacity, rec.write_capacity = r, w
    if stats is not None:
        stats.add(rec)
    if _captures:
        with _captures_lock:
            for cap in _captures:
                cap.requests.append(rec)
    return rec


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
        raise _client_error(operation, params, exc, stats) from exc
    except BotoCoreError as exc:
        raise _botocore_error(operation, params, exc, stats) from exc
    return _answered(operation, params, response, stats)


def _client_error(operation: str, params: dict[str, Any], exc: Any, stats: Stats | None) -> DynormError:
    """Record a request DynamoDB refused and return the dynorm error for it (sync and async alike)."""
    err = exc.response.get("Error", {})
    code = err.get("Code", "")
    _record(operation, params, None, code, stats)
    return _wrap(operation, params, code, err.get("Message", ""), exc.response)


def _botocore_error(operation: str, params: dict[str, Any], exc: Exception, stats: Stats | None) -> DynormError:
    """Record a request that got no answer and return the dynorm error for it (sync and async alike)."""
    _record(operation, params, None, type(exc).__name__, stats)
    settings = conf.get_settings()
    if type(exc).__name__ in _CREDENTIAL_CHAIN_ERRORS:
        return _credential_chain_error(f"{operation}{_on_tables(params)}: ", exc, settings)
    if type(exc).__name__ == "NoCredentialsError":
        return ServiceError(
            f"{operation}{_on_tables(params)}: no AWS credentials found for {describe_endpoint(settings)} "
            "(botocore looks in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, ~/.aws, SSO and instance roles); "
            "for DynamoDB Local use an http://127.0.0.1:PORT endpoint (`dynorm local start`).",
            code="NoCredentialsError", operation=operation)
    hint = (" Is DynamoDB Local running? Start it with `dynorm local start`." if settings.is_local
            else " Check `endpoint`/`region` in dynorm.yaml (or DYNORM_ENDPOINT).")
    where = describe_endpoint(settings)
    if type(exc).__name__ in ("ReadTimeoutError", "ConnectTimeoutError"):
        which = "read_timeout" if type(exc).__name__ == "ReadTimeoutError" else "connect_timeout"
        tries = ("; not retried: the run was stopping" if _stopping() else
                 f", {settings.max_attempts} attempt(s) (connection.max_attempts)")
        hint = f" No answer within {getattr(settings, which):g} s (connection.{which}){tries} in dynorm.yaml." + hint
    maybe_applied = operation in _WRITE_OPERATIONS
    if maybe_applied:
        # the connection can fail after DynamoDB received (and applied) an attempt: "nothing was
        # written" cannot be told, and a caller resending an increment would count it twice
        hint = (f" This write may have been applied: an attempt (of {settings.max_attempts}) may have reached "
                "DynamoDB before its answer was lost (.maybe_applied). Read the item before sending it again."
                + hint)
    return ServiceError(f"{operation}{_on_tables(params)} could not reach DynamoDB at {where}: "
                        f"{_one_line(str(exc), 200)}.{hint}", code=type(exc).__name__, operation=operation,
                        maybe_applied=maybe_applied)


# -- stopping: once a run is asked to stop, no request is retried ------------------------------
#: of the active no_retries_after() blocks: each block's "stopping?" test
_stop_events: list[Callable[[], bool]] = []

#: error codes botocore retries as throttling (with backoff); after a stop, the attempt is the last
_THROTTLE_CODES = frozenset({"ThrottlingException", "Throttling", "ProvisionedThroughputExceededException",
                             "RequestLimitExceeded", "LimitExceededException", "TransactionInProgressException",
                             "TooManyRequestsException"})


def _stopping() -> bool:
    return any(stopping() for stopping in _stop_events)


@contextmanager
def no_retries_after(stop: threading.Event, also: Callable[[], bool] | None = None) -> Iterator[None]:
    """Inside the block, once ``stop`` is set (or ``also()`` is true), no request of this process is
    retried, in any thread.

    A run asked to stop (SIGINT, a lost lock lease) must not wait out botocore's retries of requests
    to an endpoint that stopped answering (``max_attempts`` x ``read_timeout`` each, plus backoff):
    from the stop on, an attempt that failed (no answer, a 5xx, a throttle) is the last one and
    raises what the last attempt would (:class:`ServiceError` from :func:`call`, saying it was not
    retried). A request that succeeds, or is refused with a definite answer (a failed condition),
    is unaffected; a request already in flight still ends within ``connection.read_timeout``.

    Args:
        stop: the run's stop event.
        also: a further test, e.g. ``lambda: not ledger.holds()``: a migration whose lock lease has
            (nearly) run out must not have botocore retry its writes past the lease's end, when another
            run may take the lock.

    Uses botocore's ``needs-retry`` event (a hook added with :func:`register_hook`, removed on exit);
    it sends no request itself.
    """
    def stopping() -> bool:
        return stop.is_set() or (also is not None and also())

    def last_attempt(response: Any = None, caught_exception: BaseException | None = None, operation: Any = None,
                     **kwargs: Any) -> None:
        if not stopping():
            return None
        if caught_exception is not None:
            raise caught_exception  # what botocore raises after its last attempt
        if response is not None:
            http, parsed = response
            code = (parsed or {}).get("Error", {}).get("Code", "")
            if http.status_code >= 500 or http.status_code == 429 or code in _THROTTLE_CODES:
                from botocore.exceptions import ClientError

                raise ClientError(parsed, operation.name if operation is not None else "")
        return None

    _stop_events.append(stopping)
    register_hook("needs-retry.dynamodb", last_attempt)
    try:
        yield
    finally:
        unregister_hook("needs-retry.dynamodb", last_attempt)
        _stop_events.remove(stopping)


#: The operations that change items: one that gets no answer may have been applied.
_WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})


def _answered(operation: str, params: dict[str, Any], response: dict[str, Any], stats: Stats | None) -> dict[str, Any]:
    """Check the answer comes from DynamoDB, record it and return it (sync and async alike)."""
    meta = response.get("ResponseMetadata") or {}
    if meta.get("HTTPStatusCode") != 200 or not meta.get("RequestId") \
            or "x-amz-json" not in meta.get("HTTPHeaders", {}).get("content-type", ""):
        # DynamoDB (real, Local and moto) answers 200, application/x-amz-json-1.0 and a request id;
        # anything else (a web server's 204, an empty 200, a page, a JSON "{}") would read as
        # "written" or "no such item": refuse it
        _record(operation, params, None, "NotDynamoDB", stats)
        raise _foreign_success(operation, params, meta)
    _record(operation, params, response, None, stats)
    return response


# -- asyncio: aiobotocore (the optional extra ``dynorm[async]``), imported on first use ------------
class _LoopClient:
    """One aiobotocore client of one event loop: the connection settings it was built for and
    the requests in flight on it (a retired client is closed once they are done)."""

    def __init__(self, conn: tuple[Any, ...], client: Any, context: Any) -> None:
        self.conn = conn
        self.client = client
        self.context = context
        self.in_flight = 0
        self.retired = False
        self.closer: Any = None  # the asyncio task closing it, once started


class _LoopClients:
    """The aiobotocore clients of one event loop: the current one, and retired ones (built for
    connection settings changed since) that still carry requests in flight."""

    def __init__(self) -> None:
        self.current: _LoopClient | None = None
        self.retired: list[_LoopClient] = []
        self.building: Any = None  # a future while a task of this loop builds the current client

    def clients(self) -> list[_LoopClient]:
        return [c for c in (self.current, *self.retired) if c is not None]


#: event loop -> its clients; an entry leaves when the loop closes (or with :func:`aclose`), so a
#: loop per request (AWS Lambda handlers, ``asyncio.run`` per job) keeps nothing alive
_aclients: dict[Any, _LoopClients] = {}
_aio_session: Any = None


def _import_aiobotocore() -> Any:
    try:
        import aiobotocore.session
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigurationError("dynorm's async API needs aiobotocore: pip install 'dynorm[async]'.") from exc
    return aiobotocore.session


def _aiobotocore_session() -> Any:
    """The one aiobotocore session of the process (built once, thread-safe), shared by every loop's client.

    A session per loop re-read and parsed botocore's data files for every client (measured:
    133 ms CPU per request in a loop-per-request handler, vs 1.9 ms sync); the shared session's
    loader, which is also the sync client's, holds the DynamoDB service model once.
    """
    global _aio_session
    session = _aio_session
    if session is None:
        module = _import_aiobotocore()
        with _client_lock:
            if _aio_session is None:
                new = module.get_session()
                new.register_component("data_loader", _botocore_session().get_component("data_loader"))
                _aio_session = new
            session = _aio_session
    return session


async def aclient() -> Any:
    """Return the aiobotocore DynamoDB client of the running event loop (built on first use).

    One client per event loop (an aiohttp connection pool belongs to one loop); the same
    settings, credentials, retries and :func:`register_hook` hooks as :func:`client`. It is
    closed when the loop closes (``asyncio.run`` and ``loop.close()``), or earlier with
    :func:`aclose`. A change of connection settings (endpoint, region, retries, timeouts)
    builds a new client for the requests that start afterwards; the old one is closed when the
    requests in flight on it are done.
    """
    return (await _loop_client()).client


async def _loop_client() -> _LoopClient:
    import asyncio

    loop = asyncio.get_running_loop()
    settings = conf.get_settings()
    conn = _connection(settings)
    clients = _aclients.get(loop)
    if clients is not None and clients.current is not None and clients.current.conn == conn:
        return clients.current
    if clients is None:
        _forget_closed_loops()
        clients = _aclients[loop] = _LoopClients()
        _close_with_loop(loop)
    while True:
        current = clients.current
        if current is not None and current.conn == conn:
            return current
        if clients.building is None:
            break
        await asyncio.shield(clients.building)  # another task of this loop is building it: share it
    building = clients.building = loop.create_future()
    try:
        new = await _build_aclient(settings)
    finally:
        clients.building = None
        building.set_result(None)
    registered = _aclients.setdefault(loop, clients)  # aclose() meanwhile: registered again, closed with the loop
    if registered is not clients:  # ... and another task started afresh: ours serves this request, then closes
        new.retired = True
        registered.retired.append(new)
        return new
    old, clients.current = clients.current, new
    if old is not None:  # the settings changed: requests in flight on the old client finish on it
        old.retired = True
        clients.retired.append(old)
        if not old.in_flight:
            _start_close(old, clients)
    return new


async def _build_aclient(settings: conf.Settings) -> _LoopClient:
    from botocore.config import Config

    kwargs: dict[str, Any] = {}
    explicit = credentials_for(settings)
    if explicit is not None:
        kwargs["aws_access_key_id"], kwargs["aws_secret_access_key"] = explicit
    config = Config(retries={"mode": "standard", "total_max_attempts": settings.max_attempts},
                    connect_timeout=settings.connect_timeout, read_timeout=settings.read_timeout,
                    max_pool_connections=64, parameter_validation=False)
    context = _aiobotocore_session().create_client("dynamodb", region_name=settings.region,
                                                   endpoint_url=settings.endpoint, config=config, **kwargs)
    new = await context.__aenter__()
    with _client_lock:
        hooks = list(_hooks)
    for event, handler in hooks:
        new.meta.events.register(event, handler)
    return _LoopClient(_connection(settings), new, context)


def _start_close(entry: _LoopClient, clients: _LoopClients | None = None) -> Any:
    """Start closing ``entry`` (a task of the running loop; the same task when already started).

    A retired client leaves ``clients.retired`` once closed; a close cut short (``asyncio.run``
    cancels the tasks left at its end) is started again when the loop closes.
    """
    import asyncio

    if entry.closer is None or entry.closer.cancelled():
        entry.closer = asyncio.ensure_future(entry.context.__aexit__(None, None, None))
        if clients is not None:
            def closed(task: Any) -> None:
                if not task.cancelled() and entry in clients.retired:
                    clients.retired.remove(entry)

            entry.closer.add_done_callback(closed)
    return entry.closer


def _request_done(loop: Any, entry: _LoopClient) -> None:
    entry.in_flight -= 1
    if entry.retired and not entry.in_flight:
        _start_close(entry, _aclients.get(loop))


async def _close_clients(clients: _LoopClients) -> None:
    import asyncio

    entries = clients.clients()
    clients.current, clients.retired = None, []
    await asyncio.gather(*(_start_close(e) for e in entries), return_exceptions=True)


def _close_with_loop(loop: Any) -> None:
    """Close ``loop``'s clients when ``loop.close()`` is called (``asyncio.run`` calls it).

    asyncio has no close callback, so the loop's ``close`` is wrapped, on this loop instance
    only: the clients are closed on the loop while it can still run (no "Unclosed client
    session" warning), then the entry is dropped and the loop's own ``close`` runs. Loops that
    take no instance attribute fall back to :func:`_forget_closed_loops`.
    """
    try:
        if getattr(vars(loop).get("close"), "dynorm_wrapper", False):
            return  # wrapped already (aclose() then a new client on the same loop)
    except TypeError:  # pragma: no cover - no instance dict
        return
    original = loop.close

    def close() -> None:
        if not loop.is_running():
            vars(loop).pop("close", None)  # unwrap: nothing keeps the closed loop alive
            clients = _aclients.pop(loop, None)
            if clients is not None and not loop.is_closed():
                try:
                    loop.run_until_complete(_close_clients(clients))
                except Exception:  # noqa: BLE001 - closing is best effort; the loop closes regardless
                    pass
        original()

    close.dynorm_wrapper = True  # type: ignore[attr-defined]
    try:
        loop.close = close
    except (AttributeError, TypeError):  # pragma: no cover - e.g. uvloop's Loop has no instance dict
        pass


def _forget_closed_loops() -> None:
    """Drop the clients of loops that were closed without :func:`_close_with_loop` seeing it."""
    for loop in [lp for lp in list(_aclients) if lp.is_closed()]:
        _aclients.pop(loop, None)


async def aclose() -> None:
    """Close the running event loop's aiobotocore clients and their connections (rebuilt on next use).

    Optional: they are closed when the loop closes (``asyncio.run``, ``loop.close()``). Requests
    still in flight on this loop fail.
    """
    import asyncio

    clients = _aclients.pop(asyncio.get_running_loop(), None)
    if clients is not None:
        await _close_clients(clients)


async def acall(operation: str, params: dict[str, Any], *, stats: Stats | None = None) -> dict[str, Any]:
    """:func:`call` for asyncio: send one request with aiobotocore and return its response.

    The same records (``capture()``, ``stats``), retries and errors as :func:`call`. A
    cancelled task cancels the request (aiohttp closes its connection): nothing stays in flight.

    Raises:
        the errors of :func:`call`.
    """
    import asyncio

    from botocore.exceptions import BotoCoreError, ClientError

    entry = await _loop_client()
    loop = asyncio.get_running_loop()
    method = getattr(entry.client, _method_name(operation))
    entry.in_flight += 1
    try:
        response = await method(**params)
    except asyncio.CancelledError:
        _record(operation, params, None, "Cancelled", stats)  # it may have reached DynamoDB
        raise
    except ClientError as exc:
        raise _client_error(operation, params, exc, stats) from exc
    except BotoCoreError as exc:
        raise _botocore_error(operation, params, exc, stats) from exc
    finally:
        _request_done(loop, entry)
    return _answered(operation, params, response, stats)


class Pager:
    """The one loop over LastEvaluatedKey, without I/O: the next request, given the last response.

    :func:`paginate`, :func:`apaginate` and the queryset pipeline drive it. The first request
    is ``params`` exactly as given (plus ``ExclusiveStartKey`` when ``start_key`` is given);
    each later request changes only ``ExclusiveStartKey`` and, when ``next_limit`` is given,
    ``Limit``.

    Args:
        params: the request parameters of the first page (not modified).
        start_key: the ExclusiveStartKey of the first request (a resumed cursor), or ``None``.
        next_limit: called with the number of the request about to be sent (1 for the
            second) to give its ``Limit`` (``None`` drops ``Limit``).
    """

    def __init__(self, params: dict[str, Any], start_key: dict[str, Any] | None = None,
                 next_limit: Callable[[int], int | None] | None = None) -> None:
        self.request: dict[str, Any] | None = dict(params)
        if start_key:
            self.request["ExclusiveStartKey"] = start_key
        self.sent = 0
        self.next_limit = next_limit

    def got(self, response: dict[str, Any]) -> None:
        """Take the response to ``self.request``; ``self.request`` becomes the next one, or ``None``."""
        self.sent += 1
        key = response.get("LastEvaluatedKey")
        if not key or self.request is None:
            self.request = None
            return
        request = dict(self.request)
        request["ExclusiveStartKey"] = key
        if self.next_limit is not None:
            limit = self.next_limit(self.sent)
            if limit is None:
                request.pop("Limit", None)
            else:
                request["Limit"] = limit
        self.request = request


def page_steps(operation: str, params: dict[str, Any], *, stats: Stats | None = None,
               start_key: dict[str, Any] | None = None,
               next_limit: Callable[[int], int | None] | None = None, entities: tuple[Any, ...] = ()) -> Steps:
    """The steps of :func:`paginate`: a :class:`Send` per page (for ``entities``), an :class:`Emit` of each response."""
    pager = Pager(params, start_key, next_limit)
    while pager.request is not None:
        response = yield Send(operation, pager.request, stats, entities)
        yield Emit(response)
        pager.got(response)


def paginate(operation: str, params: dict[str, Any], *, stats: Stats | None = None,
             start_key: dict[str, Any] | None = None,
             next_limit: Callable[[int], int | None] | None = None) -> Iterator[dict[str, Any]]:
    """Send ``operation`` page after page, following LastEvaluatedKey; yield each response.

    The one loop over LastEvaluatedKey (:class:`Pager`): querysets, ``count()`` and the
    migration engine page through it. The first request is ``params`` exactly as given (plus
    ``ExclusiveStartKey`` when ``start_key`` is given); each later request changes only
    ``ExclusiveStartKey`` and, when ``next_limit`` is given, ``Limit``. Stop early by
    leaving the loop (closing the generator): no further request is sent.
    :func:`apaginate` is the same for asyncio.

    Args:
        operation: ``"Query"`` or ``"Scan"``.
        params: the request parameters of the first page (not modified).
        stats: a :class:`Stats` to add each request's figures to.
        start_key: the ExclusiveStartKey of the first request (a resumed cursor), or ``None``.
        next_limit: called with the number of the request about to be sent (1 for the
            second) to give its ``Limit`` (``None`` drops ``Limit``).

    Yields:
        each response dict (``Items``/``Count``/``LastEvaluatedKey``...), in order.

    Raises:
        the errors of :func:`call`.
    """
    return stream(page_steps(operation, params, stats=stats, start_key=start_key, next_limit=next_limit))


# -- steps: one implementation of each decision, driven by a sync or an asyncio driver ------------
@dataclass
class Send:
    """A step asking its driver to send one request (:func:`call` or :func:`acall`); the driver
    sends the response back into the steps, or throws the dynorm error in.

    Attributes:
        operation, params: the request.
        stats: a :class:`Stats` to add its figures to.
        entities: the entity classes the request is for (an entity's reads and writes name theirs;
            raw and migration requests none). Before the first request of an entity in a run of
            steps, the driver runs the send guard (:func:`set_send_guard`: the key-version check of
            :mod:`dynorm.keyguard`).
    """

    operation: str
    params: dict[str, Any]
    stats: Stats | None = None
    entities: tuple[Any, ...] = ()


@dataclass
class Sleep:
    """A step asking its driver to wait ``seconds`` (``time.sleep`` or ``asyncio.sleep``)."""

    seconds: float


@dataclass
class Emit:
    """A step handing a value out of a streaming run (:func:`stream`, :func:`astream`)."""

    value: Any


#: A generator of :class:`Send`/:class:`Sleep`/:class:`Emit` steps; its return value is the result.
Steps = Generator[Any, Any, Any]

#: ``guard(send, passed) -> steps | None``: what must run before ``send`` (see :func:`set_send_guard`)
SendGuard = Callable[[Send, "set[Any]"], "Steps | None"]
_send_guard: SendGuard | None = None


def set_send_guard(guard: SendGuard | None) -> None:
    """Install the check both drivers run before a :class:`Send` that names entities (``None``: none).

    ``guard(send, passed)`` returns ``None`` when the request may go, or steps to run first (their
    requests are sent and recorded like any other; an error they raise ends the run, the request
    unsent). ``passed`` is a set the guard may fill, one per run of steps. :mod:`dynorm.keyguard`
    installs the key-version check when dynorm is imported.
    """
    global _send_guard
    _send_guard = guard


def _advance(steps: Steps, value: Any, error: BaseException | None) -> Any:
    return steps.send(value) if error is None else steps.throw(error)


def stream(steps: Steps, sleep: Callable[[float], Any] = time.sleep) -> Generator[Any, None, Any]:
    """Run ``steps`` synchronously (blocking I/O through :func:`call`), yielding each :class:`Emit` value.

    The one synchronous driver: :func:`drive` runs it for a result. Its return value (the
    ``StopIteration`` value) is the steps' result; closing it sends nothing more.

    Args:
        steps: the generator of steps.
        sleep: how a :class:`Sleep` step waits (injectable for tests).

    Raises:
        TypeError: a step that is not a :class:`Send`, :class:`Sleep` or :class:`Emit`.
    """
    value: Any = None
    error: BaseException | None = None
    passed: set[Any] = set()  # entities the send guard has let through in this run
    try:
        while True:
            try:
                step = _advance(steps, value, error)
            except StopIteration as stop:
                return stop.value
            value, error = None, None
            if isinstance(step, Send):
                if step.entities and _send_guard is not None:
                    first = _send_guard(step, passed)
                    if first is not None:
                        drive(first, sleep)  # its error ends the run: the request is not sent
                try:
                    value = call(step.operation, step.params, stats=step.stats)
                except DynormError as exc:
                    error = exc
            elif isinstance(step, Sleep):
                sleep(step.seconds)
            elif isinstance(step, Emit):
                yield step.value
            else:
                raise TypeError(f"unexpected step {step!r}")
    finally:
        steps.close()


def drive(steps: Steps, sleep: Callable[[float], Any] = time.sleep) -> Any:
    """Run ``steps`` synchronously (blocking I/O through :func:`call`) and return their result.

    Args:
        steps: the generator of steps; it emits nothing.
        sleep: how a :class:`Sleep` step waits (injectable for tests).

    Raises:
        TypeError: the steps emitted a value (they are to be run with :func:`stream`).
    """
    run = stream(steps, sleep)
    try:
        emitted = next(run)
    except StopIteration as stop:
        return stop.value
    run.close()
    raise TypeError(f"drive(): unexpected step Emit({emitted!r})")


async def astream(steps: Steps, result: list[Any] | None = None) -> AsyncGenerator[Any, None]:
    """Run ``steps`` on the running event loop (requests through :func:`acall`), yielding each
    :class:`Emit` value.

    The one asyncio driver: :func:`adrive` runs it for a result. Closing it (``aclose()``, a
    cancelled task) sends nothing more.

    Args:
        steps: the generator of steps.
        result: when given, the steps' result is appended to it at the end.

    Raises:
        TypeError: a step that is not a :class:`Send`, :class:`Sleep` or :class:`Emit`.
    """
    import asyncio

    value: Any = None
    error: BaseException | None = None
    passed: set[Any] = set()  # entities the send guard has let through in this run
    try:
        while True:
            try:
                step = _advance(steps, value, error)
            except StopIteration as stop:
                if result is not None:
                    result.append(stop.value)
                return
            value, error = None, None
            if isinstance(step, Send):
                if step.entities and _send_guard is not None:
                    first = _send_guard(step, passed)
                    if first is not None:
                        await adrive(first)  # its error ends the run: the request is not sent
                try:
                    value = await acall(step.operation, step.params, stats=step.stats)
                except DynormError as exc:
                    error = exc
            elif isinstance(step, Sleep):
                await asyncio.sleep(step.seconds)
            elif isinstance(step, Emit):
                yield step.value
            else:
                raise TypeError(f"unexpected step {step!r}")
    finally:
        steps.close()


async def adrive(steps: Steps) -> Any:
    """Run ``steps`` on the running event loop (requests through :func:`acall`) and return their result.

    Raises:
        TypeError: the steps emitted a value (they are to be run with :func:`astream`).
    """
    result: list[Any] = []
    run = astream(steps, result)
    async for emitted in run:
        await run.aclose()
        raise TypeError(f"adrive(): unexpected step Emit({emitted!r})")
    return result[0]


def collect(steps: Steps) -> Steps:
    """Run ``steps`` inside other steps, gathering their :class:`Emit` values: ``out = yield from collect(s)``.

    :class:`Send` and :class:`Sleep` steps pass through to the outer driver (and its answers
    and errors back in).
    """
    out: list[Any] = []
    value: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                step = _advance(steps, value, error)
            except StopIteration:
                return out
            value, error = None, None
            if isinstance(step, Emit):
                out.append(step.value)
                continue
            try:
                value = yield step
            except Exception as exc:  # noqa: BLE001 - handed on to the inner steps
                error = exc
    finally:
        steps.close()


def first_emit(steps: Steps, default: Any = None) -> Steps:
    """Run ``steps`` inside other steps up to their first :class:`Emit`, then close them (no further request).

    Returns:
        the first emitted value, or ``default`` when they emit none.
    """
    value: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                step = _advance(steps, value, error)
            except StopIteration:
                return default
            value, error = None, None
            if isinstance(step, Emit):
                return step.value
            try:
                value = yield step
            except Exception as exc:  # noqa: BLE001 - handed on to the inner steps
                error = exc
    finally:
        steps.close()


def apaginate(operation: str, params: dict[str, Any], *, stats: Stats | None = None,
              start_key: dict[str, Any] | None = None,
              next_limit: Callable[[int], int | None] | None = None) -> AsyncIterator[dict[str, Any]]:
    """:func:`paginate` for asyncio: ``async for response in apaginate(...)`` (same requests)."""
    return astream(page_steps(operation, params, stats=stats, start_key=start_key, next_limit=next_limit))


_METHODS: dict[str, str] = {}


def _method_name(operation: str) -> str:
    name = _METHODS.get(operation)
    if name is None:
        name = "".join("_" + c.lower() if c.isupper() else c for c in operation).lstrip("_")
        _METHODS[operation] = name
    return name


def _tables_of(params: dict[str, Any]) -> list[str]:
    """The table names a request addresses (batch and transaction requests name several)."""
    if "TableName" in params:
        return [str(params["TableName"])]
    names: dict[str, None] = {}
    for name in params.get("RequestItems") or {}:
        names[str(name)] = None
    for action in params.get("TransactItems") or []:
        for body in action.values():
            if isinstance(body, dict) and "TableName" in body:
                names[str(body["TableName"])] = None
    return list(names)


def _on_tables(params: dict[str, Any]) -> str:
    tables = _tables_of(params)
    if not tables:
        return ""
    return f" on {', '.join(tables[:3])}{f' (+{len(tables) - 3} more)' if len(tables) > 3 else ''}"


def _one_line(text: str, limit: int) -> str:
    """Collapse whitespace and cut at ``limit`` characters: error messages stay one line."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


#: botocore's errors from walking the credential chain / config files: the user's configuration, not the network
_CREDENTIAL_CHAIN_ERRORS = frozenset({
    "ProfileNotFound", "ConfigNotFound", "ConfigParseError", "PartialCredentialsError", "CredentialRetrievalError",
    "InvalidConfigError", "SSOError", "SSOTokenLoadError", "TokenRetrievalError", "UnauthorizedSSOTokenError",
    "UnknownCredentialError", "NoAuthTokenError", "InfiniteLoopConfigError", "LoginTokenLoadError",
})


def _credential_chain_error(prefix: str, exc: Exception, settings: conf.Settings) -> ConfigurationError:
    """A botocore credential-chain/config-file error as a dynorm ConfigurationError with the fix."""
    profile = os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE")
    named = f" (AWS_PROFILE={profile!r})" if profile else ""
    return ConfigurationError(
        f"{prefix}AWS credentials/configuration for {describe_endpoint(settings)} could not be loaded: "
        f"{_one_line(str(exc), 200)}{named}. Fix ~/.aws/config and ~/.aws/credentials (`aws configure "
        "list-profiles` lists the profiles) or unset AWS_PROFILE; DynamoDB Local needs no profile.")


def _foreign_success(operation: str, params: dict[str, Any], meta: dict[str, Any]) -> ServiceError:
    """The error for a "successful" answer that lacks DynamoDB's marks (status 200, an
    ``application/x-amz-json-1.0`` body, a request id): one line naming endpoint and operation."""
    headers = meta.get("HTTPHeaders") or {}
    ctype = str(headers.get("content-type", "")).split(";")[0].strip() or "no Content-Type"
    status = meta.get("HTTPStatusCode", "?")
    rid = "" if meta.get("RequestId") else ", no request id"
    return ServiceError(
        f"{operation}{_on_tables(params)}: the server at {describe_endpoint()} did not answer as DynamoDB "
        f"(HTTP {status}, {ctype}{rid}); check `endpoint` "
        "in dynorm.yaml or DYNORM_ENDPOINT (`dynorm local start` runs DynamoDB Local).",
        code="NotDynamoDB", operation=operation)


def _not_dynamodb(response: dict[str, Any], code: str, message: str) -> str | None:
    """Describe a response that did not come from DynamoDB (an HTML page, a proxy), else ``None``.

    DynamoDB answers with ``application/x-amz-json-1.0`` and a named error code; any other HTTP
    server (a web server on the port, a captive proxy) gives an HTML body that botocore turns
    into a numeric code with the page as message.
    """
    import re

    meta = response.get("ResponseMetadata") or {}
    headers = {str(k).lower(): str(v) for k, v in (meta.get("HTTPHeaders") or {}).items()}
    ctype = headers.get("content-type", "")
    if "json" in ctype or (not code.isdigit() and not message.lstrip().startswith("<")):
        return None
    title = re.search(r"<title[^>]*>(.*?)</title>", message, re.I | re.S)
    text = title.group(1) if title else re.sub(r"<[^>]+>", " ", message)
    status = meta.get("HTTPStatusCode") or code
    what = _one_line(text, 80)
    kind = ctype.split(";")[0].strip()
    return f"HTTP {status}" + (f" {kind}" if kind else "") + (f": {what!r}" if what else "")


def tables_of(params: dict[str, Any]) -> str:
    """Name the table(s) a request is about, for messages: ``TableName``, or the tables of a batch
    (``RequestItems``) or transaction (``TransactItems``); ``""`` when none."""
    return ", ".join(_tables_of(params))


def _wrap(operation: str, params: dict[str, Any], code: str, message: str,
          response: dict[str, Any]) -> DynormError:
    table = tables_of(params)
    foreign = _not_dynamodb(response, code, message)
    if foreign is not None:
        where = describe_endpoint()
        return ServiceError(
            f"{operation}{_on_tables(params)}: the server at {where} did not answer as DynamoDB ({foreign}); "
            "check `endpoint` in dynorm.yaml or DYNORM_ENDPOINT (`dynorm local start` runs DynamoDB Local).",
            code=code, operation=operation)
    message = _one_line(message, 300)
    if code == "ConditionalCheckFailedException":
        exc = ConditionFailed(f"{operation} on {table}: the condition did not hold.", item=response.get("Item"))
        # > 0: botocore retried, so an earlier attempt may have been applied (its response lost)
        exc.retry_attempts = int(response.get("ResponseMetadata", {}).get("RetryAttempts", 0))  # type: ignore[attr-defined]
        return exc
    if code == "TransactionCanceledException":
        reasons = [{"action": i, "code": r.get("Code", "None"), "message": r.get("Message", ""),
                    "item": r.get("Item")} for i, r in enumerate(response.get("CancellationReasons", []))]
        failed = [f"action {r['action']}: {r['code']}" for r in reasons if r["code"] not in ("None", None)]
        return TransactionCanceled(
            f"transaction cancelled, nothing was written ({'; '.join(failed) or message}).", reasons)
    if code == "ResourceNotFoundException":
        settings = conf.get_settings()
        what = f"table {table} does not exist" if table else "a table does not exist"
        return TableDoesNotExist(
            f"{operation}: {what} at {describe_endpoint(settings)} ({message}); "
            "run `dynorm migrate` to create it.")
    hint = ""
    if code == "UnrecognizedClientException" and conf.get_settings().is_local:
        hint = (" DynamoDB Local accepts only access key ids made of letters and digits (A-Z, a-z, 0-9): "
                "check AWS_ACCESS_KEY_ID (or the profile's aws_access_key_id); any such key works, e.g. "
                "AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local.")
    return ServiceError(f"{operation}{_on_tables(params)} failed: {code}: {message}{hint}", code=code,
                        operation=operation)


def reset_client() -> None:
    """Drop the cached clients and resolved credentials (both are rebuilt on next use).

    The asyncio clients are retired: each loop builds a new one on next use and closes the old
    one when the loop closes (or with :func:`aclose`).
    """
    global _last, _resolved, _session, _aio_session
    with _client_lock:
        for clients in list(_aclients.values()):
            old, clients.current = clients.current, None
            if old is not None:
                old.retired = True
                clients.retired.append(old)
        _aio_session = None
        _clients.clear()
        _last = None
        _resolved = _UNRESOLVED
        _session = None
