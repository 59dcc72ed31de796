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
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from . import conf
from .exceptions import (
    ConditionFailed,
    ConfigurationError,
    DynormError,
    ServiceError,
    TableDoesNotExist,
    TransactionCanceled,
)

__all__ = ["client", "call", "paginate", "RetryPolicy", "register_hook", "unregister_hook", "capture", "Capture",
           "RequestRecord", "Stats", "LOCAL_CREDENTIALS", "credentials_for", "describe_endpoint", "tables_of"]

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
            config = Config(retries={"mode": "standard", "max_attempts": settings.max_attempts},
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

    Args:
        event: a botocore event name (``"before-send.dynamodb.PutItem"``, ``"after-call.dynamodb.*"``).
        handler: the callable botocore calls with the event's keyword arguments.
    """
    with _client_lock:
        _hooks.append((event, handler))
        for built in _clients.values():
            built.meta.events.register(event, handler)
    client()  # the current settings' client, built now (with every hook) if it did not exist


def unregister_hook(event: str, handler: Any) -> None:
    """Remove a hook added with :func:`register_hook` (from the current client and later ones)."""
    with _client_lock:
        _hooks[:] = [(e, h) for e, h in _hooks if (e, h) != (event, handler)]
        for built in _clients.values():
            built.meta.events.unregister(event, handler)


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

    method = _method_name(operation)
    try:
        response = getattr(client(), method)(**params)
    except ClientError as exc:
        err = exc.response.get("Error", {})
        code = err.get("Code", "")
        _record(operation, params, None, code, stats)
        raise _wrap(operation, params, code, err.get("Message", ""), exc.response) from exc
    except BotoCoreError as exc:
        _record(operation, params, None, type(exc).__name__, stats)
        settings = conf.get_settings()
        if type(exc).__name__ in _CREDENTIAL_CHAIN_ERRORS:
            raise _credential_chain_error(f"{operation}{_on_tables(params)}: ", exc, settings) from exc
        if type(exc).__name__ == "NoCredentialsError":
            raise ServiceError(
                f"{operation}{_on_tables(params)}: no AWS credentials found for {describe_endpoint(settings)} "
                "(botocore looks in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, ~/.aws, SSO and instance roles); "
                "for DynamoDB Local use an http://127.0.0.1:PORT endpoint (`dynorm local start`).",
                code="NoCredentialsError", operation=operation) from exc
        hint = (" Is DynamoDB Local running? Start it with `dynorm local start`." if settings.is_local
                else " Check `endpoint`/`region` in dynorm.yaml (or DYNORM_ENDPOINT).")
        where = describe_endpoint(settings)
        raise ServiceError(f"{operation}{_on_tables(params)} could not reach DynamoDB at {where}: "
                           f"{_one_line(str(exc), 200)}.{hint}", code=type(exc).__name__, operation=operation) from exc
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


def paginate(operation: str, params: dict[str, Any], *, stats: Stats | None = None,
             start_key: dict[str, Any] | None = None,
             next_limit: Callable[[int], int | None] | None = None) -> Iterator[dict[str, Any]]:
    """Send ``operation`` page after page, following LastEvaluatedKey; yield each response.

    The one loop over LastEvaluatedKey: querysets, ``count()`` and the migration engine
    page through it. The first request is ``params`` exactly as given (plus
    ``ExclusiveStartKey`` when ``start_key`` is given); each later request changes only
    ``ExclusiveStartKey`` and, when ``next_limit`` is given, ``Limit``. Stop early by
    leaving the loop (closing the generator): no further request is sent.

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
    request = dict(params)
    if start_key:
        request["ExclusiveStartKey"] = start_key
    sent = 0
    while True:
        response = call(operation, request, stats=stats)
        sent += 1
        yield response
        key = response.get("LastEvaluatedKey")
        if not key:
            return
        request = dict(request)
        request["ExclusiveStartKey"] = key
        if next_limit is not None:
            limit = next_limit(sent)
            if limit is None:
                request.pop("Limit", None)
            else:
                request["Limit"] = limit


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
    """Drop the cached client and resolved credentials (both are rebuilt on next use)."""
    global _last, _resolved, _session
    with _client_lock:
        _clients.clear()
        _last = None
        _resolved = _UNRESOLVED
        _session = None
