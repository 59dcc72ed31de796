"""Settings: ``dynorm.yaml``, environment overrides and :func:`configure`.

Nothing is read at import time. :func:`get_settings` loads the settings on first use from,
in order of precedence:

1. keyword arguments given to :func:`configure` (highest),
2. the environment: ``DYNORM_ENDPOINT``, ``DYNORM_REGION``, ``DYNORM_TABLE_PREFIX``, ``DYNORM_WIRE``,
   ``DYNORM_TRANSPORT``,
3. the YAML file named by ``DYNORM_CONFIG``, else ``dynorm.yaml`` in the working directory,
4. defaults (the ``dynorm`` command's shorter timeouts, :data:`CLI_DEFAULTS`, replace some).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import re
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from .exceptions import ConfigurationError

__all__ = ["Settings", "configure", "get_settings", "load_file", "reset", "on_change", "overridden", "use_file",
           "set_defaults", "CLI_DEFAULTS", "WIRES", "TRANSPORTS"]

_KNOWN_KEYS = {"models", "migrations", "table_prefix", "connection", "cursor_secret", "check_key_versions",
               "key_versions_max_age", "wire", "transport"}

#: the values of ``wire``: dynorm's JSON codec under botocore's transport, or botocore's own
WIRES = ("direct", "botocore")
#: the values of ``transport``: dynorm sends botocore's signed requests with http.client, or botocore does
TRANSPORTS = ("direct", "botocore")
_CONNECTION_KEYS = {"region", "endpoint", "max_attempts", "connect_timeout", "read_timeout"}


#: numeric connection settings: (type, lowest, highest allowed, what it is), checked when loaded
_RANGES: dict[str, tuple[type, float, float, str]] = {
    "max_attempts": (int, 1, 100, "botocore's total attempts per request, the first included"),
    "connect_timeout": (float, 0.01, 3600, "seconds to wait for a connection"),
    "read_timeout": (float, 0.01, 3600, "seconds to wait for a response"),
    "key_versions_max_age": (float, 0, 86400, "seconds a process trusts the key-version record it read"),
}


@dataclasses.dataclass(frozen=True)
class Settings:
    """Frozen dynorm settings.

    Attributes:
        models: dotted module paths that define entities (imported by the CLI).
        migrations: dotted package path holding migration modules (or ``None``).
        table_prefix: prepended to every ``Table.Meta.table_name`` (e.g. ``"dev-"``).
        region: AWS region name.
        endpoint: DynamoDB endpoint URL (``None`` = AWS). Use ``http://127.0.0.1:PORT``
            for DynamoDB Local.
        max_attempts: botocore's total attempts per request (standard retry mode).
        connect_timeout: seconds to wait for a connection.
        read_timeout: seconds to wait for a response.
        cursor_secret: key for signing pagination cursors; set it so cursors cannot be
            forged (without it they are still tamper-evident, but signed with a key
            derived from the table name).
        check_key_versions: before an entity's first request to a table, read the table's
            key-version record once per process (one GetItem) and refuse the entity's reads and
            writes when the ledger has retired its ``Meta.key_version`` (a deploy rolled back
            after a rekey; :class:`~dynorm.exceptions.KeyVersionBehind`). Default on.
        key_versions_max_age: seconds a process keeps the key-version record it read before it
            reads it again (before the next run of requests of an entity of that table); a process
            started before ``dynorm migrate`` retired its key version is refused at most this long
            after. ``0`` reads it before every run of requests. Default 60.
        wire: how the bodies of data-plane requests (GetItem, PutItem, UpdateItem, DeleteItem,
            Query, Scan, BatchGetItem, BatchWriteItem, TransactGetItems, TransactWriteItems) are
            encoded and decoded: ``"direct"`` (default), dynorm's JSON codec under botocore's
            transport (botocore still resolves credentials and endpoints, signs, retries, parses
            errors and runs every event hook); ``"botocore"``, botocore's own serializer and
            parser. Both give the same results; on a Query of 100 items ``direct`` spends less than
            half of ``botocore``'s client CPU (docs/architecture.md, "The wire").
        transport: who puts botocore's signed requests on the network (synchronous clients):
            ``"direct"`` (default), dynorm's :mod:`http.client` sender at botocore's ``before-send``
            event (botocore still builds, signs and retries every request and runs every hook);
            ``"botocore"``, botocore's urllib3 session. Use ``botocore`` when a ``before-send``
            handler registered directly on the client answers requests itself
            (docs/architecture.md, "The transport").
        source: where the settings came from (for error messages).
    """

    models: tuple[str, ...] = ()
    migrations: str | None = None
    table_prefix: str = ""
    region: str = "us-east-1"
    endpoint: str | None = None
    max_attempts: int = 5
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    cursor_secret: str | None = None
    check_key_versions: bool = True
    key_versions_max_age: float = 60.0
    wire: str = "direct"
    transport: str = "direct"
    source: str = "defaults"

    @property
    def is_local(self) -> bool:
        """True when the endpoint is on the loopback interface (DynamoDB Local).

        The host must be ``localhost`` or a loopback IP address (``127.0.0.1``, ``::1``); a DNS
        name such as ``127.dynamodb.corp.example`` is not loopback, whatever it starts with.
        """
        import ipaddress
        from urllib.parse import urlparse

        if not self.endpoint:
            return False
        host = urlparse(self.endpoint).hostname or ""
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False


_lock = threading.RLock()
_settings: Settings | None = None
_overrides: dict[str, Any] = {}
_defaults: dict[str, Any] = {}
_config_file: str | None = None
_listeners: list[Callable[[Settings], None]] = []
# settings of the current thread/context only (see overridden()); None: the process's settings
_context: contextvars.ContextVar[Settings | None] = contextvars.ContextVar("dynorm_settings", default=None)


def _config_path() -> Path | None:
    if _config_file is not None:
        path = Path(_config_file)
        if not path.is_file():
            raise ConfigurationError(f"config file {_config_file!r} does not exist.")
        return path
    env = os.environ.get("DYNORM_CONFIG")
    if env:
        path = Path(env)
        if not path.is_file():
            raise ConfigurationError(f"DYNORM_CONFIG names {env!r}, which is not a file.")
        return path
    path = Path.cwd() / "dynorm.yaml"
    return path if path.is_file() else None


def load_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a ``dynorm.yaml`` file into a flat dict of :class:`Settings` fields.

    Args:
        path: the YAML file.

    Returns:
        ``{field: value}`` for the keys present in the file.

    Raises:
        ConfigurationError: unreadable file, invalid YAML, a key given twice in one mapping (naming
            it and both lines), unknown keys, wrong types (a quoted number is text), a number out of
            its range (``max_attempts`` 1 to 100, timeouts 0.01 to 3600 s) or an endpoint port out
            of 1 to 65535, naming key and value.
    """
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read config file {path}: {exc.strerror}") from exc
    try:
        data = yaml.load(text, Loader=_unique_keys_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigurationError(f"invalid YAML in {path}{where}: {problem}") from exc
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"{path} must hold a mapping of settings, not {type(data).__name__}.")
    unknown = sorted(set(data) - _KNOWN_KEYS)
    if unknown:
        raise ConfigurationError(
            f"unknown key(s) {', '.join(map(repr, unknown))} in {path}; "
            f"allowed: {', '.join(sorted(_KNOWN_KEYS))}."
        )
    out: dict[str, Any] = {}
    if "models" in data:
        models = data["models"]
        if isinstance(models, str):
            models = [models]
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise ConfigurationError(f"'models' in {path} must be a list of module paths.")
        out["models"] = tuple(models)
    for key in ("migrations", "table_prefix", "cursor_secret", "wire", "transport"):
        if key in data:
            if data[key] is not None and not isinstance(data[key], str):
                raise ConfigurationError(f"{key!r} in {path} must be a string.")
            out[key] = data[key] if data[key] is not None or key != "table_prefix" else ""
    for key in ("check_key_versions", "key_versions_max_age"):
        if key in data:
            out[key] = data[key]
    conn = data.get("connection") or {}
    if not isinstance(conn, Mapping):
        raise ConfigurationError(f"'connection' in {path} must be a mapping.")
    unknown = sorted(set(conn) - _CONNECTION_KEYS)
    if unknown:
        raise ConfigurationError(
            f"unknown connection key(s) {', '.join(map(repr, unknown))} in {path}; "
            f"allowed: {', '.join(sorted(_CONNECTION_KEYS))}."
        )
    out.update(conn)
    out["source"] = str(path)
    _build(out)  # types and ranges now, naming the file: a bad value must not look like a network error
    return out


