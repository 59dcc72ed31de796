"""The scan workers of AddConstraint and RemoveConstraint: write (or delete) the sentinels of one unique constraint.

They run on the one segmented scan of migrations (:mod:`dynorm.migrations.scan`): per-segment
checkpoints in the ledger (an interrupted run resumes), ``--segments``, ``--max-wcu``/``--max-rcu``
pacing, failed items recorded and retried once every segment is done.

:class:`SentinelWriter` (AddConstraint) reads the entity's items (Scan, ``entityType = :t``, every key
version) and puts the sentinel of each item's values with the condition "absent, or already this
item's" (owner entity type and primary-key field values), in one TransactWriteItems with a ConditionCheck
that the item still holds the values read (an application write between the Scan and the Put never leaves
an orphan: the item is read again and its current value claimed). Writing it again is a no-op, so a re-run
finishes what an interrupted one began, and the two copies of an item during a copy-mode rekey (same
key fields) claim one sentinel. A value another item holds fails that item: its failure names the
value and both owners, the migration stays partial and lists them; once the duplicates are fixed,
``dynorm migrate`` again finishes it (what was written stays valid).

:class:`SentinelDeleter` (RemoveConstraint) reads the constraint's sentinels (Scan, ``begins_with(PK,
"dynorm#unique#<type>#<name>#")``) and deletes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import backend
from ..constraints import (
    CONSTRAINT_ATTRIBUTE,
    OWNER_KEY_ATTRIBUTE,
    OWNER_TYPE_ATTRIBUTE,
    SENTINEL_TYPE,
    av_text,
    sentinel_pk_text,
)
from ..constraints import SENTINEL_SK as _SK
from ..exceptions import ConditionFailed, ServiceError, TransactionCanceled
from ..writes import new_token
from .cost import Pacer
from .rekey import PAGE_SIZE, Counts, PageResult, _Base
from .state import TableState

__all__ = ["SentinelWriter", "SentinelDeleter", "SentinelAudit", "audit_sentinels", "repair_sentinels"]

#: a sentinel is about 0.1-0.2 KB: one WCU per Delete
SENTINEL_WCU = 1
#: a backfill Put goes in a TransactWriteItems with a ConditionCheck of its item (transactional: 2 WCU
#: each, an item up to 1 KB)
CLAIM_WCU = 4


class _SentinelScan(_Base):
    """A worker of one AddConstraint/RemoveConstraint (``op``): a filtered, segmented Scan of the table."""

    def __init__(self, op: Any, table: TableState, physical: str, counts: Counts, dry_run: bool = False,
                 pacer: Pacer | None = None, consistent: bool = True) -> None:
        super().__init__(table, physical, counts, dry_run, pacer, consistent)
        self.op = op

    def _scan(self, segment: int, total: int, page_size: int | None, filter_expression: str,
              names: dict[str, str], values: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        params: dict[str, Any] = {"TableName": self.physical, "ConsistentRead": self.consistent,
                                  "ReturnConsumedCapacity": "TOTAL", "FilterExpression": filter_expression,
                                  "ExpressionAttributeNames": names, "ExpressionAttributeValues": values}
        if page_size is not None:
            params["Limit"] = page_size
        if total > 1:
            params.update(Segment=segment, TotalSegments=total)
        return "Scan", params


class SentinelWriter(_SentinelScan):
    """Puts the sentinel of each item of one entity type for one constraint (AddConstraint)."""

    def read_params(self, segment: int, total: int, page_size: int | None = PAGE_SIZE) -> tuple[str, dict[str, Any]]:
        """The Scan of the entity's items (every key version): ``FilterExpression: entityType = :t``."""
        return self._scan(segment, total, page_size, "#t = :t", {"#t": self.table.type_attribute},
                          {":t": {"S": self.op.entity_type}})

    def sentinel(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        """The sentinel item ``raw`` holds (``None``: a value is missing, as None claims nothing)."""
        texts = []
        for attr, _kind in self.op.fields.values():
            av = raw.get(attr)
            if not av or "NULL" in av:
                return None
            texts.append(av_text(av))
        owner = {n: raw[a] for n, a in self.op.owner.items() if a in raw}
        item = {self.table.pk_attribute: {"S": sentinel_pk_text(self.op.entity_type, self.op.name, texts)},
                self.table.type_attribute: {"S": SENTINEL_TYPE},
                OWNER_TYPE_ATTRIBUTE: {"S": self.op.entity_type}, OWNER_KEY_ATTRIBUTE: {"M": owner},
                CONSTRAINT_ATTRIBUTE: {"S": self.op.name}, self.table.revision_attribute: {"S": new_token()}}
        if self.table.sk_attribute:
            item[self.table.sk_attribute] = {"S": _SK}
        return item

    def process(self, items: list[dict[str, Any]], tally: Any = None) -> PageResult:
        """Put each item's sentinel (conditional: absent, or this item's); a value held by another item fails it."""
        result = PageResult()
        for raw in items:
            self.counts.add(scanned=1)
            status, reason = self._claim(raw)
            if status == "stopped":
                result.complete = False
                return result
            if status == "failed":
                self._fail(result, raw, reason)
            elif status == "skipped":
                self.counts.add(skipped=1)
            else:
                self.counts.add(rewritten=1)
        return result

    def retry(self, key: dict[str, Any], tally: Any = None) -> tuple[str, str]:
        """Read the failed item again (consistent GetItem) and claim its value again."""
        raw = self._get(key)
        if raw is None or raw.get(self.table.type_attribute) != {"S": self.op.entity_type}:
            return "ok", ""  # gone since: nothing to claim
        status, reason = self._claim(raw)
        return ("ok", "") if status in ("ok", "skipped") else (status, reason)

    def _claim(self, raw: dict[str, Any], attempts: int = 8) -> tuple[str, str]:
        """Put the sentinel of ``raw``'s values, in one TransactWriteItems with a ConditionCheck that the item
        still holds them: a value the application changed (or an item it deleted) since the Scan read it
        never leaves an orphan sentinel; the item is read again (consistent GetItem) and its value now
        claimed instead (or nothing, when it is gone)."""
        for _ in range(attempts):
            item = self.sentinel(raw)
            if item is None:
                return "skipped", ""
            if self.dry_run:
                return "ok", ""
            if not self.pacer.before_write(CLAIM_WCU):
                return "stopped", ""
            try:
                self._transact([{"Put": self._put(item)}, {"ConditionCheck": self._still_holds(raw)}])
            except TransactionCanceled as exc:
                codes = [r.get("code") for r in exc.reasons]
                if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":  # the item changed since read
                    fresh = self._get(self._key_of(raw))
                    if fresh is None or fresh.get(self.table.type_attribute) != {"S": self.op.entity_type}:
                        return "skipped", ""  # deleted since: nothing to claim
                    raw = fresh
                    continue
                if codes and codes[0] == "ConditionalCheckFailed":
                    return "failed", self._duplicate(raw, exc.reasons[0].get("item") or {})
                return "failed", str(exc)
            except ServiceError as exc:
                return "failed", str(exc)
            return "ok", ""
        return "failed", (f"the item changed {attempts} times while its sentinel was written; run "
                          "`dynorm migrate` again")

    def _put(self, item: dict[str, Any]) -> dict[str, Any]:
        """The sentinel's Put: "absent, or already this item's" (a re-run writes nothing twice)."""
        return {"TableName": self.physical, "Item": item,
                "ConditionExpression": "attribute_not_exists(#p) OR (#ot = :ot AND #ok = :ok)",
                "ExpressionAttributeNames": {"#p": self.table.pk_attribute, "#ot": OWNER_TYPE_ATTRIBUTE,
                                             "#ok": OWNER_KEY_ATTRIBUTE},
                "ExpressionAttributeValues": {":ot": item[OWNER_TYPE_ATTRIBUTE], ":ok": item[OWNER_KEY_ATTRIBUTE]},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}

    def _still_holds(self, raw: dict[str, Any]) -> dict[str, Any]:
        """The ConditionCheck "the item is still of this entity type and holds the values read"."""
        names = {"#t": self.table.type_attribute}
        values: dict[str, Any] = {":t": {"S": self.op.entity_type}}
        clauses = ["#t = :t"]
        for i, (attr, _kind) in enumerate(self.op.fields.values()):
            names[f"#f{i}"] = attr
            values[f":f{i}"] = raw[attr]
            clauses.append(f"#f{i} = :f{i}")
        return {"TableName": self.physical, "Key": self._key_of(raw), "ConditionExpression": " AND ".join(clauses),
                "ExpressionAttributeNames": names, "ExpressionAttributeValues": values}

    def _duplicate(self, raw: dict[str, Any], there: dict[str, Any]) -> str:
        held = there.get(OWNER_KEY_ATTRIBUTE, {}).get("M", {})
        values = ", ".join(f"{n}={av_text(raw[a])!r}" for n, (a, _) in self.op.fields.items())
        holder = ", ".join(f"{n}={av_text(v)!r}" for n, v in held.items()) or "an unknown item"
        return (f"duplicate value {values} of unique constraint {self.op.name!r}: already held by "
                f"{self.op.entity_type} {holder}")


class SentinelDeleter(_SentinelScan):
    """Deletes every sentinel of one constraint (RemoveConstraint)."""

    def read_params(self, segment: int, total: int, page_size: int | None = PAGE_SIZE) -> tuple[str, dict[str, Any]]:
        """The Scan of the constraint's sentinels: ``begins_with(PK, "dynorm#unique#<type>#<name>#")``."""
        prefix = sentinel_pk_text(self.op.entity_type, self.op.name, []) + "#"
        return self._scan(segment, total, page_size, "#t = :t AND begins_with(#p, :prefix)",
                          {"#t": self.table.type_attribute, "#p": self.table.pk_attribute},
                          {":t": {"S": SENTINEL_TYPE}, ":prefix": {"S": prefix}})

    def process(self, items: list[dict[str, Any]], tally: Any = None) -> PageResult:
        """Delete each sentinel read (a sentinel already gone is no error)."""
        result = PageResult()
        for raw in items:
            self.counts.add(scanned=1)
            if self.dry_run:
                continue
            if not self.pacer.before_write(SENTINEL_WCU):
                result.complete = False
                return result
            try:
                backend.call("DeleteItem", {"TableName": self.physical, "Key": self._key_of(raw)})
            except ServiceError as exc:
                self._fail(result, raw, str(exc))
                continue
            self.counts.add(rewritten=1)
        return result

    def retry(self, key: dict[str, Any], tally: Any = None) -> tuple[str, str]:
        """Delete the sentinel again."""
        try:
            backend.call("DeleteItem", {"TableName": self.physical, "Key": key})
        except ServiceError as exc:
            return "failed", str(exc)
        return "ok", ""


# -- the invariant: one sentinel per item's value, naming it; no orphan -----------------------------


@dataclass
class SentinelAudit:
    """What a consistent read of one constraint's items and sentinels found.

    Attributes:
        items: items of the entity holding a value (none of the constrained fields ``None``);
        sentinels: sentinels of the constraint.
        missing: ``(item, text)`` per item whose value has no sentinel naming it (raw item, the value's text).
        orphans: ``(sentinel, reason)`` per sentinel naming no item that holds its value (raw sentinel).
    """

    items: int = 0
    sentinels: int = 0
    missing: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    orphans: list[tuple[dict[str, Any], str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The invariant holds: every value has its sentinel naming its item, and no orphan."""
        return not self.missing and not self.orphans

    #: the table's key attributes (to show an item's key)
    key_attributes: tuple[str, ...] = ("PK", "SK")

    def problems(self, limit: int = 20) -> list[str]:
        """One line per missing sentinel and orphan (the first ``limit``)."""
        out = [f"missing sentinel of {text!r} for the item {_show_key(raw, self.key_attributes)}"
               for raw, text in self.missing]
        out += [f"orphan sentinel {_show_key(raw, self.key_attributes[:1])}: {why}" for raw, why in self.orphans]
        return out[:limit]


def _show_key(raw: dict[str, Any], attrs: tuple[str, ...]) -> str:
    return "/".join(av_text(raw[a]) for a in attrs if a in raw)


def _show_owner(owner: dict[str, Any] | None) -> str:
    return ", ".join(f"{n}={av_text(v)}" for n, v in ((owner or {}).get("M") or {}).items()) or "no item"


def audit_sentinels(writer: SentinelWriter) -> SentinelAudit:
    """Read the constraint's sentinels, then the entity's items (both consistent Scans) and compare them.

    The sentinels are read first: a constrained application write changes an item and its sentinels in
    one transaction, so a sentinel read before its item was changed shows as an orphan here, and
    :func:`repair_sentinels` deletes it only if it is still the one read (its revision).

    DynamoDB: two Scans (ConsistentRead, 1 MB pages), the table's RCU for each.
    """
    out = SentinelAudit(key_attributes=(writer.table.pk_attribute, *filter(None, [writer.table.sk_attribute])))
    deleter = SentinelDeleter(writer.op, writer.table, writer.physical, Counts(), True, writer.pacer, True)
    found: dict[str, dict[str, Any]] = {}
    for items, _ in deleter.pages(*_consistent(deleter.read_params(0, 1, page_size=None)), None):
        for raw in items:
            found[raw[writer.table.pk_attribute]["S"]] = raw
    held: dict[str, list[dict[str, Any]]] = {}
    for items, _ in writer.pages(*_consistent(writer.read_params(0, 1, page_size=None)), None):
        for raw in items:
            item = writer.sentinel(raw)
            if item is None:
                continue
            out.items += 1
            pk = item[writer.table.pk_attribute]["S"]
            held.setdefault(pk, []).append(raw)
            there = found.get(pk)
            if there is None or there.get(OWNER_KEY_ATTRIBUTE) != item[OWNER_KEY_ATTRIBUTE] \
                    or there.get(OWNER_TYPE_ATTRIBUTE) != item[OWNER_TYPE_ATTRIBUTE]:
                out.missing.append((raw, pk[len(sentinel_pk_text(writer.op.entity_type, writer.op.name, [])) + 1:]))
    out.sentinels = len(found)
    for pk, raw in found.items():
        owners = [writer.sentinel(r) for r in held.get(pk, [])]
        if not owners:
            out.orphans.append((raw, "no item of the entity holds this value"))
        elif not any(o is not None and o[OWNER_KEY_ATTRIBUTE] == raw.get(OWNER_KEY_ATTRIBUTE) for o in owners):
            out.orphans.append((raw, f"it names {_show_owner(raw.get(OWNER_KEY_ATTRIBUTE))}, which does not hold "
                                     "this value"))
    return out


def _consistent(read: tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    operation, params = read
    return operation, {**params, "ConsistentRead": True}


def repair_sentinels(writer: SentinelWriter, found: SentinelAudit) -> list[str]:
    """Delete each orphan (conditional: still the sentinel read, same revision and owner), then claim each
    missing value as the backfill does (:meth:`SentinelWriter._claim`: the item still holds it).

    Returns:
        one line per problem left (a value another item holds: a duplicate to fix by hand).

    DynamoDB: one conditional DeleteItem per orphan, one TransactWriteItems per missing sentinel.
    """
    left: list[str] = []
    rev = writer.table.revision_attribute
    for raw, _why in found.orphans:
        names = {"#ok": OWNER_KEY_ATTRIBUTE, "#r": rev}
        values: dict[str, Any] = {":ok": raw.get(OWNER_KEY_ATTRIBUTE, {"NULL": True})}
        if rev in raw:
            cond = "#ok = :ok AND #r = :r"
            values[":r"] = raw[rev]
        else:
            cond = "#ok = :ok AND attribute_not_exists(#r)"
        try:
            backend.call("DeleteItem", {"TableName": writer.physical, "Key": writer._key_of(raw),
                                        "ConditionExpression": cond, "ExpressionAttributeNames": names,
                                        "ExpressionAttributeValues": values})
        except ConditionFailed:
            continue  # changed since read: an application write claimed or released it
        writer.counts.add(rewritten=1)
    for raw, _text in found.missing:
        status, reason = writer._claim(raw)
        if status == "failed":
            left.append(f"{_show_key(raw, found.key_attributes)}: {reason}")
        elif status == "ok":
            writer.counts.add(rewritten=1)
    return left
