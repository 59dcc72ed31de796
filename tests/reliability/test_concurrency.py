"""Concurrency: optimistic locking, conditional writes and first reads of deferred fields under threads lose nothing."""

from __future__ import annotations

import threading

import dynorm
from demo_project.catalog.models import Product
from dynorm import F, Q
from tests.models import Counter


def test_eight_threads_update_with_retry_reach_exactly_400() -> None:
    Counter.objects.create(name="race")
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                Counter.objects.update_with_retry({"name": "race"}, lambda c: setattr(c, "value", c.value + 1),
                                                  attempts=100, base_delay=0.005)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert Counter.objects.get(name="race").value == 400




def test_plain_save_races_raise_stale_write_and_lose_no_acknowledged_write() -> None:
    Counter.objects.create(name="plain")
    acknowledged = []
    stale = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(25):
            c = Counter.objects.get_queryset().consistent().get(name="plain")
            c.value += 1
            try:
                c.save()
                with lock:
                    acknowledged.append(1)
            except dynorm.StaleWrite:
                with lock:
                    stale.append(1)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = Counter.objects.get(name="plain")
    assert final.value == len(acknowledged) == final.version - 1
    assert len(acknowledged) + len(stale) == 200 and stale




def test_stock_decrement_with_condition_never_goes_below_zero() -> None:
    p = Product.objects.create(brand_id="1", category_id="1", name="Scarce", stock_level=100)
    sold = []
    lock = threading.Lock()

    def buy() -> None:
        for _ in range(40):
            try:
                Product.objects.filter(product_id=p.product_id).update(
                    stock_level=F("stock_level") - 3, condition=Q(stock_level__gte=3))
                with lock:
                    sold.append(3)
            except dynorm.ConditionFailed:
                pass

    threads = [threading.Thread(target=buy) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    end = Product.objects.get(product_id=p.product_id).stock_level
    assert end >= 0 and end == 100 - sum(sold) and end < 3  # sum of successful decrements = start - end




def _first_reads_in_two_threads(obj: object, field: str) -> tuple[list[object], int]:
    """Read ``obj.<field>`` (deferred) in two threads, the second while the first one's GetItem is under way."""
    from dynorm import backend

    in_flight = threading.Event()
    gets: list[int] = []

    def slow_get(**kwargs: object) -> None:
        gets.append(1)
        in_flight.set()
        threading.Event().wait(0.3)  # the first GetItem is still under way when the second thread reads

    seen: list[object] = []
    events = backend.client().meta.events
    events.register("before-send.dynamodb.GetItem", slow_get)
    try:
        first = threading.Thread(target=lambda: seen.append(getattr(obj, field)))
        first.start()
        assert in_flight.wait(5)
        second = threading.Thread(target=lambda: seen.append(getattr(obj, field)))
        second.start()
        first.join()
        second.join()
    finally:
        events.unregister("before-send.dynamodb.GetItem", slow_get)
    return seen, len(gets)


def test_two_threads_reading_a_deferred_field_first_both_get_the_value_from_one_getitem() -> None:
    from tests.models import Tally

    Tally.objects.create(name="t", n=1, note="kept")
    got = Tally.objects.filter(name="t").update(n=F("n") + 1)  # n (and note) deferred
    assert _first_reads_in_two_threads(got, "n") == ([2, 2], 1)
    partial = Tally.objects.only("name").get(name="t")
    assert _first_reads_in_two_threads(partial, "note") == (["kept", "kept"], 1)
