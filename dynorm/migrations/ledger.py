"""The migration ledger, kept in the table itself under the reserved partition ``dynorm#migrations``.

Items (sort key): ``applied#<migration>`` (when, counts), ``checkpoint#<migration>#<op>#<segment>``
(LastEvaluatedKey of the scan so far, counts, done), ``failed#<migration>#<op>#<key hash>`` (the
raw key of an item that could not be rewritten, and why; retried by the next run),
``tally#<migration>#<op>#<segment>`` (items moved by the transactions of a Dask task, counted in
each transaction), ``lock#<worker>`` (owner, expiry) and ``keyversions``: the key version of each
rekeyed entity type and the versions recorded migrations retired (:mod:`dynorm.keyversions`; kept in
the table of the entities, which may not be the ledger's: see :meth:`Ledger.update_key_versions`). A
reversal (``migrate`` back to an earlier target) keeps its checkpoints and failures under
``<migration>~reverse``.

One lock per table for every kind of run: a plain (or backwards) run's ``lock#all`` excludes every
other lock; ``--worker i/N`` runs of the same ``N`` may hold their ``lock#wiofN`` together (they
share the segments) and exclude everything else. A run checks the live locks, writes its own, and
checks again: two runs racing both back off rather than both running.

The heartbeat renews the lock every ``ttl / 3``; a failed renewal is retried every ``ttl / 20``, and
when the lock cannot be renewed by ``ttl / 6`` before it expires, :attr:`Ledger.lost` is set and the
``on_lost`` callback runs (the executor stops every segment at its next checkpoint), so another run
can never take an expired lock while this one still writes (the in-flight request aside).

A renewal that hangs (a slow network: botocore's read timeout is far longer than a short lease)
never fails, so the heartbeat alone cannot notice: :attr:`Ledger.lease_end` is the expiry set by
the last renewal known to have succeeded, and :meth:`Ledger.holds` (checked by the executor's
pacer before every write request) is False once it is less than ``ttl / 6`` away; the run then
loses the lock as above, whatever the heartbeat is waiting for.

A run that stops (a signal, a lost lease) gives the lock back with one DeleteItem of at most
:data:`RELEASE_TIMEOUT` seconds (``release(quick=True)``): when that fails, the lock stays until
:attr:`Ledger.expires_by` at the latest, or until ``dynorm migrate --force-unlock``.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
import uuid
from typing import Any, Callable, Sequence

from .. import backend, conf, keyguard, keyversions
from ..exceptions import ConditionFailed, DynormError
from ..keyversions import LEDGER_PARTITION, KeyVersionChange
from .state import TableState

__all__ = ["Ledger", "MigrationLocked", "LEDGER_PARTITION"]

#: read-modify-write attempts of a key-version record before giving up (two runs writing it at once)
_RECORD_ATTEMPTS = 8

#: seconds (connect and read) of the one attempt to give the lock back when a run stops: an endpoint
#: that stopped answering must not hold Ctrl-C for ``max_attempts`` x ``read_timeout``
RELEASE_TIMEOUT = 2.0


class MigrationLocked(DynormError):
    """Another ``dynorm migrate`` holds the lock on this table."""


class Ledger:
    """Applied migrations, scan checkpoints and the run lock of one table.

    Args:
        table: the frozen table state; physical_name: its name with the prefix.
    """

    def __init__(self, table: TableState, physical_name: str) -> None:
        if not table.sk_attribute:
            raise DynormError(f"table {table.name} has no sort key; the migration ledger needs one.")
        self.table = table
        self.name = physical_name
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._heartbeat: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock_sk: str | None = None
        #: the wall-clock time (``time.time()``) the lock is known to be held until: the expiry
        #: written by the acquisition or by the last renewal that succeeded
        self.lease_end = 0.0
        #: the latest expiry (``time.time()``) a request of this run may have written: the lock is
        #: gone by then even when it could not be given back (a renewal in flight may have landed)
        self.expires_by = 0.0
        self._margin = 0.0
        #: set when the heartbeat could not renew the lock in time (the run must stop)
        self.lost = threading.Event()
        self.on_lost: Any = None

    def _key(self, sk: str) -> dict[str, Any]:
        return {self.table.pk_attribute: {"S": LEDGER_PARTITION}, str(self.table.sk_attribute): {"S": sk}}

    def exists(self) -> bool:
        """True when the table exists (DescribeTable)."""
        from ..exceptions import TableDoesNotExist

        try:
            backend.call("DescribeTable", {"TableName": self.name})
        except TableDoesNotExist:
            return False
        return True

    # -- applied migrations ------------------------------------------------------------
    def applied(self) -> dict[str, dict[str, Any]]:
        """Return ``{migration name: record}`` (Query on the ledger partition, ConsistentRead)."""
        out: dict[str, dict[str, Any]] = {}
        params: dict[str, Any] = {
            "TableName": self.name, "ConsistentRead": True,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :applied)",
            "ExpressionAttributeNames": {"#pk": self.table.pk_attribute, "#sk": str(self.table.sk_attribute)},
            "ExpressionAttributeValues": {":pk": {"S": LEDGER_PARTITION}, ":applied": {"S": "applied#"}}}
        for resp in backend.paginate("Query", params):
            for item in resp.get("Items", []):
                name = item[str(self.table.sk_attribute)]["S"].split("#", 1)[1]
                out[name] = {"applied_at": item.get("applied_at", {}).get("S"),
                             "counts": json.loads(item.get("counts", {}).get("S", "{}")),
                             "fake": item.get("fake", {}).get("BOOL", False)}
        return out

    def record_applied(self, name: str, counts: dict[str, Any], fake: bool = False,
                       key_changes: Sequence[KeyVersionChange] = ()) -> None:
        """Record ``name`` as applied (once: a second record is refused and ignored).

        Before the applied record, the key-version record of each table in ``key_changes`` takes
        the migration's key versions (:func:`dynorm.keyversions.applied`: a move or a deletion
        retires the old version), so that no moment exists where the migration is applied and the
        old version not yet retired; a run stopped in between retires it again when it records.

        Args:
            name: the migration; counts: its totals; fake: recorded by ``--fake``.
            key_changes: what its operations do to key versions (``Executor`` builds them).

        DynamoDB: per table in ``key_changes`` a consistent GetItem and a conditional PutItem of the
        key-version record; then a conditional PutItem of ``applied#<name>``.
        """
        self.update_key_versions(key_changes, lambda entries, changes: keyversions.applied(entries, changes, name))
        item = {**self._key(f"applied#{name}"),
                "applied_at": {"S": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
                "counts": {"S": json.dumps(counts, sort_keys=True)}, "fake": {"BOOL": fake}}
        try:
            backend.call("PutItem", {"TableName": self.name, "Item": item,
                                     "ConditionExpression": "attribute_not_exists(#pk)",
                                     "ExpressionAttributeNames": {"#pk": self.table.pk_attribute}})
        except ConditionFailed:
            pass

    # -- checkpoints -------------------------------------------------------------------
    def checkpoint(self, migration: str, op_index: int, segment: int | str) -> dict[str, Any] | None:
        """Return ``{"lek", "done", "counts"}`` saved for a scan segment (or an operation), else ``None``."""
        resp = backend.call("GetItem", {"TableName": self.name, "ConsistentRead": True,
                                        "Key": self._key(f"checkpoint#{migration}#{op_index}#{segment}")})
        item = resp.get("Item")
        if not item:
            return None
        return {"lek": json.loads(item["lek"]["S"]) if "lek" in item else None,
                "done": item.get("done", {}).get("BOOL", False),
                "counts": json.loads(item.get("counts", {}).get("S", "{}"))}

    def save_checkpoint(self, migration: str, op_index: int, segment: int | str, lek: dict[str, Any] | None,
                        done: bool, counts: dict[str, int]) -> None:
        """Save how far a scan segment got (PutItem)."""
        item = {**self._key(f"checkpoint#{migration}#{op_index}#{segment}"), "done": {"BOOL": done},
                "counts": {"S": json.dumps(counts, sort_keys=True)}}
        if lek:
            item["lek"] = {"S": json.dumps(lek, sort_keys=True)}
        backend.call("PutItem", {"TableName": self.name, "Item": item})

    def tally_action(self, migration: str, op_index: int, segment: int | str) -> Callable[[int], dict[str, Any]]:
        """The action a rewrite transaction carries to add its item count to a segment's tally.

        Returns:
            ``f(n)``: a TransactWriteItems ``Update`` adding ``n`` to ``rewritten`` of the item
            ``tally#<migration>#<op>#<segment>``; committed with the items, so the tally is exact
            even when the process dies right after a transaction.
        """
        key = self._key(f"tally#{migration}#{op_index}#{segment}")

        def action(n: int) -> dict[str, Any]:
            return {"Update": {"TableName": self.name, "Key": key, "UpdateExpression": "ADD #n :n",
                               "ExpressionAttributeNames": {"#n": "rewritten"},
                               "ExpressionAttributeValues": {":n": {"N": str(n)}}}}
        return action

    def tally(self, migration: str, op_index: int) -> int:
        """Items rewritten by every transaction that carried :meth:`tally_action` for one operation (Query)."""
        return sum(int(i.get("rewritten", {}).get("N", "0"))
                   for i in self._query_prefix(f"tally#{migration}#{op_index}#"))

    def checkpoints(self, migration: str, op_index: int) -> list[dict[str, Any]]:
        """Every checkpoint saved for one operation (Query)."""
        resp = backend.call("Query", {
            "TableName": self.name, "ConsistentRead": True,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :p)",
            "ExpressionAttributeNames": {"#pk": self.table.pk_attribute, "#sk": str(self.table.sk_attribute)},
            "ExpressionAttributeValues": {":pk": {"S": LEDGER_PARTITION},
                                          ":p": {"S": f"checkpoint#{migration}#{op_index}#"}}})
        return [{"segment": i[str(self.table.sk_attribute)]["S"].rsplit("#", 1)[1],
                 "done": i.get("done", {}).get("BOOL", False)} for i in resp.get("Items", [])]

    def _query_prefix(self, prefix: str) -> list[dict[str, Any]]:
        params: dict[str, Any] = {
            "TableName": self.name, "ConsistentRead": True,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :p)",
            "ExpressionAttributeNames": {"#pk": self.table.pk_attribute, "#sk": str(self.table.sk_attribute)},
            "ExpressionAttributeValues": {":pk": {"S": LEDGER_PARTITION}, ":p": {"S": prefix}}}
        if not prefix:  # the whole partition (begins_with refuses an empty string)
            params["KeyConditionExpression"] = "#pk = :pk"
            del params["ExpressionAttributeNames"]["#sk"], params["ExpressionAttributeValues"][":p"]
        return [item for resp in backend.paginate("Query", params) for item in resp.get("Items", [])]

    # -- failed items ------------------------------------------------------------------
    def record_failures(self, migration: str, op_index: int, failed: list[tuple[dict[str, Any], str]]) -> None:
        """Record items that could not be rewritten (one PutItem each; recording one twice is harmless).

        Called before the page's checkpoint is advanced, so a failure is never skipped silently.
        """
        for key, reason in failed:
            text = json.dumps(key, sort_keys=True)
            digest = hashlib.sha256(text.encode()).hexdigest()[:24]
            backend.call("PutItem", {"TableName": self.name, "Item": {
                **self._key(f"failed#{migration}#{op_index}#{digest}"), "key": {"S": text},
                "reason": {"S": reason[:500]}}})

    def failures(self, migration: str, op_index: int | None = None) -> list[dict[str, Any]]:
        """The failed items recorded for a migration (or one of its operations): ``{"sk", "key", "reason"}``."""
        prefix = f"failed#{migration}#" + ("" if op_index is None else f"{op_index}#")
        return [{"sk": i[str(self.table.sk_attribute)]["S"], "key": json.loads(i["key"]["S"]),
                 "reason": i.get("reason", {}).get("S", "")} for i in self._query_prefix(prefix)]

    def clear_failure(self, sk: str) -> None:
        """Forget one failed item (it was rewritten, or is gone)."""
        backend.call("DeleteItem", {"TableName": self.name, "Key": self._key(sk)})

    def recorded(self) -> set[str]:
        """Migrations with work recorded in either direction (``<name>~reverse`` counted as ``<name>``).

        Every migration a run started has a checkpoint: a scan's ``meta`` one is written before its
        first write, an ``op`` one after each operation done. One Query of the ``checkpoint#`` items,
        sort keys only (a few per operation).
        """
        sk = str(self.table.sk_attribute)
        params: dict[str, Any] = {
            "TableName": self.name, "ConsistentRead": True, "ProjectionExpression": "#sk",
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :p)",
            "ExpressionAttributeNames": {"#pk": self.table.pk_attribute, "#sk": sk},
            "ExpressionAttributeValues": {":pk": {"S": LEDGER_PARTITION}, ":p": {"S": "checkpoint#"}}}
        return {item[sk]["S"].split("#")[1].removesuffix("~reverse")
                for resp in backend.paginate("Query", params) for item in resp.get("Items", [])}

    def progress(self) -> dict[str, dict[str, int]]:
        """Work recorded per migration: ``{name: {"failed", "segments", "done", "started"}}``.

        ``failed``: items recorded as failed; ``segments``/``done``: scan segments with a checkpoint /
        finished; ``started``: 1 when anything was recorded (an operation begun); ``reverse``: 1 when
        the records are a reversal's (``<migration>~reverse``), counted under the migration's name.

        One Query over the ledger partition (failed items and scan checkpoints).
        """
        out: dict[str, dict[str, int]] = {}
        for item in self._query_prefix(""):
            kind, _, rest = item[str(self.table.sk_attribute)]["S"].partition("#")
            if kind not in ("failed", "checkpoint"):
                continue
            name, _, tail = rest.partition("#")
            reverse = name.endswith("~reverse")
            name = name.removesuffix("~reverse")
            entry = out.setdefault(name, {"failed": 0, "segments": 0, "done": 0, "started": 0, "reverse": 0})
            entry["started"] = 1
            entry["reverse"] |= int(reverse)
            if kind == "failed":
                entry["failed"] += 1
            elif not tail.endswith(("#op", "#meta", "#verified")):
                entry["segments"] += 1
                entry["done"] += int(item.get("done", {}).get("BOOL", False))
        return out

    def clear(self, label: str) -> None:
        """Remove the checkpoints and failures of one direction of a migration (``name`` or ``name~reverse``).

        Called when a run starts the other direction: its records no longer describe the table.
        """
        for prefix in (f"checkpoint#{label}#", f"failed#{label}#", f"tally#{label}#"):
            for item in self._query_prefix(prefix):
                sk = item[str(self.table.sk_attribute)]["S"]
                backend.call("DeleteItem", {"TableName": self.name, "Key": self._key(sk)})

    def unrecord_applied(self, migration: str, key_changes: Sequence[KeyVersionChange] = ()) -> None:
        """Remove a migration's applied record (a reversal of it is starting).

        Then the versions it retired are live again in the key-version records
        (:func:`dynorm.keyversions.reversal_started`: its items are moving back); in this order, a
        run stopped in between leaves the old code refused, never a migration applied whose old
        version is not retired.

        Args:
            key_changes: what its operations did to key versions.
        """
        backend.call("DeleteItem", {"TableName": self.name, "Key": self._key(f"applied#{migration}")})
        self.update_key_versions(key_changes,
                                 lambda entries, changes: keyversions.reversal_started(entries, changes, migration))

    def forget(self, migration: str, key_changes: Sequence[KeyVersionChange] = (), reversed_done: bool = False) -> None:
        """Remove a migration's applied record, checkpoints and failures (after it was reversed, or ``--fake``).

        The key-version records go back to the versions before it (:func:`dynorm.keyversions.unrecorded`):
        after a reversal that ran (``reversed_done``) first, a move-mode one retiring the newer
        version; for ``--fake`` last, only releasing what the migration retired.

        Args:
            key_changes: what its operations did to key versions.
            reversed_done: the reversal ran to the end (False: ``--fake`` only un-records it).
        """
        def back(entries: dict[str, keyversions.Entry],
                 changes: list[KeyVersionChange]) -> dict[str, keyversions.Entry]:
            return keyversions.unrecorded(entries, changes, migration, reversed_done)

        if reversed_done:
            self.update_key_versions(key_changes, back)
        sks = [f"applied#{migration}"]
        for name in (migration, f"{migration}~reverse"):
            for prefix in (f"checkpoint#{name}#", f"failed#{name}#", f"tally#{name}#"):
                sks += [i[str(self.table.sk_attribute)]["S"] for i in self._query_prefix(prefix)]
        for sk in sks:
            backend.call("DeleteItem", {"TableName": self.name, "Key": self._key(sk)})
        if not reversed_done:
            self.update_key_versions(key_changes, back)

    # -- key versions ------------------------------------------------------------------
    def key_versions(self) -> dict[str, keyversions.Entry]:
        """The key-version record of the ledger's table: ``{entity type: Entry}`` (consistent GetItem)."""
        key = keyversions.item_key(self.table.pk_attribute, self.table.sk_attribute)
        resp = backend.call("GetItem", {"TableName": self.name, "Key": key, "ConsistentRead": True})
        return keyversions.decode(resp.get("Item"))

    def update_key_versions(self, changes: Sequence[KeyVersionChange],
                            transition: Callable[[dict[str, keyversions.Entry], list[KeyVersionChange]],
                                                 dict[str, keyversions.Entry]]) -> None:
        """Apply ``transition`` to the key-version record of each table ``changes`` name.

        The record lives in the table of its entities (the runtime check reads that table), in the
        ledger partition. Each is read (consistent GetItem) and written back (PutItem conditional on
        the revision read: two runs writing at once never lose one's change; a conflict is read
        again). This process's cached record (:mod:`dynorm.keyguard`) is refreshed.

        Raises:
            DynormError: the record kept changing under this run (another run writing it).
        """
        by_table: dict[tuple[str, str, str | None], list[KeyVersionChange]] = {}
        for c in changes:
            by_table.setdefault((c.table, c.pk_attribute, c.sk_attribute), []).append(c)
        for (table, pk, sk), mine in by_table.items():
            key = keyversions.item_key(pk, sk)
            for _attempt in range(_RECORD_ATTEMPTS):
                item = backend.call("GetItem", {"TableName": table, "Key": key, "ConsistentRead": True}).get("Item")
                entries = transition(keyversions.decode(item), mine)
                rev = int(item["rev"]["N"]) if item and "rev" in item else 0
                params: dict[str, Any] = {"TableName": table, "Item": {**key, **keyversions.encode(entries),
                                                                       "rev": {"N": str(rev + 1)}}}
                if item is None:  # none yet: another run may be writing the first one
                    params.update(ConditionExpression="attribute_not_exists(#pk)", ExpressionAttributeNames={"#pk": pk})
                else:
                    params.update(ConditionExpression="#rev = :rev", ExpressionAttributeNames={"#rev": "rev"},
                                  ExpressionAttributeValues={":rev": {"N": str(rev)}})
                try:
                    backend.call("PutItem", params)
                except ConditionFailed:
                    continue
                keyguard.note(table, entries)
                break
            else:
                raise DynormError(f"the key-version record of table {table} kept changing while this run wrote it "
                                  f"({_RECORD_ATTEMPTS} attempts): another `dynorm migrate` is writing it; run again.")

    # -- lock --------------------------------------------------------------------------
    def _live_locks(self, now: float) -> list[tuple[str, str, float]]:
        """The unexpired locks of other runs: ``(worker, owner, seconds left)``."""
        out = []
        for item in self._query_prefix("lock#"):
            owner = item.get("owner", {}).get("S", "?")
            left = float(item.get("expires_at", {}).get("N", "0")) - now
            if owner != self.owner and left > 0:
                out.append((item[str(self.table.sk_attribute)]["S"].split("#", 1)[1], owner, left))
        return out

    @staticmethod
    def _compatible(mine: str, theirs: str) -> bool:
        """Workers of one ``--worker i/N`` split may run together; nothing else may."""
        if mine == "all" or theirs == "all" or mine == theirs:
            return False
        return mine.partition("of")[2] == theirs.partition("of")[2]

    def _check_conflicts(self, worker: str) -> None:
        now = time.time()
        for theirs, owner, left in self._live_locks(now):
            if not self._compatible(worker, theirs):
                raise MigrationLocked(
                    f"table {self.name} is locked by another `dynorm migrate` ({owner}, lock {theirs!r} expires in "
                    f"{left:.0f} s); wait for it to finish, or run `dynorm migrate --force-unlock` if that process "
                    "is dead.")

    def acquire(self, worker: str = "all", ttl: float = 60.0) -> None:
        """Take the run lock and keep it alive with a heartbeat (see the module docstring for the rules).

        Query the live locks, PutItem ``lock#<worker>`` (if absent, expired or ours), Query again; a
        conflicting lock seen either time gives the lock back.

        Args:
            worker: ``"all"`` or ``"w<i>of<N>"``; ttl: seconds the lock lives without a heartbeat.

        Raises:
            MigrationLocked: another run holds an unexpired lock that excludes this one.
        """
        self._check_conflicts(worker)
        sk = f"lock#{worker}"
        now = time.time()
        item = {**self._key(sk), "owner": {"S": self.owner}, "expires_at": {"N": f"{now + ttl:.3f}"}}
        self.expires_by = max(self.expires_by, now + ttl)
        try:
            backend.call("PutItem", {
                "TableName": self.name, "Item": item,
                "ConditionExpression": "attribute_not_exists(#pk) OR #exp < :now OR #owner = :me",
                "ExpressionAttributeNames": {"#pk": self.table.pk_attribute, "#exp": "expires_at", "#owner": "owner"},
                "ExpressionAttributeValues": {":now": {"N": f"{now:.3f}"}, ":me": {"S": self.owner}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD"})
        except ConditionFailed as exc:
            held = exc.item or {}
            owner = held.get("owner", {}).get("S", "?")
            left = float(held.get("expires_at", {}).get("N", now)) - now
            raise MigrationLocked(
                f"table {self.name} is locked by another `dynorm migrate` ({owner}, lock expires in {left:.0f} s); "
                "wait for it to finish, or run `dynorm migrate --force-unlock` if that process is dead.") from exc
        self._lock_sk = sk
        try:
            self._check_conflicts(worker)  # a run that raced us: both back off
        except MigrationLocked:
            self.release()
            raise
        self._stop.clear()
        self.lost.clear()
        self.lease_end, self._margin = now + ttl, ttl / 6
        self._heartbeat = threading.Thread(target=self._beat, args=(sk, ttl, now + ttl), daemon=True)
        self._heartbeat.start()

    def _beat(self, sk: str, ttl: float, expires: float) -> None:
        wait = ttl / 3
        while not self._stop.wait(wait):
            new_expiry = time.time() + ttl
            self.expires_by = max(self.expires_by, new_expiry)
            try:
                backend.call("UpdateItem", {
                    "TableName": self.name, "Key": self._key(sk), "UpdateExpression": "SET #exp = :exp",
                    "ConditionExpression": "#owner = :me",
                    "ExpressionAttributeNames": {"#exp": "expires_at", "#owner": "owner"},
                    "ExpressionAttributeValues": {":exp": {"N": f"{new_expiry:.3f}"}, ":me": {"S": self.owner}}})
            except ConditionFailed:
                self._lose()  # taken over (--force-unlock): stop now
                return
            except Exception:  # noqa: BLE001 - any failure (throttled, network): retry until the deadline
                if time.time() + ttl / 20 >= expires - ttl / 6:
                    self._lose()
                    return
                wait = ttl / 20  # retry soon: the lock must be renewed before it expires
                continue
            expires = new_expiry
            self.lease_end = new_expiry  # computed before the request: never later than the real expiry
            wait = ttl / 3

    def holds(self) -> bool:
        """Whether this run may still write: its lock is held for at least ``ttl / 6`` more seconds
        (by the last renewal that succeeded). When not, the lock is given up as lost (:attr:`lost`,
        ``on_lost``): a hung renewal cannot let another run take the lock while this one writes."""
        if self._lock_sk is None or self.lost.is_set():
            return not self.lost.is_set()
        if time.time() < self.lease_end - self._margin:
            return True
        self._lose()
        return False

    def _lose(self) -> None:
        self.lost.set()
        if self.on_lost is not None:
            self.on_lost()

    def release(self, quick: bool = False) -> DynormError | None:
        """Give the lock back (DeleteItem conditional on owning it); stop the heartbeat.

        Args:
            quick: one attempt of at most :data:`RELEASE_TIMEOUT` seconds (a run that is stopping:
                the endpoint may have stopped answering), instead of the configured timeouts and retries.

        Returns:
            ``None`` when the lock is given back (or was no longer ours: taken over, or never held);
            else the error that kept it: the lock then stays until :attr:`expires_by` at the latest.
        """
        self._stop.set()
        if self._heartbeat is not None:
            # a renewal in flight cannot bring the lock back once deleted (it is conditional on its owner)
            self._heartbeat.join(timeout=0.2 if quick else 5)
        if self._lock_sk is None:
            return None
        params = {"TableName": self.name, "Key": self._key(self._lock_sk), "ConditionExpression": "#owner = :me",
                  "ExpressionAttributeNames": {"#owner": "owner"},
                  "ExpressionAttributeValues": {":me": {"S": self.owner}}}
        self._lock_sk = None
        try:
            if quick:
                settings = conf.get_settings()
                with conf.overridden(max_attempts=1, connect_timeout=min(settings.connect_timeout, RELEASE_TIMEOUT),
                                     read_timeout=min(settings.read_timeout, RELEASE_TIMEOUT)):
                    backend.call("DeleteItem", params)
            else:
                backend.call("DeleteItem", params)
        except ConditionFailed:
            return None  # not ours any more (expired and taken, or --force-unlock): nothing to give back
        except DynormError as exc:
            return exc
        return None

    def force_unlock(self) -> int:
        """Delete every lock item of this table; return how many there were."""
        resp = backend.call("Query", {
            "TableName": self.name, "ConsistentRead": True,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :lock)",
            "ExpressionAttributeNames": {"#pk": self.table.pk_attribute, "#sk": str(self.table.sk_attribute)},
            "ExpressionAttributeValues": {":pk": {"S": LEDGER_PARTITION}, ":lock": {"S": "lock#"}}})
        items = resp.get("Items", [])
        for item in items:
            backend.call("DeleteItem", {"TableName": self.name, "Key": {
                self.table.pk_attribute: item[self.table.pk_attribute],
                str(self.table.sk_attribute): item[str(self.table.sk_attribute)]}})
        return len(items)
