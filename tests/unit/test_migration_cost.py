"""Migration cost estimates, the shared rate limit and the collection-split check (pure, no I/O)."""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from dynorm.checks import collection_splits
from dynorm.migrations.cost import Pacer, TokenBucket, estimate_scan_operation, item_size, move_units, write_units


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
    assert write_units(1) == 1 and write_units(1024) == 1 and write_units(1025) == 2
    # move of a <= 1 KB item with one GSI: Put 2 + Delete 2 + GSI delete 1 + GSI put 1
    assert move_units(300, 300, 1, 1, same_primary=False) == 6


@given(items=st.integers(0, 10**7), avg=st.integers(1, 400_000), segments=st.integers(1, 64),
       gsis=st.integers(0, 20), consistent=st.booleans())
def test_estimate_matches_a_brute_force_sum(items: int, avg: int, segments: int, gsis: int,
                                            consistent: bool) -> None:
    cost = estimate_scan_operation("move", items, items * avg, segments, 200, 50, gsis, consistent)
    kb = -(-avg // 1024)
    assert cost.wcu == items * (2 * kb + 2 * kb + 2 * gsis * kb)
    pages = -(-items // 200) + segments
    assert cost.read_requests == pages and cost.write_requests == -(-items // 50)
    # oracle: page by page, each rounded up to 4 KB, plus one empty page per segment
    units = 0
    left = items
    while left:
        page = min(200, left)
        units += max(1, -(-(page * avg) // 4096))
        left -= page
    units += segments
    assert cost.rcu == (units if consistent else units / 2)


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