_LOADER: Any = None


def _unique_keys_loader() -> Any:
    """PyYAML's ``SafeLoader`` refusing a key given twice in one mapping (built once, on first use).

    ``safe_load`` keeps the last of two ``connection:`` blocks and silently drops the first: a
    setting the user wrote would never apply. The documented way to change how mappings are built
    is a loader subclass overriding ``construct_mapping``; merge keys (``<<``) still override.
    """
    global _LOADER
    if _LOADER is None:
        import yaml

        class UniqueKeyLoader(yaml.SafeLoader):
            def construct_mapping(self, node: Any, deep: bool = False) -> Any:
                if isinstance(node, yaml.MappingNode):
                    first: dict[Any, Any] = {}
                    for key_node, _ in node.value:
                        if key_node.tag == "tag:yaml.org,2002:merge":
                            continue
                        key = self.construct_object(key_node, deep=True)
                        try:
                            seen = first.setdefault(key, key_node)
                        except TypeError:
                            continue  # an unhashable key: SafeLoader's own error names it
                        if seen is not key_node:
                            raise yaml.constructor.ConstructorError(
                                None, None, f"duplicate key {key!r} (first at line {seen.start_mark.line + 1}): "
                                "the second would silently replace the first; keep one", key_node.start_mark)
                return super().construct_mapping(node, deep=deep)

        _LOADER = UniqueKeyLoader
    return _LOADER


