"""Client lifecycle: one botocore client per connection, one aiobotocore client per event loop.

Credentials are botocore's own (dummy ones only for a loopback endpoint when botocore resolves
none); hooks added with :func:`register_hook` reach every client, built already or later;
:func:`reset_client` drops them all. aiobotocore (``dynorm[async]``) is imported on first use.
The ``wire`` setting picks the session a client comes from: ``direct`` clients parse data-plane
responses with dynorm's codec (the session's ``response_parser_factory``) and carry its request
hooks (:mod:`.wire`); ``botocore`` clients are botocore's, unchanged. The ``transport`` setting
picks who sends a synchronous client's signed requests: ``direct``, dynorm's sender at
``before-send`` (:mod:`.transport`); ``botocore``, botocore's urllib3 session.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import threading
from typing import Any, Iterator

from .. import conf
from ..exceptions import ConfigurationError
from .errors import CREDENTIAL_CHAIN_ERRORS, credential_chain_error, install_body_check
from .loader import service_loader
from .transport import Sender, SendingEmitter
from .transport import install as install_transport
from .wire import AioDirectParser, DirectParserFactory
from .wire import install as install_wire

__all__ = ["LOCAL_CREDENTIALS", "credentials_for", "client", "register_hook", "unregister_hook", "reset_client",
           "aclient", "aclose", "loop_client", "request_done"]

#: Dummy credentials, used only when botocore's credential chain resolves none *and* the endpoint
#: is on the loopback interface (DynamoDB Local checks nothing but needs *some* letters-and-digits key).
LOCAL_CREDENTIALS = ("dynormlocal", "dynormlocal")


_client_lock = threading.Lock()
_clients: dict[tuple[Any, ...], Any] = {}  # one client per connection (_connection)
_senders: list[Sender] = []  # the direct transports of those clients (their connections closed on reset)
_last: tuple[conf.Settings, Any] | None = None  # the settings last asked for and their client
_sessions: dict[str, Any] = {}  # wire -> the botocore session its clients come from
_session_lock = threading.Lock()
_UNRESOLVED: Any = object()
_resolved: Any = _UNRESOLVED  # botocore's chain is walked once per process (IMDS may take seconds)


def _botocore_session(wire: str = "direct") -> Any:
    """The botocore session of ``wire``'s clients (built once, thread-safe).

    The sessions of both wires share one loader (the service model is read once; a
    :class:`.loader.ServiceLoader`, which does not list every service to load one); a ``direct``
    session's ``response_parser_factory`` component is dynorm's (:class:`.wire.DirectParserFactory`).
    A process that uses both wires walks botocore's credential chain once per session.
    """
    session = _sessions.get(wire)
    if session is None:
        import botocore.parsers
        import botocore.session

        with _session_lock:
            session = _sessions.get(wire)
            if session is None:
                # botocore's session with the emitter that calls the direct transport (transport.py)
                session = botocore.session.Session(event_hooks=SendingEmitter())
                # botocore's loader without its walk of every service folder per model (.loader)
                loader = next(iter(_sessions.values())).get_component("data_loader") if _sessions \
                    else service_loader(session)
                session.register_component("data_loader", loader)
                if wire == "direct":
                    session.register_component("response_parser_factory",
                                               DirectParserFactory(botocore.parsers.ResponseParserFactory()))
                _sessions[wire] = session
    return session


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
            _resolved = _botocore_session(settings.wire).get_credentials()
        except BotoCoreError as exc:
            if type(exc).__name__ not in CREDENTIAL_CHAIN_ERRORS:
                raise
            raise credential_chain_error("", exc, settings) from exc
    return None if _resolved is not None else LOCAL_CREDENTIALS


_pause_lock = threading.Lock()
_pauses = 0  # the builds in progress that paused the collector
_resume = False  # whether the collector was enabled when the first of them paused it


@contextlib.contextmanager
def collector_paused(pause: bool = True) -> Iterator[None]:
    """Pause Python's cyclic garbage collector while building a client; restore its state after.

    Building a botocore client reads the service model: for DynamoDB about 28,000 dicts and lists
    that live as long as the client. Every 700 of them start a collection that can free none of
    them, and the older generations' collections walk all of them again: a cold start measured 37
    young, 4 middle and one full collection (≈ 25 ms CPU) inside ``create_client``, against one
    collection with the collector paused. Reference counting frees everything as usual meanwhile;
    only cycles wait for the collector's next run. (Mercurial's ``util.nogc`` does the same for
    its large long-lived containers.)

    The collector is enabled again when the last build in progress ends, if it was enabled when
    the first began, also when building fails; a process that disabled it keeps it disabled, and
    a child forked during a build gets it back (the building thread does not exist there). Only
    the synchronous builds pause it, and only once the credentials are resolved (``pause``): a
    credential chain (a ``credential_process``, SSO, the instance-metadata service) may take
    seconds, and an asyncio build awaits, while other threads or tasks would run with it paused.

    Args:
        pause: ``False`` to build without pausing (the credentials are not resolved yet).
    """
    global _pauses, _resume
    if not pause:
        yield
        return
    with _pause_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
        _pauses += 1
        gc.disable()
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()


def _collector_in_child() -> None:
    """In a forked child: the builds that paused the collector are the parent's; resume it here."""
    global _pause_lock, _pauses
    _pause_lock = threading.Lock()  # the parent's may have been held by a thread not copied here
    if _pauses and _resume:
        gc.enable()
    _pauses = 0


