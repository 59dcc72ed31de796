"""What a migration costs and how fast it may go: capacity estimates (pure) and a shared rate limit.

Capacity assumptions (DynamoDB's published pricing rules, on-demand and provisioned alike):

* reads: a Scan consumes 1 RCU per 4 KB read *before* filtering, rounded up per page (strongly
  consistent), half that eventually consistent; a migration scans the whole table, so every item
  is read. A BatchGetItem (DeleteVersion's check for current-version copies) consumes 1 RCU per
  started 4 KB of each item (consistent). The ``--plan`` figures are upper bounds whatever the item
  sizes (:func:`scan_bound`), not averages.
* writes: a transactional write of an item costs 2 WCU per started 1 KB (the Put of the new
  item and, in move mode, the Delete of the old one: 2 x 2 WCU for an item up to 1 KB); each
  GSI entry written or removed costs 1 WCU per started KB (not doubled by the transaction).
* item size: attribute names plus values (UTF-8 strings, ~1 byte per 2 digits of a number),
  as DynamoDB counts it, approximated for nested values.

The rate limit (``--max-wcu`` / ``--max-rcu``) is a token bucket per process whose rate is the
budget divided by the number of ``--worker`` processes, shared by all scan segments of that
process: N workers started with the same ``--max-wcu W`` together never exceed ``W`` per second
(plus one second of burst each). Writes take their estimated units *before* the request is sent;
reads are charged with the consumed capacity DynamoDB reports, and the next read waits until the
bucket is out of debt.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["item_size", "write_units", "read_units", "move_units", "copy_units", "TokenBucket", "Pacer",
           "OperationCost", "estimate_scan_operation", "units_bound", "scan_bound", "paced_requests",
           "PAGE_BYTES", "key_growth"]

#: a Scan page ends after 1 MB read (1,048,576 bytes); the bounds use 1,000,000 (more pages: safe)
PAGE_BYTES = 1_000_000


def _value_size(av: dict[str, Any]) -> int:
    (kind, value), = av.items()
    if kind == "S":
        return len(value.encode("utf-8"))
    if kind == "N":
        digits = len(str(value).lstrip("-").replace(".", "").lstrip("0")) or 1
        return 1 + math.ceil(digits / 2)
    if kind == "B":
        return len(value)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(_value_size({kind[0]: v}) for v in value)
    if kind == "L":
        return 3 + sum(1 + _value_size(v) for v in value)
    if kind == "M":
        return 3 + sum(len(k.encode("utf-8")) + 1 + _value_size(v) for k, v in value.items())
    return 0  # pragma: no cover - no other DynamoDB type


def item_size(item: dict[str, Any]) -> int:
    """Return the size of a DynamoDB-JSON item in bytes, as DynamoDB counts it (approximated for nesting)."""
    return sum(len(name.encode("utf-8")) + _value_size(av) for name, av in item.items())


def write_units(size: float) -> int:
    """Standard write capacity units for writing an item of ``size`` bytes (1 per started KB, at least 1)."""
    return max(1, math.ceil(size / 1024))


def read_units(size: float, consistent: bool) -> float:
    """Read capacity units for reading ``size`` bytes (1 per started 4 KB; half when eventually consistent)."""
    units = max(1, math.ceil(size / 4096))
    return float(units) if consistent else units / 2


def move_units(old_size: float, new_size: float, old_gsis: int, new_gsis: int, same_primary: bool) -> int:
    """Estimated WCU of moving one item in a transaction (Put new + Delete old, GSI entries rewritten).

    Args:
        old_size, new_size: item sizes in bytes; old_gsis, new_gsis: GSIs the old / new item is in.
        same_primary: only index keys change (one conditional Put replaces the item in place).
    """
    if same_primary:
        return 2 * write_units(max(old_size, new_size)) + old_gsis * write_units(old_size) \
            + new_gsis * write_units(new_size)
    return 2 * write_units(new_size) + 2 * write_units(old_size) + old_gsis * write_units(old_size) \
        + new_gsis * write_units(new_size)


def copy_units(new_size: float, new_gsis: int) -> int:
    """Estimated WCU of copying one item in a transaction (Put new, its GSI entries)."""
    return 2 * write_units(new_size) + new_gsis * write_units(new_size)


@dataclass
class OperationCost:
    """The estimate ``migrate --plan`` prints for one scan operation.

    Attributes:
        items: items in the table (DescribeTable ``ItemCount``; DynamoDB refreshes it about every 6 h).
        avg_size: average item size in bytes (``TableSizeBytes / ItemCount``), for information only.
        read_requests: at most this many Scan (or Query) pages and BatchGetItem calls (unprocessed
            keys retried aside); write_requests: TransactWriteItems / BatchWriteItem calls, assuming
            every item of the table belongs to the operation (under ``--max-wcu``, an upper bound of
            the paced split, :func:`paced_requests`).
        rcu, wcu: upper bounds of the capacity units, whatever the item sizes, provided ``items``
            and the table's size are current. ``rcu`` covers the scan, a move's first catch-up pass
            and DeleteVersion's two checks for copies; not the consistent GetItem of an item a
            concurrent write changed (one per conflict).
        catch_up_rcu: the RCU bound of one more catch-up pass (needed only when old-version items
            appeared during a move or a DeleteVersion; 0 for copy mode).
    """

    items: int
    avg_size: float
    read_requests: int
    write_requests: int
    rcu: float
    wcu: float
    catch_up_rcu: float = 0.0


def scan_bound(items: int, total_bytes: float, segments: int, page_size: int | None,
               consistent: bool) -> tuple[int, float]:
    """Upper bounds of the pages and RCU of a (parallel) Scan reading ``items`` items of ``total_bytes`` bytes.

    A page ends after ``page_size`` items (Scan ``Limit``; ``None``: no limit) or when the next item
    would pass 1 MB, and each segment ends with one more (possibly empty) page, so a segment of
    ``n`` items and ``b`` bytes returns at most ``n / page_size + 2 b / 1 MB + 1`` pages (two
    consecutive 1 MB-ended pages hold more than 1 MB together). A page of ``b`` bytes consumes
    ``max(1, ceil(b / 4 KB))`` units (half eventually consistent), at most ``b / 4096 + 1``; so the
    whole Scan consumes at most ``total_bytes / 4096 + pages`` units, whatever the item sizes and
    however the segments split the table.

    Returns:
        ``(pages, rcu)``.
    """
    pages = segments + math.floor(2 * total_bytes / PAGE_BYTES)
    if page_size:
        pages += items // page_size
    units = math.floor(total_bytes / 4096) + pages
    return pages, float(units) if consistent else units / 2

def units_bound(items: int, total_bytes: float) -> int:
    """An upper bound of ``sum(write_units(size))`` over ``items`` items of ``total_bytes`` bytes together.

    ``write_units(s) <= s / 1024 + 1`` for every size, so the sum is at most ``total_bytes / 1024 + items``
    whatever the sizes are (the average alone is not a bound: 1 KB and 100 B items average ~560 B,
    i.e. 1 WCU, but cost 2 + 1).
    """
    if items <= 0:
        return 0
    return items + math.floor(total_bytes / 1024)


def paced_requests(items: int, group: int, units: float, budget: float | None, pages: int) -> int:
    """An upper bound of the write requests :meth:`Pacer.groups` makes of ``items`` items in ``pages`` pages.

    Each request is full (``group`` items: at most ``items / group`` of them), or was closed because
    the next item did not fit ``budget`` (its units and the next item's exceed ``budget``; summed over
    such requests each item counts at most twice: fewer than ``2 * units / budget`` of them), or is
    the last of a page (at most ``pages``).

    Args:
        items: items written; group: items per request; units: an upper bound of their WCU together;
        budget: WCU one request may take (the per-process ``--max-wcu`` less any fixed units per
        request; ``None``: unpaced, ``ceil(items / group)``); pages: Scan pages the items come in.
    """
    if items <= 0:
        return 0
    if budget is None:
        return math.ceil(items / group)
    if budget <= 0:
        return items  # every item goes alone
    return min(items, items // group + math.floor(2 * units / budget) + max(1, pages))


def estimate_scan_operation(kind: str, items: int, table_bytes: int, segments: int, page_size: int,
                            group: int, gsis: int, consistent: bool, growth: int = 0,
                            write_budget: float | None = None) -> OperationCost:
    """Estimate a RekeyEntity (``kind`` ``"move"``/``"copy"``) or DeleteVersion (``"delete"``) on a table.

    Args:
        kind: ``"move"``, ``"copy"``, ``"delete"`` or ``"delete+copy"`` (a DeleteVersion with
            ``copy_missing``: each old item may be copied, transactional Put, before it is deleted).
        items, table_bytes: DescribeTable's ``ItemCount`` and ``TableSizeBytes``.
        segments: parallel Scan segments (each ends with one extra, possibly empty, page).
        page_size: Scan ``Limit``; group: items per write request.
        gsis: GSIs an item of the entity is in (assumed the same before and after).
        consistent: strongly consistent Scan.
        growth: bytes a rewritten item may gain (new key text longer than the old).
        write_budget: under ``--max-wcu``, the WCU one write request may take (the per-process rate
            less any fixed units per request); requests are then bounded by :func:`paced_requests`.

    Returns:
        An :class:`OperationCost` assuming every item of the table is one of the entity's; its
        ``rcu`` and ``wcu`` are upper bounds whatever the sizes of the items (they use their total
        size, not the average), provided ``items`` and ``table_bytes`` are current. Reads: the
        Scan (pages of ``page_size``; a rekey's scan may meet each item twice, old and rewritten),
        plus for a move or a delete one catch-up Scan (1 MB pages, consistent), plus for a
        delete a first pass checking the copies (1 MB pages) and, in both passes, one consistent
        BatchGetItem per 100 items (1 RCU per started 4 KB of each copy).
    """
    avg = table_bytes / items if items else 0.0
    copy_missing = kind == "delete+copy"
    if copy_missing:
        kind = "delete"
    if kind == "delete":
        read_requests, rcu = scan_bound(items, table_bytes, segments, page_size, consistent)
    else:
        # a rewritten item's new copy may land in a part of the table the scan has not read yet, so
        # the scan may read every item twice (DynamoDB Local: 71 RCU for a 66 RCU single pass)
        read_requests, rcu = scan_bound(2 * items, 2 * table_bytes + items * growth, segments, page_size,
                                        consistent)
    scan_pages = read_requests  # the pages the writes come in (each page's writes end with its own request)
    catch_up_rcu = 0.0
    if kind in ("move", "delete"):  # the catch-up Scan always reads consistently
        pages, catch_up_rcu = scan_bound(items, table_bytes + items * growth, segments, None, True)
        read_requests += pages
        rcu += catch_up_rcu
    if kind == "delete":
        pages, check_rcu = scan_bound(items, table_bytes, segments, None, consistent)
        copies = items + math.floor((table_bytes + items * growth) / 4096)  # per item: <= size / 4 KB + 1
        # the check: its Scan and a BatchGetItem per 100 items (per page: at most one more call each);
        # the delete pass: a BatchGetItem per 100 items of each of its pages
        read_requests += pages + (math.ceil(items / 100) + pages) + (math.ceil(items / 100) + read_requests)
        rcu += check_rcu + 2 * copies
    # per-item units from the total size, not the average (see units_bound); a rewritten item may
    # be up to ``growth`` bytes larger than the old one (longer key text)
    old_units = units_bound(items, table_bytes)
    new_units = units_bound(items, table_bytes + items * growth)
    if kind == "delete":
        wcu = old_units * (2 + gsis) + (new_units * (2 + gsis) if copy_missing else 0)  # transactional Deletes
    elif kind == "copy":
        wcu = new_units * (2 + gsis)
    else:
        wcu = old_units * (2 + gsis) + new_units * (2 + gsis)
    own = old_units * (2 + gsis) if kind == "delete" else wcu
    writes = paced_requests(items, group, own, write_budget, scan_pages)
    if copy_missing:  # plus one TransactWriteItems per page's copies (per group of COPY_GROUP items)
        writes += math.ceil(items / 100) + read_requests
        if write_budget is not None:
            writes += paced_requests(items, 100, new_units * (2 + gsis), write_budget, read_requests)
    return OperationCost(items, avg, read_requests, writes, rcu, float(wcu), catch_up_rcu)


class TokenBucket:
    """A token bucket that may go into debt: ``rate`` units per second, ``rate`` units of burst.

    Thread-safe; waits are interruptible by a stop event. Args: rate: units per second
    (> 0); clock, sleep: injectable for tests (default ``time.monotonic`` / ``Event.wait``);
    full: start with one second of burst (``False``: start empty, for buckets created one after
    another under one budget, such as Dask tasks, whose bursts would otherwise add up).
    """

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] | None = None, full: bool = True) -> None:
        if rate <= 0:
            raise ValueError(f"a rate limit must be > 0, not {rate}")
        self.rate = float(rate)
        self.tokens = float(rate) if full else 0.0
        self.clock = clock
        self.sleep = sleep
        self.stamp = clock()
        self.lock = threading.Lock()
        self.slept = 0.0  #: seconds of waiting asked for so far (for tests and reports)

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.rate, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def take(self, units: float, stop: threading.Event | None = None) -> bool:
        """Take ``units`` (possibly into debt) and wait until the bucket is out of debt.

        Returns:
            False when ``stop`` was set while waiting (the units stay taken), else True.
        """
        with self.lock:
            self._refill()
            self.tokens -= units
            wait = -self.tokens / self.rate if self.tokens < 0 else 0.0
            self.slept += wait
        return self._wait(wait, stop)

    def wait_clear(self, stop: threading.Event | None = None) -> bool:
        """Wait until the bucket is out of debt (before a read whose cost is known only afterwards)."""
        with self.lock:
            self._refill()
            wait = -self.tokens / self.rate if self.tokens < 0 else 0.0
            self.slept += wait
        return self._wait(wait, stop)

    def charge(self, units: float) -> None:
        """Take ``units`` already spent (a read's reported consumed capacity) without waiting."""
        with self.lock:
            self._refill()
            self.tokens -= units

    def _wait(self, seconds: float, stop: threading.Event | None) -> bool:
        if seconds <= 0:
            return not (stop is not None and stop.is_set())
        if self.sleep is not None:
            self.sleep(seconds)
            return not (stop is not None and stop.is_set())
        if stop is None:
            time.sleep(seconds)
            return True
        return not stop.wait(seconds)


class Pacer:
    """The read and write limits of one migrate process (``None``: unlimited), shared by its segments.

    Args:
        max_rcu, max_wcu: the budgets of the whole migration, in capacity units per second.
        workers: how many ``--worker`` processes share them (each takes an equal part).
        stop: set on SIGINT/SIGTERM; waits end early.
        burst: start with one second of burst (``False``: start empty; Dask tasks, see :class:`TokenBucket`).

    Attributes:
        lease: when set, called before every write request; False (the run's lock may have
            expired, :meth:`dynorm.migrations.ledger.Ledger.holds`) stops the run like a stop.
    """

    def __init__(self, max_rcu: float | None = None, max_wcu: float | None = None, workers: int = 1,
                 stop: threading.Event | None = None, sleep: Callable[[float], None] | None = None,
                 burst: bool = True) -> None:
        self.reads = TokenBucket(max_rcu / workers, sleep=sleep, full=burst) if max_rcu else None
        self.writes = TokenBucket(max_wcu / workers, sleep=sleep, full=burst) if max_wcu else None
        self.stop = stop
        self.lease: Callable[[], bool] | None = None
        self.write_units = 0.0  #: estimated WCU of the writes sent
        self.read_units = 0.0   #: RCU reported by DynamoDB for the reads
        self._lock = threading.Lock()

    def stopped(self) -> bool:
        """True once a stop was asked for."""
        return self.stop is not None and self.stop.is_set()

    def before_read(self) -> bool:
        """Wait for the read budget; False when stopped."""
        return self.reads.wait_clear(self.stop) if self.reads is not None else not self.stopped()

    def after_read(self, units: float) -> None:
        """Charge a read's consumed capacity."""
        with self._lock:
            self.read_units += units
        if self.reads is not None:
            self.reads.charge(units)

    def groups(self, planned: list[Any], size: int, units: Callable[[Any], float],
               fixed: float = 0.0) -> list[list[Any]]:
        """Split ``planned`` writes into requests of at most ``size`` items and at most one burst of WCU.

        Without a write limit: slices of ``size``. With one, a request never costs more than the
        bucket's burst (one second of the rate), so the rate limit holds over every second; a single
        item dearer than the burst goes alone. Greedy: each request is full, or was closed because
        the next item did not fit (what :func:`estimate_scan_operation`'s paced bound counts).

        Args:
            planned: the writes, in order; size: items per request (e.g. 50 per TransactWriteItems);
            units: the estimated WCU of one write; fixed: WCU every request adds (a tally action).
        """
        if self.writes is None:
            return [planned[i:i + size] for i in range(0, len(planned), size)]
        burst = self.writes.rate - fixed
        out: list[list[Any]] = []
        current: list[Any] = []
        spent = 0.0
        for entry in planned:
            cost = units(entry)
            if current and (len(current) >= size or spent + cost > burst):
                out.append(current)
                current, spent = [], 0.0
            current.append(entry)
            spent += cost
        if current:
            out.append(current)
        return out

    def before_write(self, units: float) -> bool:
        """Take ``units`` of the write budget (waiting as needed); False when stopped, or when the
        run's lock is no longer known to be held (:attr:`lease`)."""
        with self._lock:
            self.write_units += units
        if not (self.writes.take(units, self.stop) if self.writes is not None else not self.stopped()):
            return False
        return self.lease is None or self.lease()



def key_growth(old: dict[str, dict[str, str]], new: dict[str, dict[str, str]]) -> int:
    """Bytes a rewritten item may gain: the new key attributes' names and templates, less the old ones'.

    Field values fill both templates alike; an attribute only the new keys have counts in full
    (its name and template text, plus its field values at most once more: counted as the template again).

    Args:
        old, new: key layouts, ``{index path: {attribute: template}}``.
    """
    def size(keys: dict[str, dict[str, str]]) -> dict[str, int]:
        return {attr: len(attr.encode()) + len(tpl.encode()) for attrs in keys.values() for attr, tpl in attrs.items()}

    before, after = size(old), size(new)
    return sum(max(0, n - before.get(a, 0)) if a in before else 2 * n for a, n in after.items())