def _from_env() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for env, key in (("DYNORM_ENDPOINT", "endpoint"), ("DYNORM_REGION", "region"),
                     ("DYNORM_TABLE_PREFIX", "table_prefix"), ("DYNORM_WIRE", "wire"),
                     ("DYNORM_TRANSPORT", "transport")):
        if env in os.environ:
            out[key] = os.environ[env]
    return out


def _build(values: Mapping[str, Any]) -> Settings:
    names = {f.name for f in dataclasses.fields(Settings)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigurationError(f"unknown setting(s): {', '.join(unknown)}; allowed: {', '.join(sorted(names))}.")
    vals = dict(values)
    if "models" in vals:
        vals["models"] = tuple(vals["models"])
    source = vals.get("source", "settings")
    for key, (typ, low, high, what) in _RANGES.items():
        if key not in vals:
            continue
        value = vals[key]
        if isinstance(value, str):  # float("5") would take it: a quoted number is a typo to point out
            raise ConfigurationError(f"setting {key!r} = {value!r} ({source}) must be a number from {low:g} to "
                                     f"{high:g} ({what}), not text: write it without quotes (YAML also reads 1e3 "
                                     "as text: write 1000 or 1.0e+3).")
        try:
            if isinstance(value, bool) or (typ is int and isinstance(value, float) and not value.is_integer()):
                raise TypeError
            vals[key] = typ(value)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"setting {key!r} ({source}) must be a number from {low:g} to {high:g} ({what}), "
                                     f"got {value!r}.") from exc
        if not low <= vals[key] <= high:
            raise ConfigurationError(f"setting {key!r} = {value!r} ({source}) is out of range: allowed {low:g} to "
                                     f"{high:g} ({what}).")
    check = vals.get("check_key_versions", True)
    if not isinstance(check, bool):
        raise ConfigurationError(f"setting 'check_key_versions' ({source}) must be true or false, got {check!r} "
                                 "(whether entities refuse to run at a key version the migration ledger retired).")
    _check_names(vals, source)
    wire = vals.get("wire", "direct")
    if wire not in WIRES:
        raise ConfigurationError(f"setting 'wire' = {wire!r} ({source}) must be 'direct' (dynorm's JSON codec under "
                                 "botocore's transport, the default) or 'botocore' (botocore's own serializer and "
                                 "parser); DYNORM_WIRE sets it from the environment.")
    transport = vals.get("transport", "direct")
    if transport not in TRANSPORTS:
        raise ConfigurationError(f"setting 'transport' = {transport!r} ({source}) must be 'direct' (dynorm sends "
                                 "botocore's signed requests with http.client, the default) or 'botocore' (botocore's "
                                 "urllib3 session); DYNORM_TRANSPORT sets it from the environment.")
    endpoint = vals.get("endpoint")
    if endpoint is not None and not (isinstance(endpoint, str) and endpoint.startswith(("http://", "https://"))):
        raise ConfigurationError(f"endpoint must be an http(s) URL such as http://127.0.0.1:8000, got {endpoint!r}.")
    if endpoint is not None:
        _check_endpoint(endpoint, source)
    return Settings(**vals)


