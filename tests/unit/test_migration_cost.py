"""Migration cost estimates, the shared rate limit and the collection-split check (pure, no I/O)."""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from dynorm.checks import collection_splits
from dynorm.migrations.cost import (
    Pacer,
    TokenBucket,
    copy_units,
    estimate_scan_operation,
    item_size,
    move_units,
    paced_requests,
    units_bound,
    write_units,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@settings(max_examples=200, deadline=None)
@given(rate=st.floats(1, 5000), takes=st.lists(st.tuples(st.floats(0, 2000), st.floats(0, 3)), min_size=1,
                                               max_size=60))
def test_token_bucket_never_lets_more_than_rate_times_time_plus_one_second_of_burst(
        rate: float, takes: list[tuple[float, float]]) -> None:
    # oracle: after each take returns, everything taken so far <= rate * elapsed + rate (the burst)
    clock = FakeClock()
    bucket = TokenBucket(rate, clock=clock, sleep=clock.sleep)
    taken = 0.0
    for units, idle in takes:
        clock.now += idle
        assert bucket.take(units)
        taken += units
        assert taken <= rate * clock.now + rate + 1e-6 * max(1.0, taken)


def test_token_bucket_wait_ends_early_when_stopped() -> None:
    stop = threading.Event()
    bucket = TokenBucket(1.0)
    threading.Timer(0.05, stop.set).start()
    assert bucket.take(1000.0, stop) is False  # would wait ~1000 s otherwise


def test_pacer_splits_the_budget_between_workers() -> None:
    pacer = Pacer(max_rcu=100, max_wcu=40, workers=4)
    assert pacer.reads is not None and pacer.reads.rate == 25
    assert pacer.writes is not None and pacer.writes.rate == 10
    assert Pacer().reads is None and Pacer().before_write(10**9)  # unlimited: never waits


def test_item_size_and_units_follow_dynamodb_rules() -> None:
    assert item_size({"PK": {"S": "abc"}}) == 5
    assert item_size({"n": {"N": "12345"}}) == 1 + 1 + 3
    assert item_size({"m": {"M": {"a": {"BOOL": True}}}}) == 1 + 3 + 1 + 1 + 1
    # text is counted in UTF-8 bytes, names and values alike, ASCII or not (the inline text path)
    assert item_size({"é": {"S": "日本"}, "s": {"S": ""}, "b": {"B": b"xy"}}) == 2 + 6 + 1 + 0 + 1 + 2
    assert item_size({"ss": {"SS": ["é", "a"]}, "e": {"S": "🍦"}}) == 2 + 3 + 1 + 4
    assert write_units(1) == 1 and write_units(1024) == 1 and write_units(1025) == 2
    # move of a <= 1 KB item with one GSI: Put 2 + Delete 2 + GSI delete 1 + GSI put 1
    assert move_units(300, 300, 1, 1, same_primary=False) == 6


@settings(deadline=None)
@given(items=st.integers(0, 3000), avg=st.integers(1, 400_000), segments=st.integers(1, 64),
       gsis=st.integers(0, 20), consistent=st.booleans())
def test_estimate_bounds_a_table_of_equal_items(items: int, avg: int, segments: int, gsis: int,
                                                consistent: bool) -> None:
    cost = estimate_scan_operation("move", items, items * avg, segments, 200, 50, gsis, consistent)
    kb = -(-avg // 1024)
    assert cost.wcu >= items * (2 * kb + 2 * kb + 2 * gsis * kb)  # an upper bound of the per-item sum
    assert cost.write_requests == -(-items // 50)
    # oracle: pages of 200 items (or 1 MB), each rounded up to 4 KB, twice (the scan and the catch-up
    # pass, whose pages end at 1 MB only)
    pages, units = _scan([avg] * items, list(range(items)), segments, 200)
    pages2, units2 = _scan([avg] * items, list(range(items)), segments, None)
    half = 1 if consistent else 0.5
    assert cost.read_requests >= pages + pages2 and cost.rcu >= (units + units2) * half


def _scan(sizes: list[int], segment_of: list[int], segments: int, limit: int | None) -> tuple[int, int]:
    """Brute force: the pages and (consistent) RCU of a parallel Scan, as DynamoDB pages and charges it."""
    pages = units = 0
    for seg in range(segments):
        mine = [s for s, g in zip(sizes, segment_of) if g % segments == seg]
        page: list[int] = []
        for size in mine:
            if page and (len(page) == limit or sum(page) + size > 1_048_576):
                pages, units = pages + 1, units + max(1, -(-sum(page) // 4096))
                page = []
            page.append(size)
        pages, units = pages + 1, units + max(1, -(-sum(page) // 4096))  # the last page (empty if none)
        if page and len(page) == limit:  # exactly full: a LastEvaluatedKey, so one more, empty page
            pages, units = pages + 1, units + 1
    return pages, units


@settings(deadline=None)
@given(sizes=st.lists(st.integers(1, 400_000), max_size=80), split=st.lists(st.integers(0, 63), min_size=80,
       max_size=80), segments=st.integers(1, 8), limit=st.sampled_from([1, 3, 200]), consistent=st.booleans(),
       kind=st.sampled_from(["move", "copy", "delete"]))
def test_plan_reads_are_an_upper_bound_whatever_the_sizes_and_the_split(
        sizes: list[int], split: list[int], segments: int, limit: int, consistent: bool, kind: str) -> None:
    """--plan's read figures bound a brute-force Scan of any mix of sizes, however the segments split them
    (not the average: a few large items among small ones)."""
    cost = estimate_scan_operation(kind, len(sizes), sum(sizes), segments, limit, 50, 1, consistent)
    half = 1 if consistent else 0.5
    if kind == "delete":
        pages, units = _scan(sizes, split, segments, limit)
    else:  # a rekey's scan may also meet the rewritten items, in any segment
        pages, units = _scan(sizes + sizes, split[: len(sizes)] + split[::-1][: len(sizes)], segments, limit)
    extra = 0.0
    if kind in ("move", "delete"):  # and the first catch-up pass, always consistent (full units)
        more_pages, more_units = _scan(sizes, split, segments, None)
        pages, extra = pages + more_pages, extra + more_units
        assert cost.catch_up_rcu >= more_units
    if kind == "delete":  # the check (a 1 MB-page Scan) and a consistent BatchGetItem of every copy, twice
        more_pages, more_units = _scan(sizes, split, segments, None)
        pages, units = pages + more_pages, units + more_units
        extra += 2 * sum(max(1, -(-s // 4096)) for s in sizes)
        pages += 2 * -(-len(sizes) // 100)
    assert cost.read_requests >= pages and cost.rcu >= units * half + extra


def test_collection_splits_by_version_or_by_template() -> None:
    before = [("ISSUE", "", "{version}#I#{issue_id}", "v1"), ("COMMENT", "", "{version}#I#{issue_id}", "v1"),
              ("USER", "", "{version}#U#{user_id}", "v1")]
    assert collection_splits(before, before) == []
    bumped = [("ISSUE", "", "{version}#I#{issue_id}", "v2"), *before[1:]]
    [msg] = collection_splits(before, bumped)
    assert "ISSUE" in msg and "COMMENT" in msg and "bump key_version of COMMENT to 'v2'" in msg
    together = [(e, i, t, "v2") for e, i, t, _ in before]
    assert collection_splits(before, together) == []
    renamed = [("ISSUE", "", "{version}#ISS#{issue_id}", "v1"), *before[1:]]
    [msg] = collection_splits(before, renamed)
    assert "change their partition-key templates together" in msg
    alone = [("USER", "", "{version}#U#{user_id}", "v2"), *before[:2]]
    assert collection_splits(before, alone) == []  # USER shared its partitions with nobody


@settings(deadline=None)
@given(sizes=st.lists(st.integers(0, 400_000), max_size=60), gsis=st.integers(0, 5), growth=st.integers(0, 300),
       kind=st.sampled_from(["move", "copy", "delete"]))
def test_plan_wcu_is_an_upper_bound_whatever_the_item_sizes(sizes: list[int], gsis: int, growth: int,
                                                             kind: str) -> None:
    """The --plan figure bounds the per-item units the pacer charges, for any mix of sizes (not the average)."""
    cost = estimate_scan_operation(kind, len(sizes), sum(sizes), 1, 200, 50, gsis, False, growth)
    # oracle: every item charged on its own, each rewritten item up to ``growth`` bytes larger
    if kind == "move":
        spent = sum(move_units(s, s + growth, gsis, gsis, same_primary=False) for s in sizes)
    elif kind == "copy":
        spent = sum(copy_units(s + growth, gsis) for s in sizes)
    else:
        spent = sum(write_units(s) * (1 + gsis) for s in sizes)
    assert spent <= cost.wcu
    assert units_bound(len(sizes), sum(sizes)) >= sum(write_units(s) for s in sizes)


def test_plan_wcu_of_mixed_sizes_exceeds_the_average_figure() -> None:
    """Half 100 B and half 1.6 KB items average < 1 KB, yet the large ones cost 2 units each."""
    sizes = [100, 1600] * 50
    cost = estimate_scan_operation("move", 100, sum(sizes), 1, 200, 50, 1, False)
    assert cost.wcu >= sum(move_units(s, s, 1, 1, same_primary=False) for s in sizes) == 900


@settings(deadline=None)
@given(units=st.lists(st.integers(1, 40), max_size=120), size=st.integers(1, 50), burst=st.integers(1, 300))
def test_pacer_groups_never_exceed_the_burst_nor_the_request_size(units: list[int], size: int, burst: int) -> None:
    pacer = Pacer(max_wcu=burst)
    planned = list(enumerate(units))
    groups = pacer.groups(planned, size, lambda e: e[1])
    assert [e for g in groups for e in g] == planned  # every write once, in order
    for g in groups:
        assert 1 <= len(g) <= size
        assert len(g) == 1 or sum(u for _, u in g) <= burst  # a single dearer item goes alone
    unpaced = Pacer().groups(planned, size, lambda e: e[1])
    assert unpaced == [planned[i:i + size] for i in range(0, len(planned), size)]


@settings(max_examples=300, deadline=None)
@given(pages=st.lists(st.lists(st.integers(1, 60), max_size=120), min_size=1, max_size=6),
       size=st.integers(1, 100), rate=st.integers(1, 400), fixed=st.integers(0, 2))
def test_paced_request_bound_holds_for_what_the_pacer_sends(pages: list[list[int]], size: int, rate: int,
                                                            fixed: int) -> None:
    # oracle: the requests Pacer.groups actually makes, page by page, as VersionDeleter/Rekeyer.process do
    pacer = Pacer(max_wcu=rate)
    sent = sum(len(pacer.groups(page, size, lambda u: u, fixed)) for page in pages)
    items = sum(len(p) for p in pages)
    bound = paced_requests(items, size, sum(sum(p) for p in pages), rate - fixed if rate > fixed else 0, len(pages))
    assert sent <= bound, (sent, bound)
    if rate > fixed and items:  # unpaced the figure is the plain one
        assert paced_requests(items, size, 0, None, len(pages)) == -(-items // size)


def test_plan_counts_the_paced_split_of_a_delete() -> None:
    # docs: 100 deletes of 3 WCU at --max-wcu 30 go 9 at a time (30 less the tally's 2): 12 transactions
    pacer = Pacer(max_wcu=30)
    sent = len(pacer.groups([3] * 100, 99, lambda u: u, 2))
    cost = estimate_scan_operation("delete", 100, 100 * 200, 1, 200, 99, 0, False, 0, 28)
    assert sent == 12 and cost.write_requests >= sent
    assert estimate_scan_operation("delete", 100, 100 * 200, 1, 200, 99, 0, False).write_requests == 2
