"""Concurrency: optimistic locking and conditional writes under 8 threads lose nothing."""

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


