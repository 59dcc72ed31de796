"""RekeyEntity and DeleteVersion on raw items: parallel scan, grouped transactions, checkpoints.

Items are handled as raw DynamoDB JSON, so every attribute survives, also ones no model
declares. ``move`` puts the item under its new keys and deletes the old one in one
TransactWriteItems, the delete conditional on the old item being unchanged (its revision
token ``Table.Meta.revision_attribute``, which every dynorm write sets; else every attribute and
the absence of a token); ``copy`` only puts. Up to 50 items (100 actions) share a
transaction; a cancelled group is retried item by item, re-reading items that changed, so a
concurrent application write is never lost and one hot item does not stall the run.

DeleteVersion deletes in the same way: up to 100 Deletes share a transaction (99 and the ledger's
tally action when the executor counts in the ledger), each conditional on the old item being
unchanged since its copy was checked, so an application still writing the old version between the
check and the delete keeps its write (the item is kept and reported).

``process`` returns what happened to a page (:class:`PageResult`): the keys of the items that
failed (recorded in the ledger, retried by the next run) and whether the page was finished or
stopped early by SIGINT/SIGTERM (then its checkpoint is not advanced: a re-run re-reads the page,
which is harmless, as moved items are gone from the old version and copied ones are skipped).
"""

from __future__ import annotations

import base64
import decimal
import hashlib
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .. import _codec, backend
from ..batch import READ_CHUNK, RetryPolicy
from ..exceptions import (
    BatchIncomplete,
    ConditionFailed,
    DynormError,
    InvalidKeyValue,
    ServiceError,
    TransactionCanceled,
)
from ..keys import KeyTemplate, parse_datetime
from ..shards import FrozenSharding, bucket_of, shard_key
from ..tables import copied_from_attribute, copied_from_value
from ..writes import new_token, unchanged_condition
from .cost import Pacer, copy_units, item_size, move_units, write_units
from .state import NUMERIC_KINDS, EntityState, TableState

__all__ = ["Counts", "PageResult", "Rekeyer", "VersionDeleter", "PAGE_SIZE", "MOVE_GROUP", "COPY_GROUP",
           "DELETE_GROUP", "source_mark"]

PAGE_SIZE = 200
#: one extra action that counts the items a transaction rewrote (Rekeyer.process's ``tally``)
Tally = Callable[[int], dict[str, Any]]
TALLY_WCU = 2  # the tally's Update: a transactional write of an item under 1 KB
MOVE_GROUP = 50     # 2 actions per item: 100 actions, DynamoDB's limit
COPY_GROUP = 100
DELETE_GROUP = 100
#: DynamoDB's limit on an expression string (4 KB), less a margin: an item without a revision token
#: whose every-attribute comparison is longer gets a token first (:meth:`_Base._stamp`)
MAX_CONDITION_BYTES = 4000
#: DynamoDB's limit on the operators and functions of one expression: the every-attribute
#: comparison of ``n`` attributes has ``2n + 1`` (``=`` and ``AND`` per attribute, one function)
MAX_CONDITION_OPERATORS = 300
#: DynamoDB's item size limit: a copy records its source revisions only while it fits
MAX_ITEM_BYTES = 400 * 1024


class _Unstampable(Exception):
    """An item :meth:`_Base._too_big` that cannot be given a revision token (no room left in it)."""


def source_mark(raw: dict[str, Any], revision_attribute: str) -> str:
    """What identifies the revision of item ``raw`` for a copy: its revision token, or for an item
    without one, ``"sha256:"`` and the digest of its attributes (DynamoDB JSON, canonical: keys sorted,
    set members sorted, binary as base64), which equals the digest of the item read again unchanged."""
    if revision_attribute in raw:
        return str(raw[revision_attribute].get("S"))
    return "sha256:" + hashlib.sha256(json.dumps(_canonical(raw), sort_keys=True, separators=(",", ":"),
                                                 ensure_ascii=False).encode("utf-8")).hexdigest()


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k in ("SS", "NS") and isinstance(v, list):
                out[k] = sorted(v)
            elif k == "BS" and isinstance(v, list):
                out[k] = sorted(base64.b64encode(bytes(b)).decode("ascii") for b in v)
            elif k == "B":
                out[k] = base64.b64encode(bytes(v)).decode("ascii")
            else:
                out[k] = _canonical(v)
        return out
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value
#: back-off between attempts on a conflicting item: full jitter, 10 ms doubling (backend.RetryPolicy)
CONFLICT_BACKOFF = backend.RetryPolicy(base_delay=0.01, max_delay=float("inf"))


@dataclass
class Counts:
    """Running totals of one operation (thread-safe ``add``)."""

    scanned: int = 0
    evaluated: int = 0
    rewritten: int = 0
    skipped: int = 0
    conflicts: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **deltas: int) -> None:
        """Add to the named counters."""
        with self._lock:
            for k, v in deltas.items():
                setattr(self, k, getattr(self, k) + v)

    def error(self, text: str) -> None:
        """Record a failure message (the first 20 are kept)."""
        with self._lock:
            self.failed += 1
            if len(self.errors) < 20:
                self.errors.append(text)

    def as_dict(self) -> dict[str, int]:
        """The counters as a dict."""
        return {k: getattr(self, k) for k in ("scanned", "rewritten", "skipped", "conflicts", "failed")}


@dataclass
class PageResult:
    """What processing one page did.

    Attributes:
        failed: ``(raw key, reason)`` of every item that could not be rewritten.
        complete: False when a stop (SIGINT/SIGTERM) ended the page early.
    """

    failed: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    complete: bool = True