os.register_at_fork(after_in_child=_collector_in_child)


def _credentials_known(session: Any, arguments: dict[str, Any]) -> bool:
    """Resolve ``session``'s credentials now, unless ``arguments`` give them (botocore caches them
    for ``create_client``); ``False`` when they could not be, so the build walks the chain again."""
    if "aws_access_key_id" in arguments:
        return True
    from botocore.exceptions import BotoCoreError

    try:
        return session.get_credentials() is not None
    except BotoCoreError:  # create_client raises it again, as before
        return False


def _connection(settings: conf.Settings) -> tuple[Any, ...]:
    """The settings a client is built from; other settings never replace the client."""
    return (settings.region, settings.endpoint, settings.is_local, settings.max_attempts,
            settings.connect_timeout, settings.read_timeout, settings.wire, settings.transport)


def _client_arguments(settings: conf.Settings, pool: int, session: Any) -> dict[str, Any]:
    """``create_client`` keyword arguments for ``settings`` (botocore and aiobotocore alike)."""
    from botocore.config import Config

    kwargs: dict[str, Any] = {"region_name": settings.region, "endpoint_url": settings.endpoint}
    explicit = credentials_for(settings)
    if explicit is not None:
        kwargs["aws_access_key_id"], kwargs["aws_secret_access_key"] = explicit
    # parameter_validation off, as PynamoDB does: every request is built by dynorm's
    # planners and DynamoDB validates it anyway; walking the shapes costs ~10% per call
    config = Config(retries={"mode": "standard", "total_max_attempts": settings.max_attempts},
                    connect_timeout=settings.connect_timeout, read_timeout=settings.read_timeout,
                    max_pool_connections=pool, parameter_validation=False)
    kwargs["config"] = config.merge(Config(user_agent=user_agent(session, config)))
    return kwargs


def user_agent(session: Any, config: Any) -> str:
    """The User-Agent string of a client built from ``session`` with ``config``, computed once.

    botocore builds its User-Agent twice per request (in ``_convert_to_request_dict`` and in a
    ``request-created`` handler), about 14% of the client CPU of a GetItem (measured: 880 -> 731 µs
    per raw botocore GetItem on DynamoDB Local). A client given ``Config(user_agent=...)``
    sends that string as it is, so dynorm computes botocore's string once per client, as
    botocore itself does for ``client.meta.config.user_agent``: SDK, OS, language, retry mode and
    app id (``AWS_SDK_UA_APP_ID``) included; left out are the per-request feature ids (``m/...``)
    botocore adds for AWS's SDK metrics.

    Args:
        session: the botocore (or aiobotocore) session the client comes from.
        config: the client's ``botocore.config.Config``, without ``user_agent``.

    Returns:
        The User-Agent header value.
    """
    from botocore.config import Config
    from botocore.useragent import UserAgentString

    creator = UserAgentString.from_environment()
    # the session's extra is appended by botocore to a configured user_agent: left out here
    creator.set_session_config(session_user_agent_name=session.user_agent_name,
                               session_user_agent_version=session.user_agent_version,
                               session_user_agent_extra="")
    appid = session.get_config_variable("user_agent_appid")
    return str(creator.with_client_config(config.merge(Config(user_agent_appid=appid))).to_string())


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
            session = _botocore_session(settings.wire)
            arguments = _client_arguments(settings, pool=32, session=session)
            with collector_paused(_credentials_known(session, arguments)):
                built = session.create_client("dynamodb", **arguments)
            install_body_check(built)
            if settings.wire == "direct":
                install_wire(built)
            if settings.transport == "direct":
                sender = install_transport(built, session, settings.connect_timeout, settings.read_timeout, max_pool=32)
                if sender is not None:
                    _senders.append(sender)
            for event, handler in _hooks:
                built.meta.events.register(event, handler)
            _clients[key] = built
            global _exit_registered
            if not _exit_registered:
                atexit.register(_drop_at_exit)
                _exit_registered = True
        _last = (settings, built)
        return built


