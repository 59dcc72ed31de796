"""Refuse an entity's requests when the table's migration ledger has retired its key version.

A deploy rolled back by reverting code after ``dynorm migrate`` moved an entity's items to a newer
key version leaves code whose reads miss every moved item and whose writes make second copies at
the old keys, which the newer code never sees (an acknowledged write lost). So, before the first
request an entity sends to a table in a process, dynorm reads the table's key-version record
(:mod:`dynorm.keyversions`; one GetItem, eventually consistent, honest: it shows in
:func:`dynorm.capture` and in the queryset's ``stats``) and keeps the answer, per physical table and
connection, for ``key_versions_max_age`` seconds (dynorm.yaml; default 60): a process that read the
record before ``dynorm migrate`` retired its key version is refused at most that long after. An
entity whose ``Meta.key_version`` the record lists as retired raises
:class:`~dynorm.exceptions.KeyVersionBehind`; nothing is sent. No record, an entity type not in it,
or code newer than the record (a copy-mode rollout deploying the new code
first) -> the request goes.

The check runs in the step drivers (:func:`dynorm.backend.stream`/``astream``) for every
:class:`~dynorm.backend.Send` that names the entities it is for (reads, writes, batches and
transactions; sync and asyncio alike), written as steps so both drivers share it. Within one run of
steps an entity is checked once: a run that passed the check is never stopped halfway (after a
write, before its read-back) by a refreshed record.

``dynorm migrate`` in the same process refreshes the cached record of each table it writes one to
(:func:`note`); the ``dynorm.testing`` plugin notes the tables it has just emptied as having none.
Turned off by ``check_key_versions: false`` (dynorm.yaml) or ``dynorm.configure(check_key_versions=False)``.
"""

from __future__ import annotations

import math
import time
from typing import Any

from . import backend, conf, keyversions
from .exceptions import ConfigurationError, KeyVersionBehind, ServiceError, TableDoesNotExist

__all__ = ["pending_checks", "note", "forget", "known", "read_steps"]

_Key = tuple[Any, ...]
#: (endpoint, region, physical table) -> the record's entries as this process last knew them, and
#: the time (``time.monotonic()``) after which they are read again
_known: dict[_Key, tuple[dict[str, keyversions.Entry], float]] = {}


def _fresh(key: _Key) -> dict[str, keyversions.Entry] | None:
    cached = _known.get(key)
    if cached is None or time.monotonic() >= cached[1]:
        return None
    return cached[0]


def _keep(key: _Key, entries: dict[str, keyversions.Entry], max_age: float) -> None:
    _known[key] = (entries, time.monotonic() + max_age)


def _key(table: str, settings: conf.Settings | None = None) -> _Key:
    settings = settings or conf.get_settings()
    return settings.endpoint, settings.region, table


def note(table: str, entries: dict[str, keyversions.Entry] | None = None, *, until_forgotten: bool = False) -> None:
    """Record what the key-version record of ``table`` holds, as known without reading it.

    ``dynorm migrate`` calls it with the record it has just written (kept ``key_versions_max_age``
    seconds, as a record read); the test plugin with ``{}`` and ``until_forgotten`` for a table it
    has just emptied (no record until a migration in the test writes one, which notes it again).

    Args:
        table: the physical table name (on the current settings' endpoint and region).
        entries: the record's entries (``None`` or ``{}``: no record).
        until_forgotten: keep it until :func:`forget` or the next :func:`note`, not for the max age.
    """
    settings = conf.get_settings()
    _keep(_key(table, settings), dict(entries or {}), math.inf if until_forgotten else settings.key_versions_max_age)


def forget(table: str | None = None) -> None:
    """Drop the cached record of ``table`` (every table when ``None``): read again on next use."""
    if table is None:
        _known.clear()
        return
    _known.pop(_key(table), None)


def known(table: str) -> dict[str, keyversions.Entry] | None:
    """The cached record of ``table`` (``{}``: none in the table), or ``None`` when not read yet (or
    read longer than ``key_versions_max_age`` seconds ago: it is read again on next use)."""
    return _fresh(_key(table))


def pending_checks(step: backend.Send, passed: set[Any]) -> backend.Steps | None:
    """The check due before ``step`` is sent, as steps, or ``None`` when there is nothing to read.

    Entities of ``step`` already in ``passed`` (this run of steps) are not checked again; an entity
    whose table's record is cached is checked at once (and added to ``passed``).

    Args:
        step: a request that names its entities (``step.entities``).
        passed: the entity classes this run has checked; updated.

    Returns:
        ``None``, or steps that read the record of each table not read yet (GetItem each, added to
        ``step.stats``) and then check.

    Raises:
        KeyVersionBehind: an entity's key version is retired (cached record).
    """
    settings = conf.get_settings()
    if not settings.check_key_versions:
        return None
    unread: list[tuple[Any, str]] = []
    for entity in step.entities:
        if entity in passed:
            continue
        table = entity._meta.table.table_name()
        entries = _fresh(_key(table, settings))
        if entries is None:
            unread.append((entity, table))
            continue
        _check(entity, table, entries, step.operation)
        passed.add(entity)
    return read_steps(unread, passed, step) if unread else None


