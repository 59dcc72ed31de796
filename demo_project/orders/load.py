"""Customers with a few dozen dated orders each."""

from __future__ import annotations

import datetime as dt
import decimal
import random
from typing import Any

from .models import Customer, Order


def load(seed: int = 5) -> dict[str, Any]:
    """Create 50 customers and their orders; return counts and a sample customer id."""
    rng = random.Random(seed)
    customers = [Customer(customer_id=str(100 + i), name=f"Customer {i}", email=f"c{i}@example.com")
                 for i in range(50)]
    Customer.objects.bulk_create(customers)
    orders = []
    for c in customers:
        day = dt.date(2020, 1, 1) + dt.timedelta(days=rng.randint(0, 30))
        for _ in range(rng.randint(5, 40)):
            day += dt.timedelta(days=rng.randint(1, 9))
            orders.append(Order(customer_id=c.customer_id, order_id=day.isoformat(),
                                total=decimal.Decimal(rng.randint(500, 50000)) / 100))
    Order.objects.bulk_create(orders)
    return {"counts": {"customers": len(customers), "orders": len(orders)}, "customer_id": "123"}