_REGION = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*\Z")
_TABLE_NAME_CHARS = re.compile(r"[A-Za-z0-9_.-]*\Z")


def _check_names(vals: Mapping[str, Any], source: str) -> None:
    """Refuse a region that is not a region name and a table prefix DynamoDB would refuse in a table
    name (both would fail only at the first request, the region as "could not reach DynamoDB")."""
    region = vals.get("region", "us-east-1")
    if not isinstance(region, str) or not _REGION.match(region):
        raise ConfigurationError(f"setting 'region' = {region!r} ({source}) is not an AWS region name: lower-case "
                                 "letters, digits and dashes, such as us-east-1 (DynamoDB Local takes any such name).")
    prefix = vals.get("table_prefix", "")
    if not isinstance(prefix, str) or not _TABLE_NAME_CHARS.match(prefix) or len(prefix) > 200:
        raise ConfigurationError(f"setting 'table_prefix' = {prefix!r} ({source}) cannot begin a DynamoDB table name: "
                                 "use letters, digits, '_', '-' and '.' only (at most 200 characters).")


def _check_endpoint(endpoint: str, source: str) -> None:
    """Refuse an endpoint URL without a host or with a port outside 1 to 65535 (botocore would fail
    on the first request with a bare ValueError)."""
    from urllib.parse import urlsplit

    parts = urlsplit(endpoint)
    if not parts.hostname:
        raise ConfigurationError(f"setting 'endpoint' = {endpoint!r} ({source}) has no host: use a URL such as "
                                 "http://127.0.0.1:8000.")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 1 <= port <= 65535:
        text = parts.netloc.rpartition(":")[2]
        raise ConfigurationError(f"setting 'endpoint' = {endpoint!r} ({source}): port {text!r} is not a TCP port: "
                                 "allowed 1 to 65535 (e.g. http://127.0.0.1:8000, DynamoDB Local's default port).")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigurationError(f"setting 'endpoint' = {endpoint!r} ({source}) has a path or query: DynamoDB is "
                                 "served at the root; use scheme, host and port only (http://127.0.0.1:8000).")


def get_settings() -> Settings:
    """Return the current settings, loading them on first use.

    Raises:
        ConfigurationError: the config file or an override is invalid.
    """
    global _settings
    local = _context.get()
    if local is not None:
        return local
    current = _settings
    if current is not None:
        return current
    with _lock:
        if _settings is None:
            values: dict[str, Any] = dict(_defaults)
            path = _config_path()
            if path is not None:
                values.update(load_file(path))
            env = _from_env()
            values.update(env)
            values.update(_overrides)
            if _overrides:
                values["source"] = "dynorm.configure()"
            _settings = _build(values)
            for listener in list(_listeners):
                listener(_settings)
        return _settings