def _plain_for_keys(state: EntityState, plain: dict[str, Any]) -> dict[str, Any]:
    """Field values (by field name) that the key templates need, decoded by field kind as the
    application reads them, so a key renders here as the application renders it from the item."""
    values: dict[str, Any] = {}
    for fname, (attr, kind) in state.fields.items():
        v = plain.get(attr)
        if v is None:
            continue
        if kind == "DateTime" and isinstance(v, str):
            v = parse_datetime(v)  # the instant stored, whatever offset another writer gave it
        elif kind in NUMERIC_KINDS and isinstance(v, (int, decimal.Decimal)) and not isinstance(v, bool):
            v = _number_as_read(kind, v)
        values[fname] = v
    return values


_READERS: dict[str, Any] = {}


def _number_as_read(kind: str, value: int | decimal.Decimal) -> Any:
    """The value an instance that read this ``N`` holds: the field kind's own ``deserialize``.

    A TTL is a datetime (``{expires}`` renders ``2030-01-01T00:00:00.000000Z``, not epoch
    seconds), a non-integral ``Number`` is the float whose shortest repr is the stored text
    (``{score:.1f}`` of ``0.35`` is ``0.3``, as the application renders it; a Decimal gave ``0.4``),
    a ``Decimal`` is the Decimal of the stored text (``{d:g}`` of ``1000000`` is ``1000000``; the
    int it was once read as gave ``1e+06``). The value read is the stored one, so the field's
    :meth:`~dynorm.fields.Field.key_reader` (``deserialize(serialize(v))``) would not change it.
    """
    reader = _READERS.get(kind)
    if reader is None:
        from .. import fields

        reader = _READERS[kind] = getattr(fields, kind)()
    return reader.deserialize(str(value))


def keyed_at(state: EntityState, table: TableState, raw: dict[str, Any], version: str, entity: str) -> bool:
    """Whether item ``raw``'s primary key is the one ``state``'s templates give at key ``version``.

    Tells an item's key version from its key wherever the version sits (partition-key prefix,
    after a variable, in the sort key): the key is rendered from the item's own field values and
    compared with the stored one. An item lacking a value its key needs is at no version.

    Args:
        state: the entity's key templates (a RekeyEntity's ``old`` or ``new``); table: its table;
        raw: the item in DynamoDB JSON (its key attributes and the fields the templates use);
        version: the key version to test; entity: the entity type (for error messages).
    """
    values = _plain_for_keys(state, _codec.item_from_av({a: raw[a] for a, _ in state.fields.values() if a in raw}))
    templates = state.templates(table.delimiter, table.key_encoding)["primary"]
    for attr, template in templates.items():
        rendered = template.try_fill(values, version, entity=entity)
        if rendered is None or raw.get(attr, {}).get("S") != rendered:
            return False
    return True