_exit_registered = False


def _drop_at_exit() -> None:
    """At interpreter exit: close the kept-alive connections and drop the clients (:func:`reset_client`).

    Registered when the first client is built. The interpreter's exit then frees each client's
    service model by reference counting instead of walking it again in each of its final
    collections (measured on a cold start: 17 M fewer instructions, ≈ 5 ms). An exit handler
    registered before the first client (it runs after this one) that still uses dynorm gets a new client.
    Exit never waits for the client lock: while another thread builds a client (a credential
    chain may take seconds), or in a child forked while one did (its copy of the lock stays
    held), the clients are left to the interpreter.
    """
    if not _client_lock.acquire(blocking=False):
        return
    try:
        _drop_all()
    finally:
        _client_lock.release()


_hooks: list[tuple[str, Any]] = []


def register_hook(event: str, handler: Any) -> None:
    """Register a botocore event hook on the client, now and on every client built later.

    The asyncio clients (:func:`aclient`) get it too, already built or not.

    A ``before-send`` hook may answer a request (return botocore's ``AWSResponse``): the request
    is then not sent, on either transport.

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


def reset_client() -> None:
    """Drop the cached clients and resolved credentials (both are rebuilt on next use).

    The asyncio clients are retired: each loop builds a new one on next use and closes the old
    one when the loop closes (or with :func:`aclose`).
    """
    with _client_lock:
        _drop_all()


def _drop_all() -> None:
    """:func:`reset_client`'s work, with ``_client_lock`` held."""
    global _last, _resolved
    for clients in list(_aclients.values()):
        old, clients.current = clients.current, None
        if old is not None:
            old.retired = True
            clients.retired.append(old)
    _aio_sessions.clear()
    _clients.clear()
    for sender in _senders:
        sender.close()
    _senders.clear()
    _last = None
    _resolved = _UNRESOLVED
    _sessions.clear()


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


_aio_sessions: dict[str, Any] = {}  # wire -> the aiobotocore session its clients come from


def _import_aiobotocore() -> Any:
    try:
        import aiobotocore.session
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigurationError("dynorm's async API needs aiobotocore: pip install 'dynorm[async]'.") from exc
    return aiobotocore.session


def _aiobotocore_session(wire: str = "direct") -> Any:
    """The aiobotocore session of ``wire``'s clients (built once, thread-safe), shared by every loop's client.

    A session per loop re-read and parsed botocore's data files for every client (measured:
    133 ms CPU per request in a loop-per-request handler, vs 1.9 ms sync); the shared session's
    loader, which is also the sync client's, holds the DynamoDB service model once. A ``direct``
    session parses with dynorm's codec, as the sync client does (:class:`.wire.AioDirectParser`).
    """
    session = _aio_sessions.get(wire)
    if session is None:
        module = _import_aiobotocore()
        with _client_lock:
            session = _aio_sessions.get(wire)
            if session is None:
                session = module.get_session()
                session.register_component("data_loader", _botocore_session(wire).get_component("data_loader"))
                if wire == "direct":
                    from aiobotocore.parsers import AioResponseParserFactory

                    session.register_component("response_parser_factory",
                                               DirectParserFactory(AioResponseParserFactory(), AioDirectParser))
                _aio_sessions[wire] = session
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
    return (await loop_client()).client


async def loop_client() -> _LoopClient:
    """The running loop's current client entry (built on first use, or after a connection change).

    :func:`dynorm.backend.calls.acall` counts its request in flight on the entry and hands it back
    to :func:`request_done`, so a retired client is closed once its last request is done.
    """
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
    session = _aiobotocore_session(settings.wire)
    context = session.create_client("dynamodb", **_client_arguments(settings, pool=64, session=session))
    new = await context.__aenter__()
    install_body_check(new)
    if settings.wire == "direct":
        install_wire(new)
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


def request_done(loop: Any, entry: _LoopClient) -> None:
    """Count a request on ``entry`` (of ``loop``) done; close the entry once retired and idle."""
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
