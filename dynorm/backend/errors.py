"""Error wrapping: a botocore error or a foreign answer becomes one dynorm error, with the remedy.

Each function records the failed request (:func:`dynorm.backend.records.record`) and returns the
dynorm error for it; :mod:`dynorm.backend.calls` raises it ``from`` the botocore error, which
stays as ``__cause__``. Sync and asyncio requests share every function here.
"""

from __future__ import annotations

import os
from typing import Any

from .. import conf
from ..exceptions import (
    ConditionFailed,
    ConfigurationError,
    DynormError,
    ServiceError,
    TableDoesNotExist,
    TransactionCanceled,
)
from .records import WRITE_OPERATIONS, Stats, record, table_names, tables_of

__all__ = ["describe_endpoint", "client_error", "botocore_error", "answered", "credential_chain_error",
           "CREDENTIAL_CHAIN_ERRORS", "install_body_check"]


def describe_endpoint(settings: conf.Settings | None = None) -> str:
    """Return where requests go, for messages: the endpoint URL, or ``AWS (region)``."""
    settings = settings or conf.get_settings()
    return settings.endpoint or f"AWS ({settings.region})"


def _on_tables(params: dict[str, Any]) -> str:
    tables = table_names(params)
    if not tables:
        return ""
    return f" on {', '.join(tables[:3])}{f' (+{len(tables) - 3} more)' if len(tables) > 3 else ''}"