class _Base:
    #: every rewrite transaction adds its item count to the ledger's tally (the report reads it from there)
    always_tally = False
    #: a failed item whose new key holds another item can be settled by ``--resolve keep-new|keep-old``
    can_resolve = False

    def __init__(self, table: TableState, physical: str, counts: Counts, dry_run: bool,
                 pacer: Pacer | None = None, consistent: bool = True) -> None:
        self.table = table
        self.physical = physical
        self.counts = counts
        self.dry_run = dry_run
        self.pacer = pacer or Pacer()
        self.consistent = consistent

    def _fail(self, result: PageResult, raw: dict[str, Any], reason: str) -> None:
        key = self._key_of(raw)
        self.counts.error(f"{key}: {reason}")
        result.failed.append((key, reason))

    def _get(self, key: dict[str, Any]) -> dict[str, Any] | None:
        return backend.call("GetItem", {"TableName": self.physical, "Key": key, "ConsistentRead": True}).get("Item")

    def _too_big(self, raw: dict[str, Any]) -> bool:
        """Whether ``raw`` has no revision token and too many attributes to compare in one condition."""
        if self.table.revision_attribute in raw:
            return False
        if 2 * len(raw) + 1 > MAX_CONDITION_OPERATORS:
            return True
        cond, _, _ = unchanged_condition(self.table.revision_attribute, raw, None)
        return len(cond.encode()) > MAX_CONDITION_BYTES

    def _stamp(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        """Give an item :meth:`_too_big` a revision token, then read it again (``None``: gone).

        An item without a token is compared attribute by attribute, and DynamoDB refuses a
        condition over 4 KB or 300 operators (150 attributes). One UpdateItem sets a fresh token, only
        if the item exists and still has none (a dynorm write since gave it one: kept); the
        consistent GetItem that follows reads whatever was written before the token, so the item
        is rewritten as it is now and its Delete is conditional on the token from then on. A raw
        writer that changes such an item afterwards without setting a token is not detected, as
        for every item with a token (docs/migrations.md).
        """
        rev = self.table.revision_attribute
        self.pacer.before_write(write_units(item_size(raw)))
        try:
            backend.call("UpdateItem", {
                "TableName": self.physical, "Key": self._key_of(raw), "UpdateExpression": "SET #r = :t",
                "ConditionExpression": "attribute_not_exists(#r) AND attribute_exists(#k)",
                "ExpressionAttributeNames": {"#r": rev, "#k": self.table.pk_attribute},
                "ExpressionAttributeValues": {":t": {"S": new_token()}}})
        except ConditionFailed:
            pass  # gone, or a dynorm write gave it a token: read what is there
        except ServiceError as exc:
            if exc.code != "ValidationException":
                raise
            raise _Unstampable(
                f"it has no revision token and {len(raw)} attributes, too many to compare in one condition "
                f"(DynamoDB: 4 KB, 300 operators), and no room for a token ({exc}); make the item smaller "
                "with a write that also sets a revision token (any dynorm write does), then run migrate again"
            ) from exc
        return self._get(self._key_of(raw))

    def _transact(self, actions: list[dict[str, Any]]) -> None:
        # No ReturnConsumedCapacity: a migration reports items, and computing capacity for
        # every transaction cost ~17% of migrate throughput on DynamoDB Local (measured).
        backend.call("TransactWriteItems", {"TransactItems": actions, "ClientRequestToken": str(uuid.uuid4())})

    def _key_of(self, raw: dict[str, Any]) -> dict[str, Any]:
        key = {self.table.pk_attribute: raw[self.table.pk_attribute]}
        if self.table.sk_attribute:
            key[self.table.sk_attribute] = raw[self.table.sk_attribute]
        return key

    def _read_params(self, entity_type: str, pk_template: str, version: str, segment: int,
                     total: int, page_size: int | None = PAGE_SIZE) -> tuple[str, dict[str, Any]]:
        tmpl = KeyTemplate(pk_template, self.table.delimiter, self.table.key_encoding)
        prefix = tmpl.prefix({}, version)
        names = {"#t": self.table.type_attribute, "#pk": self.table.pk_attribute}
        values: dict[str, Any] = {":t": {"S": entity_type}}
        params: dict[str, Any] = {"TableName": self.physical, "ConsistentRead": self.consistent,
                                  "ReturnConsumedCapacity": "TOTAL"}
        if page_size is not None:  # None: pages of 1 MB read (DynamoDB's own limit)
            params["Limit"] = page_size
        if prefix.complete:  # a constant partition key: one Query reads it all
            values[":pk"] = {"S": prefix.value}
            params.update(KeyConditionExpression="#pk = :pk", FilterExpression="#t = :t")
            params.update(ExpressionAttributeNames=names, ExpressionAttributeValues=values)
            return "Query", params
        values[":prefix"] = {"S": prefix.value}
        params.update(FilterExpression="#t = :t AND begins_with(#pk, :prefix)", ExpressionAttributeNames=names,
                      ExpressionAttributeValues=values)
        if total > 1:
            params.update(Segment=segment, TotalSegments=total)
        return "Scan", params

    def pages(self, operation: str, params: dict[str, Any],
              start: dict[str, Any] | None) -> Iterator[tuple[list[dict[str, Any]], dict[str, Any] | None]]:
        """Yield (items, LastEvaluatedKey) per page from ``start``; end early (without ``None``) when stopped."""
        if not self.pacer.before_read():
            return
        for resp in backend.paginate(operation, params, start_key=start):
            self.pacer.after_read(float((resp.get("ConsumedCapacity") or {}).get("CapacityUnits", 0.0)))
            self.counts.add(evaluated=int(resp.get("ScannedCount", len(resp.get("Items", [])))))
            key = resp.get("LastEvaluatedKey")
            yield resp.get("Items", []), key
            if key and not self.pacer.before_read():
                return  # stopped: the next page is not requested


class Rekeyer(_Base):
    """Moves or copies the items of one RekeyEntity operation."""

    can_resolve = True

    def __init__(self, op: Any, table: TableState, physical: str, mode: str, counts: Counts,
                 dry_run: bool = False, pacer: Pacer | None = None, consistent: bool = True) -> None:
        super().__init__(table, physical, counts, dry_run, pacer, consistent)
        if mode not in ("move", "copy"):
            raise DynormError(f"--mode must be move or copy, not {mode!r}.")
        self.op = op
        self.mode = mode
        self.old_attrs = {a for attrs in op.old.keys.values() for a in attrs}
        self.new_templates = op.new.templates(table.delimiter, table.key_encoding)
        # GSI -> (its partition-key attribute, its sharding): the bucket is appended as the entity's writes do
        self.new_shards: dict[str, tuple[str, FrozenSharding]] = {}
        for g, n in op.new.shards.items():
            pk_attr = table.gsis[g][0] if g in table.gsis else None
            if pk_attr is not None and pk_attr in self.new_templates.get(g, {}):
                self.new_shards[g] = (pk_attr, FrozenSharding(g, self.new_templates[g][pk_attr], n,
                                                              tuple(op.new.shard_by.get(g, ()))))

    def read_params(self, segment: int, total: int, page_size: int | None = PAGE_SIZE) -> tuple[str, dict[str, Any]]:
        """The Scan (or Query) finding old-version items of this entity type.

        Args:
            segment, total: the parallel Scan segment; page_size: Scan ``Limit`` (``None``: 1 MB pages,
                for the catch-up pass, whose filter returns few items).
        """
        return self._read_params(self.op.entity_type, self.op.old.keys["primary"][self.table.pk_attribute],
                                 self.op.from_version, segment, total, page_size)

    # -- planning one item -------------------------------------------------------------
    def new_item(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        """The item under its new keys (``None`` when its keys would not change).

        Raises:
            InvalidKeyValue: a value the new primary key needs is missing or unusable.
        """
        plain = None
        if self.op.transform is not None:
            plain = self.op.transform(_codec.item_from_av(raw))
            source = {k: _codec.to_av(v) for k, v in plain.items()}
        else:
            source = dict(raw)
        # the keys render from the item as it is written (a transform's numbers as DynamoDB stores
        # them: Decimal("1.650") is N "1.65", -0.0 is N "0"), so they equal the keys rendered from it later
        values = _plain_for_keys(self.op.new, _codec.item_from_av(
            {a: source[a] for a, _ in self.op.new.fields.values() if a in source}))
        new = {k: v for k, v in source.items() if k not in self.old_attrs}
        new.update(self.new_keys(values, raw))
        if new == raw:
            return None
        return new

    def new_keys(self, values: dict[str, Any], raw: dict[str, Any]) -> dict[str, dict[str, str]]:
        """The key attributes of the new layout rendered from field ``values`` (by field name, as
        :func:`_plain_for_keys` gives them), every path's: a sharded GSI's partition key with its bucket
        appended (:func:`dynorm.shards.bucket_of`), a sparse index (a value missing) left out.

        Args:
            values: the item's field values; raw: the item (its primary key names it in the error).

        Raises:
            InvalidKeyValue: a value the new primary key needs is missing or unusable.
        """
        out: dict[str, dict[str, str]] = {}
        for path, attrs in self.new_templates.items():
            rendered = {a: t.try_fill(values, self.op.to_version, entity=self.op.entity_type)
                        for a, t in attrs.items()}
            if any(v is None for v in rendered.values()):
                if path == "primary":
                    missing = [a for a, v in rendered.items() if v is None]
                    fields = sorted({f for a in missing for f in attrs[a].fields if values.get(f) in (None, "")})
                    raise InvalidKeyValue(
                        f"{self.op.entity_type} item {self._key_of(raw)} lacks the value(s) of field(s) "
                        f"{', '.join(fields) or '?'} for its new key attribute(s) {', '.join(missing)} "
                        f"({', '.join(attrs[a].template for a in missing)}); set them, or add a transform.")
                continue  # sparse index: not written
            if path in self.new_shards:
                pk_attr, sharding = self.new_shards[path]
                bucket = bucket_of(sharding, values, self.op.entity_type)
                rendered[pk_attr] = shard_key(str(rendered[pk_attr]), bucket, self.table.delimiter)
            for a, v in rendered.items():
                out[a] = {"S": str(v)}
        return out

    def index_attributes(self) -> list[str]:
        """The attributes of every index key (not the primary key's) of the old and the new layout."""
        return sorted({a for state in (self.op.old, self.op.new) for path, attrs in state.keys.items()
                       if path != "primary" for a in attrs} - {self.table.pk_attribute, self.table.sk_attribute})

    def stale_index_keys(self, raw: dict[str, Any]) -> list[str]:
        """The index key attributes of stored item ``raw`` that differ from the ones :meth:`new_keys`
        renders from its stored fields (no transform: the fields are stored as the rekey left them):
        a wrong value, a missing one, or one the new layout does not write (an old index's, a sparse
        index's). An item whose new primary key cannot be rendered differs in all of them.

        Args:
            raw: the item in DynamoDB JSON: its key attributes and the fields the new templates use.
        """
        values = _plain_for_keys(self.op.new, _codec.item_from_av(
            {a: raw[a] for a, _ in self.op.new.fields.values() if a in raw}))
        try:
            expected = self.new_keys(values, raw)
        except (InvalidKeyValue, TypeError, ValueError):
            return self.index_attributes()
        return [a for a in self.index_attributes() if raw.get(a) != expected.get(a)]

    def _unchanged(self, raw: dict[str, Any]) -> tuple[str, dict[str, str], dict[str, Any]]:
        # the revision token (and version) when the item has one, else every attribute (see writes.py)
        return unchanged_condition(self.table.revision_attribute, raw, self.op.old.version_attribute)

    def actions(self, raw: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
        """The TransactItems that rewrite one item."""
        same_primary = self._key_of(new) == self._key_of(raw)
        cond, names, values = self._unchanged(raw)
        if same_primary:  # keys of indexes only: replace in place, if unchanged
            return [{"Put": {"TableName": self.physical, "Item": new, "ConditionExpression": cond,
                             "ExpressionAttributeNames": names, "ExpressionAttributeValues": values}}]
        put = {"Put": {"TableName": self.physical, "Item": new, "ConditionExpression": "attribute_not_exists(#pk)",
                       "ExpressionAttributeNames": {"#pk": self.table.pk_attribute}}}
        # the revisions copied (this one and those its own source copied): DeleteVersion may delete an
        # old item while it is one of them, and dynorm.streams reads the INSERT of an item holding its own
        # revision among them as a move, also without the REMOVE beside it (a move's two records often
        # land in different shards); left out when the item would not fit the size limit
        rev = self.table.revision_attribute
        src = copied_from_attribute(rev)
        item = {**new, src: copied_from_value(raw, rev, source_mark(raw, rev))}
        if item_size(item) <= MAX_ITEM_BYTES:
            put["Put"]["Item"] = item
        if self.mode == "copy":
            return [put]
        return [put, {"Delete": {"TableName": self.physical, "Key": self._key_of(raw), "ConditionExpression": cond,
                                 "ExpressionAttributeNames": names, "ExpressionAttributeValues": values}}]

    def units(self, raw: dict[str, Any], new: dict[str, Any]) -> int:
        """Estimated WCU of rewriting one item (see :mod:`dynorm.migrations.cost`)."""
        gsi_attrs = [attrs for path, attrs in self.new_templates.items() if path != "primary"]
        new_gsis = sum(1 for attrs in gsi_attrs if all(a in new for a in attrs))
        old_gsis = sum(1 for path, attrs in self.op.old.keys.items() if path != "primary"
                       and all(a in raw for a in attrs))
        if self.mode == "copy":
            return copy_units(item_size(new), new_gsis)
        return move_units(item_size(raw), item_size(new), old_gsis, new_gsis, self._key_of(new) == self._key_of(raw))

    # -- execution ---------------------------------------------------------------------
    def process(self, items: list[dict[str, Any]], tally: Tally | None = None) -> PageResult:
        """Rewrite one page of old items (grouped transactions, then one by one on cancellation).

        Args:
            items: the page, in DynamoDB JSON; tally: when given, ``tally(n)`` is one more action
                each transaction carries (a counter of the items it rewrote, e.g.
                :meth:`~dynorm.migrations.ledger.Ledger.tally_action`), so the count commits with
                the items, whoever dies afterwards.

        Returns:
            :class:`PageResult`: the failed items, and whether a stop ended the page early.
        """
        result = PageResult()
        self.counts.add(scanned=len(items))
        planned: list[tuple[dict[str, Any], list[dict[str, Any]], int]] = []
        paced = self.pacer.writes is not None
        for raw in items:
            try:
                new = self.new_item(raw)
            except (InvalidKeyValue, TypeError, ValueError) as exc:
                self._fail(result, raw, str(exc))
                continue
            if new is None:
                self.counts.add(skipped=1)
                continue
            if self.dry_run:
                self.counts.add(rewritten=1)
                continue
            if self._too_big(raw):  # given a token first, then rewritten alone (see _stamp)
                if not self._one_by_one([raw], result, tally):
                    return result
                continue
            planned.append((raw, self.actions(raw, new), self.units(raw, new) if paced else 0))
        size = (MOVE_GROUP if self.mode == "move" else COPY_GROUP) - (1 if tally else 0)
        for group in self.pacer.groups(planned, size, lambda entry: entry[2]):
            if not self.pacer.before_write(sum(u for _, _, u in group) + (TALLY_WCU if tally and paced else 0)):
                result.complete = False
                return result
            try:
                self._transact([a for _, acts, _ in group for a in acts] + ([tally(len(group))] if tally else []))
                self.counts.add(rewritten=len(group))
            except TransactionCanceled:
                if not self._one_by_one([raw for raw, _, _ in group], result, tally):
                    return result
        return result

    def _one_by_one(self, items: list[dict[str, Any]], result: PageResult, tally: Tally | None) -> bool:
        """Rewrite ``items`` one at a time (:meth:`_one`), recording failures in ``result``; False
        (``result.complete`` cleared) when a stop ended it."""
        for raw in items:
            status, reason = self._one(raw, tally=tally)
            if status == "stopped":
                result.complete = False
                return False
            if status == "failed":
                self._fail(result, raw, reason)
        return True

    def retry(self, key: dict[str, Any], tally: Tally | None = None) -> tuple[str, str]:
        """Rewrite one item recorded as failed by an earlier run (GetItem, then TransactWriteItems).

        Args:
            key: the old item's primary key (DynamoDB JSON); tally: as for :meth:`process`.

        Returns:
            ``("ok" | "failed" | "stopped", reason)``; ``"ok"`` also when the old item is gone.
        """
        raw = self._get(key)
        if raw is None:
            return "ok", "gone"
        self.counts.add(scanned=1)
        return self._one(raw, tally=tally)

    def resolve(self, key: dict[str, Any], keep: str) -> tuple[str, str]:
        """Settle one failed item whose new key holds a different item (``migrate --resolve``).

        Args:
            key: the old item's primary key (DynamoDB JSON).
            keep: ``"keep-new"``: the item at the new key is current; in move mode the old item is
                deleted (conditional on it unchanged), in copy mode it is left. ``"keep-old"``: the
                old item, rewritten, replaces the one at the new key (conditional on that one's revision
                unchanged) and, in move mode, is deleted in the same transaction.

        Returns:
            ``("ok" | "failed" | "stopped", reason)`` as :meth:`retry`; an item with no conflict any
            more is rewritten as :meth:`retry` does.

        DynamoDB: GetItem of both items, then DeleteItem (keep-new) or TransactWriteItems (keep-old).
        """
        raw = self._get(key)
        if raw is None:
            return "ok", "gone"
        self.counts.add(scanned=1)
        try:
            new = self.new_item(raw)
        except (InvalidKeyValue, TypeError, ValueError) as exc:
            return "failed", str(exc)
        if new is None or self._key_of(new) == self._key_of(raw):
            return self._one(raw)
        there = self._get(self._key_of(new))
        if there is None or self._same_item(raw, new, there):
            return self._one(raw)  # no conflict any more
        if keep == "keep-new":
            if self.mode == "move" and not self._delete_old(raw):
                return "failed", "the old item changed while it was resolved; run `migrate --resolve` again"
            self.counts.add(skipped=1)
            return "ok", "kept the item at the new key"
        rev = self.table.revision_attribute
        acts = self.actions(raw, new)
        put = acts[0]["Put"]
        if rev in there:
            put["ConditionExpression"] = "#rev = :rev"
            put["ExpressionAttributeNames"] = {"#rev": rev}
            put["ExpressionAttributeValues"] = {":rev": there[rev]}
        else:  # no token: the item as read, attribute by attribute
            cond, names, values = self._unchanged(there)
            put["ConditionExpression"], put["ExpressionAttributeNames"] = cond, names
            if values:
                put["ExpressionAttributeValues"] = values
        try:
            self._transact(acts)
        except TransactionCanceled:
            return "failed", "an item changed while it was resolved; run `migrate --resolve` again"
        self.counts.add(rewritten=1)
        return "ok", "the old item replaced the one at the new key"

    def _reread(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        """Count a conflict and read the old item again; ``None`` (counted as skipped) when it is gone."""
        self.counts.add(conflicts=1)
        fresh = self._get(self._key_of(raw))
        if fresh is None:
            self.counts.add(skipped=1)
        return fresh

    def _same_item(self, raw: dict[str, Any], new: dict[str, Any], there: dict[str, Any]) -> bool:
        """Whether the item under the new key is this very item or a later revision of its copy: the
        same revision token (a copy keeps the token), or a copy made from exactly this revision
        (its ``copied_from_attribute`` lists this item's :func:`source_mark`; the application has
        written the copy since, so the copy is the current item and this one is unchanged since it
        was copied); for items without a token, the same attributes as the rewrite."""
        rev = self.table.revision_attribute
        src = copied_from_attribute(rev)
        if rev in raw or rev in there:
            if raw.get(rev) == there.get(rev):
                return True
        elif {k: v for k, v in there.items() if k != src} == {k: v for k, v in new.items() if k != src}:
            return True
        return source_mark(raw, rev) in (there.get(src) or {}).get("SS", [])

    def _delete_old(self, raw: dict[str, Any]) -> bool:
        """Delete the old item when it is unchanged (move mode, its copy exists); False when it changed."""
        cond, names, values = self._unchanged(raw)
        params: dict[str, Any] = {"TableName": self.physical, "Key": self._key_of(raw), "ConditionExpression": cond,
                                  "ExpressionAttributeNames": names}
        if values:
            params["ExpressionAttributeValues"] = values
        try:
            backend.call("DeleteItem", params)
        except ConditionFailed:
            return False
        return True

    def _one(self, raw: dict[str, Any], attempts: int = 8, tally: Tally | None = None) -> tuple[str, str]:
        """Rewrite one item, re-reading it when it changed; ``(status, reason)`` as :meth:`retry`.

        ``tally``: as for :meth:`process` (its action goes last, after the item's own).
        """
        for attempt in range(attempts):
            if self._too_big(raw):
                try:
                    fresh = self._stamp(raw)
                except _Unstampable as exc:
                    return "failed", str(exc)
                if fresh is None:
                    self.counts.add(skipped=1)
                    return "ok", "gone"
                raw = fresh
            try:
                new = self.new_item(raw)
            except (InvalidKeyValue, TypeError, ValueError) as exc:
                return "failed", str(exc)
            if new is None:
                self.counts.add(skipped=1)
                return "ok", "skipped"
            acts = self.actions(raw, new)
            paced = self.pacer.writes is not None
            if not self.pacer.before_write(self.units(raw, new) + (TALLY_WCU if tally else 0) if paced else 0):
                return "stopped", ""
            try:
                self._transact(acts + ([tally(1)] if tally else []))
                self.counts.add(rewritten=1)
                return "ok", "rewritten"
            except TransactionCanceled as exc:
                codes = [str(r.get("code")) for r in exc.reasons]
            creates = "attribute_not_exists" in acts[0]["Put"]["ConditionExpression"]
            if creates and codes[:1] == ["ConditionalCheckFailed"]:
                there = self._get(self._key_of(new))
                if there is None:
                    continue  # deleted meanwhile: try again
                if not self._same_item(raw, new, there):
                    # Another item is stored under the new key (a copy left by a migration in the
                    # other direction, or one the application wrote there): which one is current
                    # cannot be known, so neither is overwritten or skipped silently; the item is
                    # failed (the migration stays partial) and both are kept for the operator.
                    rev = self.table.revision_attribute
                    theirs, ours = there.get(rev, {}).get("S"), raw.get(rev, {}).get("S")
                    return "failed", (f"the new key already holds a different item (revision {theirs!r}; this one "
                                      f"has {ours!r}): both are kept; run `dynorm migrate --resolve keep-new` (the "
                                      "item at the new key is current: the old one is deleted in move mode) or "
                                      "`--resolve keep-old` (the old item replaces it)")
                # the same item was written there already (an earlier copy of it): nothing to copy
                if self.mode == "move" and not self._delete_old(raw):
                    # the old item changed since it was read: read it again and compare anew
                    fresh = self._reread(raw)
                    if fresh is None:
                        return "ok", "gone"
                    raw = fresh
                    continue
                self.counts.add(skipped=1)
                return "ok", "skipped"
            if "ConditionalCheckFailed" in codes:
                # the old item changed since it was read: re-read it and try again
                fresh = self._reread(raw)
                if fresh is None:
                    return "ok", "gone"
                raw = fresh
                continue
            self.counts.add(conflicts=1)  # TransactionConflict and the like: back off and retry
            delay = CONFLICT_BACKOFF.delay(attempt)
            if self.pacer.stop is not None and self.pacer.stop.wait(delay):
                return "stopped", ""
            if self.pacer.stop is None:
                time.sleep(delay)
        return "failed", f"still conflicting after {attempts} attempts ({', '.join(codes)})"


class VersionDeleter(_Base):
    """Deletes the items of one DeleteVersion operation, only those with a current copy, and only
    while unchanged since that copy was checked (conditional Deletes in TransactWriteItems).

    Args:
        copies: a copy-mode :class:`Rekeyer` from the deleted version to the entity's current key
            version (``None`` when the entity is no longer declared: every item is deleted). An old
            item whose current-version copy does not exist (BatchGetItem, consistent) is never deleted:
            :meth:`missing` finds them, :meth:`process` records them as failed.
    """

    always_tally = True

    def __init__(self, op: Any, table: TableState, physical: str, counts: Counts, dry_run: bool = False,
                 sleep: Callable[[float], None] = time.sleep, pacer: Pacer | None = None,
                 consistent: bool = True, copies: Rekeyer | None = None) -> None:
        super().__init__(table, physical, counts, dry_run, pacer, consistent)
        self.op = op
        self.sleep = sleep
        self.copies = copies
        self._old_primary = copies.op.old.templates(table.delimiter, table.key_encoding)["primary"] \
            if copies is not None else {}

    def read_params(self, segment: int, total: int, page_size: int | None = PAGE_SIZE) -> tuple[str, dict[str, Any]]:
        """The Scan (or Query) finding the items of that version (``page_size`` as :meth:`Rekeyer.read_params`)."""
        return self._read_params(self.op.entity_type, self.op.pk, self.op.version, segment, total, page_size)

    def missing(self, items: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
        """The items of ``items`` without a copy under the entity's current keys, with why.

        One consistent BatchGetItem per 100 items (ProjectionExpression: the key), UnprocessedKeys
        retried with ``backend.RetryPolicy``; its consumed capacity is charged to the read budget.
        An item whose current key cannot be rendered has no copy. Empty without ``copies``.

        Raises:
            BatchIncomplete: keys still unprocessed after every retry.
        """
        if self.copies is None or not items:
            return []
        copies = self.copies
        out: list[tuple[dict[str, Any], str]] = []
        wanted: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = []
        for raw in items:
            try:
                new = copies.new_item(raw)
            except (InvalidKeyValue, TypeError, ValueError) as exc:
                out.append((raw, f"no key at version {copies.op.to_version}: {exc}"))
                continue
            if new is not None:
                wanted.append((raw, new, self._key_of(new)))
        found: dict[str, dict[str, Any]] = {}
        policy = RetryPolicy()
        for start in range(0, len(wanted), READ_CHUNK):
            # whole items (a projection would not lower the RCU): the copy must be this revision
            keys = list({_key_text(k): k for _, _, k in wanted[start:start + READ_CHUNK]}.values())
            request: dict[str, Any] = {self.physical: {"Keys": keys, "ConsistentRead": True}}
            for attempt in range(1, policy.max_attempts + 1):
                if not self.pacer.before_read():
                    return []  # stopped: the caller ends the page before deleting anything
                resp = backend.call("BatchGetItem", {"RequestItems": request, "ReturnConsumedCapacity": "TOTAL"})
                self.pacer.after_read(sum(float(c.get("CapacityUnits", 0.0))
                                          for c in resp.get("ConsumedCapacity") or []))
                found.update((_key_text(self._key_of(i)), i) for i in resp.get("Responses", {}).get(self.physical, []))
                request = resp.get("UnprocessedKeys") or {}
                if not request:
                    break
                if attempt < policy.max_attempts:
                    self.sleep(policy.delay(attempt))
            if request:
                left = [k for spec in request.values() for k in spec.get("Keys", [])]
                raise BatchIncomplete(f"BatchGetItem: {len(left)} key(s) still unprocessed after {policy.max_attempts} "
                                      "attempts (throttling?) while checking for current-version copies.", left)
        to = copies.op.to_version
        rev = self.table.revision_attribute
        for raw, new, key in wanted:
            there = found.get(_key_text(key))
            if there is None:
                out.append((raw, f"no copy at key version {to} ({_key_text(key)})"))
            elif not copies._same_item(raw, new, there):
                # an application wrote the old item (or its copy) after the copy was made: deleting the
                # old item could drop an acknowledged write no copy has, so it is kept
                out.append((raw, f"its copy at key version {to} ({_key_text(key)}) is another revision "
                                 f"({there.get(rev, {}).get('S')!r}; this item has {raw.get(rev, {}).get('S')!r}): "
                                 f"one of them was written after the copy"))
        return out

    def at_version(self, raw: dict[str, Any]) -> bool:
        """Whether ``raw`` is stored exactly under its keys at the deleted version (not merely under the
        partition-key prefix the Scan filters on, which may also match current-version items when
        ``{version}`` does not start the partition key). Always True without ``copies``."""
        copies = self.copies
        if copies is None:
            return True
        old = copies.op.old
        try:
            values = _plain_for_keys(old, _codec.item_from_av({a: raw[a] for a, _ in old.fields.values() if a in raw}))
            for attr, tmpl in self._old_primary.items():
                text = tmpl.try_fill(values, self.op.version, entity=self.op.entity_type)
                if text is None or raw.get(attr) != {"S": text}:
                    return False
        except (InvalidKeyValue, TypeError, ValueError):
            return False
        try:
            new = copies.new_item(raw)
        except (InvalidKeyValue, TypeError, ValueError):
            return True  # no current key: it cannot be a current item (missing() reports it)
        return new is not None and self._key_of(new) != self._key_of(raw)

    def select(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The items of ``items`` stored at the deleted version (:meth:`at_version`); the others are
        counted as skipped and never deleted."""
        mine = [raw for raw in items if self.at_version(raw)]
        if len(mine) != len(items):
            self.counts.add(skipped=len(items) - len(mine))
        return mine

    def process(self, items: list[dict[str, Any]], tally: Tally | None = None) -> PageResult:
        """Delete one page of items that have a current copy; see :class:`PageResult`.

        Requests: BatchGetItem (the copies, see :meth:`missing`), then TransactWriteItems of at most
        100 Deletes (99 and the ``tally`` action when given: ``tally(n)`` adds the group's count to
        the ledger in the same transaction, so a run killed right after it still counts its items)
        and at most one second of the ``--max-wcu`` budget each. Every Delete is
        conditional on the old item being unchanged since it was read (its revision token, else
        every attribute): an application still on the old key version that writes the item
        after its copy was checked keeps its write. When a transaction is cancelled its items are
        settled one by one (:meth:`_settle`: read again, copy checked again, conditional Delete).
        Items without a copy are not deleted: they are returned as failed (with ``copy_missing``,
        they are copied first, and only those that could not be are).
        """
        result = PageResult()
        self.counts.add(scanned=len(items))
        items = self.select(items)
        orphans = self.missing(items)
        if orphans and self.copies is not None and self.op.copy_missing:
            copied = self.copies.process([raw for raw, _ in orphans])  # copy-mode transactions
            orphans = list(copied.failed)
        if self.pacer.stopped():
            result.complete = False
            return result
        skip = {_key_text(self._key_of(raw)) for raw, _ in orphans}
        for raw, reason in orphans:
            self._fail(result, raw, reason)
        items = [r for r in items if _key_text(self._key_of(r)) not in skip]
        if self.dry_run:
            self.counts.add(rewritten=len(items))
            return result
        for raw in [r for r in items if self._too_big(r)]:  # given a token first, then deleted alone
            status, reason = self._settle(raw, read=False, tally=tally)
            if status == "stopped":
                result.complete = False
                return result
            if status == "failed":
                self._fail(result, raw, reason)
        items = [r for r in items if not self._too_big(r)]
        paced = self.pacer.writes is not None
        planned = [(r, self.units(r) if paced else 0) for r in items]
        extra = TALLY_WCU if tally and paced else 0
        size = DELETE_GROUP - (1 if tally else 0)
        for group in self.pacer.groups(planned, size, lambda entry: entry[1], extra):
            if not self.pacer.before_write(sum(u for _, u in group) + extra):
                result.complete = False
                return result
            try:
                self._transact([self._delete_action(r) for r, _ in group] + ([tally(len(group))] if tally else []))
                self.counts.add(rewritten=len(group))
            except TransactionCanceled:
                for raw, _ in group:
                    status, reason = self._settle(raw, paced=False, tally=tally)  # this group's units were taken
                    if status == "stopped":
                        result.complete = False
                        return result
                    if status == "failed":
                        self._fail(result, raw, reason)
        return result

    def units(self, raw: dict[str, Any]) -> int:
        """Estimated WCU of deleting one item in a transaction (2 per started KB, plus its GSI entries)."""
        size = write_units(item_size(raw))
        return 2 * size + len(self.table.gsis) * size

    def _delete_action(self, raw: dict[str, Any]) -> dict[str, Any]:
        cond, names, values = unchanged_condition(self.table.revision_attribute, raw, None)
        delete: dict[str, Any] = {"TableName": self.physical, "Key": self._key_of(raw), "ConditionExpression": cond,
                                  "ExpressionAttributeNames": names}
        if values:
            delete["ExpressionAttributeValues"] = values
        return {"Delete": delete}

    def retry(self, key: dict[str, Any], tally: Tally | None = None) -> tuple[str, str]:
        """Delete one item recorded as failed by an earlier run if it now has a current copy.

        Requests: GetItem, BatchGetItem (the copy), then the conditional Delete (see :meth:`_settle`).

        Args:
            key: the item's primary key (DynamoDB JSON); tally: as for :meth:`process`.

        Returns:
            ``("ok" | "failed" | "stopped", reason)``; ``"ok"`` also when the item is gone.
        """
        raw = self._get(key)
        if raw is None:
            return "ok", "gone"
        self.counts.add(scanned=1)
        return self._settle(raw, read=False, tally=tally)

    def _settle(self, raw: dict[str, Any], read: bool = True, paced: bool = True,
                tally: Tally | None = None) -> tuple[str, str]:
        """Delete one old item if it (read again when ``read``) still has a current copy of its
        revision; the Delete is conditional on the item as read. ``(status, reason)`` as :meth:`retry`.

        With ``tally`` the Delete and ``tally(1)`` go in one TransactWriteItems (one ClientRequestToken,
        so a retry after a lost response is the same transaction: the item is counted once); without,
        a DeleteItem."""
        if read:
            fresh = self._get(self._key_of(raw))
            if fresh is None:
                return "ok", "gone"
            raw = fresh
        if not self.select([raw]):
            return "ok", "not at the deleted version"
        orphan = self.missing([raw])
        if orphan and self.copies is not None and self.op.copy_missing:
            status, reason = self.copies._one(raw)
            if status != "ok":
                return status, reason
        elif orphan:
            return "failed", orphan[0][1]
        if self._too_big(raw):  # no token and too many attributes for one condition: give it one
            try:
                fresh = self._stamp(raw)
            except _Unstampable as exc:
                return "failed", str(exc)
            if fresh is None:
                return "ok", "gone"
            rev = self.table.revision_attribute
            if {k: v for k, v in fresh.items() if k != rev} != raw:
                return "failed", "it changed after its copy was checked (an application still writes this key " \
                                 "version?); run migrate again"
            raw = fresh
        units = (self.units(raw) + (TALLY_WCU if tally else 0)) if self.pacer.writes is not None else 0
        if paced and not self.pacer.before_write(units):
            return "stopped", ""
        changed = "it changed after its copy was checked (an application still writes this key version?); " \
                  "run migrate again"
        if tally is not None:
            codes: list[str] = []
            for attempt in range(1, 9):
                try:  # only the revision checked above: a write since then keeps the item
                    self._transact([self._delete_action(raw), tally(1)])
                except TransactionCanceled as exc:
                    codes = [str(r.get("code")) for r in exc.reasons]
                    if codes[:1] == ["ConditionalCheckFailed"]:
                        return "failed", changed
                    self.counts.add(conflicts=1)  # TransactionConflict and the like: back off and retry
                    if self.pacer.stop is not None and self.pacer.stop.wait(CONFLICT_BACKOFF.delay(attempt)):
                        return "stopped", ""
                    if self.pacer.stop is None:
                        time.sleep(CONFLICT_BACKOFF.delay(attempt))
                    continue
                self.counts.add(rewritten=1)
                return "ok", "deleted"
            return "failed", f"its delete was cancelled 8 times ({', '.join(codes)}); run migrate again"
        params = {"TableName": self.physical, **self._delete_action(raw)["Delete"]}
        try:  # only the revision checked above: a write since then keeps the item
            backend.call("DeleteItem", params)
        except ConditionFailed:
            return "failed", changed
        self.counts.add(rewritten=1)
        return "ok", "deleted"


def _key_text(key: dict[str, Any]) -> str:
    return json.dumps(key, sort_keys=True)
