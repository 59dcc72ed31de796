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
from ..exceptions import ServiceError, TransactionCanceled
from ..writes import new_token
from .cost import Pacer
from .rekey import PAGE_SIZE, Counts, PageResult, _Base
from .state import TableState

__all__ = ["SentinelWriter", "SentinelDeleter"]

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