def configure(**settings: Any) -> Settings:
    """Override settings for this process and return the new :class:`Settings`.

    Keyword arguments are :class:`Settings` fields (``endpoint="http://127.0.0.1:8000"``,
    ``table_prefix="test-"``, ...). They take precedence over the environment and the file.
    Clients built for older settings are dropped.

    Raises:
        ConfigurationError: an unknown setting or a value of the wrong type.
    """
    global _settings
    with _lock:
        _build({**settings})  # validate before changing anything
        previous = dict(_overrides)
        _overrides.update(settings)
        _settings = None
        try:
            return get_settings()
        except BaseException:
            # all or nothing: a configure() that fails (a listener, a file) leaves the previous settings
            _overrides.clear()
            _overrides.update(previous)
            _settings = None
            raise


@contextlib.contextmanager
def overridden(**settings: Any) -> Iterator[Settings]:
    """Use these settings in the current thread (context) only, for the ``with`` block.

    Unlike :func:`configure`, nothing changes for the rest of the process: another thread keeps
    its own settings, so two Dask tasks of two migrate runs in one worker process each talk to
    their own endpoint. Threads started inside the block do not inherit it (run them with
    ``contextvars.copy_context().run``).

    Args:
        settings: :class:`Settings` fields, as for :func:`configure`.

    Yields:
        the :class:`Settings` in force inside the block.

    Raises:
        ConfigurationError: an unknown setting or a value of the wrong type.
    """
    base = get_settings()
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(Settings)}
    values.update(settings)
    token = _context.set(_build(values))
    try:
        yield _context.get() or base
    finally:
        _context.reset(token)


def set_defaults(**settings: Any) -> None:
    """Replace the built-in defaults of some settings for this process (below the file, the
    environment and :func:`configure`).

    The ``dynorm`` command line uses it for timeouts that fit a command someone waits for
    (:data:`CLI_DEFAULTS`); a value in dynorm.yaml still wins. :func:`reset` keeps them.

    Raises:
        ConfigurationError: an unknown setting or a value of the wrong type or out of range.
    """
    global _settings
    with _lock:
        _build({**settings})
        _defaults.clear()
        _defaults.update(settings)
        _settings = None


#: what the ``dynorm`` command sets with :func:`set_defaults`: a silent endpoint costs at most
#: ``max_attempts x (connect or read timeout)`` plus botocore's backoff (about 16 s), not minutes
CLI_DEFAULTS: dict[str, Any] = {"connect_timeout": 2.0, "read_timeout": 5.0, "max_attempts": 3}


def use_file(path: str | os.PathLike[str] | None) -> None:
    """Read settings from ``path`` (instead of ``DYNORM_CONFIG``/``./dynorm.yaml``) from now on."""
    global _settings, _config_file
    with _lock:
        _config_file = os.fspath(path) if path is not None else None
        _settings = None


def snapshot() -> tuple[dict[str, Any], str | None]:
    """Return the process's :func:`configure` overrides and settings file, for :func:`restore`.

    The test plugin takes one before each test and restores it after, so a test that configures
    another endpoint and fails before undoing it leaves no trace.
    """
    with _lock:
        return dict(_overrides), _config_file


def restore(state: tuple[dict[str, Any], str | None]) -> None:
    """Put back the overrides and settings file of a :func:`snapshot` (settings reload on next use)."""
    global _settings, _config_file
    overrides, config_file = state
    with _lock:
        _overrides.clear()
        _overrides.update(overrides)
        _config_file = config_file
        _settings = None


def reset() -> None:
    """Forget :func:`configure` overrides, :func:`use_file` and cached settings (reloaded on next use)."""
    global _settings, _config_file
    with _lock:
        _overrides.clear()
        _config_file = None
        _settings = None


def on_change(listener: Callable[[Settings], None]) -> None:
    """Call ``listener(settings)`` whenever settings are (re)loaded."""
    _listeners.append(listener)