def read_steps(unread: list[tuple[Any, str]], passed: set[Any], step: backend.Send) -> backend.Steps:
    """Read the record of each table of ``unread`` (GetItem, eventually consistent), cache it, check.

    A table that does not exist is not cached: the request itself then fails with its own error.

    Raises:
        KeyVersionBehind: an entity's key version is retired.
        ConfigurationError: the read was denied (an IAM policy): the message says what to allow.
        ServiceError: the GetItem failed otherwise (the request was not sent).
    """
    read: dict[str, dict[str, keyversions.Entry] | None] = {}
    for entity, table in unread:
        if table not in read:
            read[table] = yield from _read(entity, table, step)
        entries = read[table]
        if entries is None:
            continue
        _check(entity, table, entries, step.operation)
        passed.add(entity)


def _read(entity: Any, table: str, step: backend.Send) -> backend.Steps:
    tmeta = entity._meta.table._meta
    params = {"TableName": table, "Key": keyversions.item_key(tmeta.pk_attribute, tmeta.sk_attribute),
              "ReturnConsumedCapacity": "TOTAL"}
    try:
        response = yield backend.Send("GetItem", params, step.stats)
    except TableDoesNotExist:
        return None
    except ServiceError as exc:
        if exc.code == "AccessDeniedException":
            raise ConfigurationError(
                f"{entity.__name__}: before its first request to table {table}, dynorm reads the table's key-version "
                f"record (GetItem of {params['Key']}) and was denied: {exc}. Allow dynamodb:GetItem on that item, or "
                "turn the check off with `check_key_versions: false` in dynorm.yaml "
                "(dynorm.configure(check_key_versions=False)).") from exc
        raise
    entries = keyversions.decode(response.get("Item"))
    settings = conf.get_settings()
    _keep(_key(table, settings), entries, settings.key_versions_max_age)
    return entries


def _check(entity: Any, table: str, entries: dict[str, keyversions.Entry], operation: str) -> None:
    meta = entity._meta
    entry = entries.get(meta.entity_type)
    if entry is None:
        return
    retired = entry.retired.get(meta.key_version)
    if retired is None:
        return
    raise _behind(entity, table, entry, retired, operation)


def _behind(entity: Any, table: str, entry: keyversions.Entry, retired: keyversions.Retired,
            operation: str) -> KeyVersionBehind:
    meta = entity._meta
    name, etype, code, now = entity.__name__, meta.entity_type, meta.key_version, entry.version
    m = retired.migration
    if retired.how == "reversed":
        what = (f"reversing migration {m} moved its items back from {code} to {now}. This code (which has {m}) is "
                "newer than the table")
        order = (f"Either deploy the code at key version {now!r} (the code without {m}), or apply {m} again with "
                 f"this code (`dynorm migrate`: it moves the items to {code})")
        copies = "copies"
    elif retired.how == "deleted":
        what = (f"migration {m} deleted its items at {code}. This code is older than the table (a deploy rolled back "
                "by reverting code?)")
        order = f"Deploy the code at key version {now!r} (a DeleteVersion cannot be reversed)"
        copies = "items"
    else:
        what = (f"migration {m} moved its items from {code} to {now}. This code is older than the table (a deploy "
                "rolled back by reverting code?)")
        back = f"`dynorm migrate {retired.before}`" if retired.before else f"`dynorm migrate` back to before {m}"
        order = (f"Either roll forward (deploy the code that has migration {m}, at key version {now!r}), or roll back "
                 f"in this order: with the code that has {m}, run {back} (it moves the items back to {code}), then "
                 "deploy this code")
        copies = "second copies"
    return KeyVersionBehind(
        f"{name} (entity type {etype}) is at key version {code!r} in this code, but the migration ledger of table "
        f"{table} has {etype} at key version {now!r}: {what}: it would miss every item at {now} and write {copies} "
        f"at {code} that the code at {now} never sees. Refusing to send {operation}; nothing was sent. {order}; "
        "see docs/migrations.md, \"Rolling back a deploy that included a rekey\". To run anyway, turn the check "
        "off: `check_key_versions: false` in dynorm.yaml or dynorm.configure(check_key_versions=False).",
        entity=name, entity_type=etype, table=table, code_version=code, ledger_version=now, migration=m)


backend.set_send_guard(pending_checks)