def _one_line(text: str, limit: int) -> str:
    """Collapse whitespace and cut at ``limit`` characters: error messages stay one line."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


#: botocore's errors from walking the credential chain / config files: the user's configuration, not the network
CREDENTIAL_CHAIN_ERRORS = frozenset({
    "ProfileNotFound", "ConfigNotFound", "ConfigParseError", "PartialCredentialsError", "CredentialRetrievalError",
    "InvalidConfigError", "SSOError", "SSOTokenLoadError", "TokenRetrievalError", "UnauthorizedSSOTokenError",
    "UnknownCredentialError", "NoAuthTokenError", "InfiniteLoopConfigError", "LoginTokenLoadError",
})


def credential_chain_error(prefix: str, exc: Exception, settings: conf.Settings) -> ConfigurationError:
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
    write = operation in WRITE_OPERATIONS
    # DynamoDB's own answer cut inside its headers reads the same (botocore's transport takes the
    # connection's end for the headers' end): a write may have been applied (.maybe_applied)
    applied = (" If that server is DynamoDB and its answer was cut short, the write may have been applied: "
               "read the item before sending it again.") if write else ""
    return ServiceError(
        f"{operation}{_on_tables(params)}: the server at {describe_endpoint()} did not answer as DynamoDB "
        f"(HTTP {status}, {ctype}{rid}); check `endpoint` "
        f"in dynorm.yaml or DYNORM_ENDPOINT (`dynorm local start` runs DynamoDB Local).{applied}",
        code="NotDynamoDB", operation=operation, maybe_applied=write)


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
        return ConditionFailed(f"{operation} on {table}: the condition did not hold.", item=response.get("Item"))
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


def client_error(operation: str, params: dict[str, Any], exc: Any, stats: Stats | None) -> DynormError:
    """Record a request DynamoDB refused and return the dynorm error for it (sync and async alike)."""
    err = exc.response.get("Error", {})
    code = err.get("Code", "")
    record(operation, params, None, code, stats)
    error = _wrap(operation, params, code, err.get("Message", ""), exc.response)
    # > 0: botocore retried, so an earlier attempt of a write may have been applied (its response lost)
    error.retry_attempts = int(exc.response.get("ResponseMetadata", {}).get("RetryAttempts", 0))  # type: ignore[attr-defined]
    return error


def botocore_error(operation: str, params: dict[str, Any], exc: Exception, stats: Stats | None, *,
                   stopping: bool = False) -> DynormError:
    """Record a request that got no answer and return the dynorm error for it (sync and async alike).

    ``stopping``: the run was asked to stop, so the request was not retried (the message says so).
    """
    record(operation, params, None, type(exc).__name__, stats)
    settings = conf.get_settings()
    if type(exc).__name__ in CREDENTIAL_CHAIN_ERRORS:
        return credential_chain_error(f"{operation}{_on_tables(params)}: ", exc, settings)
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
        tries = ("; not retried: the run was stopping" if stopping else
                 f", {settings.max_attempts} attempt(s) (connection.max_attempts)")
        hint = f" No answer within {getattr(settings, which):g} s (connection.{which}){tries} in dynorm.yaml." + hint
    maybe_applied = operation in WRITE_OPERATIONS
    if maybe_applied:
        # the connection can fail after DynamoDB received (and applied) an attempt: "nothing was
        # written" cannot be told, and a caller resending an increment would count it twice
        hint = (f" This write may have been applied: an attempt (of {settings.max_attempts}) may have reached "
                "DynamoDB before its answer was lost (.maybe_applied). Read the item before sending it again."
                + hint)
    return ServiceError(f"{operation}{_on_tables(params)} could not reach DynamoDB at {where}: "
                        f"{_one_line(str(exc), 200)}.{hint}", code=type(exc).__name__, operation=operation,
                        maybe_applied=maybe_applied)


#: set by :func:`_check_body` in the parsed response of a 200 whose body is not a JSON object
_BAD_BODY = "dynorm:unreadable-body"


def _check_body(operation_model: Any, response_dict: dict[str, Any], customized_response_dict: dict[str, Any],
                **_: Any) -> None:
    """``before-parse``: a data-plane 200 whose body is not a JSON object (empty, a page, cut short,
    an array) is marked for :func:`answered` and parsed as ``{}``: never read as "no such item".

    A look at the first and last bytes, not a parse: a body cut inside a value that happens to end
    with ``}`` still goes to the parser (which refuses it or reads what is there).
    """
    from .wire_json import DIRECT_OPERATIONS

    if response_dict.get("status_code") != 200 or operation_model.name not in DIRECT_OPERATIONS:
        return
    body = response_dict.get("body")
    if not isinstance(body, (bytes, bytearray)):
        return
    text = body.strip()
    if text[:1] == b"{" and text[-1:] == b"}":
        return
    what = "an empty body" if not text else "a body that is not a JSON object" + \
        (" (cut short?)" if text[:1] == b"{" else f": {_one_line(bytes(text[:60]).decode('utf-8', 'replace'), 60)!r}")
    customized_response_dict[_BAD_BODY] = what
    response_dict["body"] = b"{}"


def install_body_check(client: Any) -> None:
    """Put :func:`_check_body` on one botocore or aiobotocore DynamoDB client (both wires)."""
    service = client.meta.service_model.service_id.hyphenize()
    client.meta.events.register(f"before-parse.{service}", _check_body, unique_id="dynorm-body-check")


def answered(operation: str, params: dict[str, Any], response: dict[str, Any], stats: Stats | None) -> dict[str, Any]:
    """Check the answer comes from DynamoDB, record it and return it (sync and async alike).

    Raises:
        ServiceError: ``NotDynamoDB`` (not DynamoDB's status, content type or request id), or
            ``UnreadableResponse`` (HTTP 200 whose body is not a JSON object: a read may be sent
            again; a write was applied, ``maybe_applied``: read the item before sending it again).
    """
    bad = response.pop(_BAD_BODY, None)
    meta = response.get("ResponseMetadata") or {}
    if meta.get("HTTPStatusCode") != 200 or not meta.get("RequestId") \
            or "x-amz-json" not in meta.get("HTTPHeaders", {}).get("content-type", ""):
        # DynamoDB (real, Local and moto) answers 200, application/x-amz-json-1.0 and a request id;
        # anything else (a web server's 204, an empty 200, a page, a JSON "{}") would read as
        # "written" or "no such item": refuse it
        record(operation, params, None, "NotDynamoDB", stats)
        raise _foreign_success(operation, params, meta)
    if bad is not None:
        record(operation, params, None, "UnreadableResponse", stats)
        write = operation in WRITE_OPERATIONS
        raise ServiceError(
            f"{operation}{_on_tables(params)}: DynamoDB at {describe_endpoint()} answered HTTP 200 with {bad}, so "
            "its result is unknown. " + ("The write was probably applied: read the item before sending it again."
                                         if write else "Nothing was changed; the read can be sent again."),
            code="UnreadableResponse", operation=operation, maybe_applied=write)
    record(operation, params, response, None, stats)
    return response
