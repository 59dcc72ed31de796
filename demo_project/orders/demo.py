"""Customer orders' access patterns (``make demo MODEL=orders``)."""

from __future__ import annotations

from typing import Any

from ..runner import Pattern
from .models import Customer, Order

TITLE = "Customer orders (Good): item collection with an A record"


def patterns(ids: dict[str, Any]) -> list[Pattern]:
    """The access patterns with the sample ids returned by ``load()``."""
    c = ids["customer_id"]
    return [
        Pattern("get a customer", f"Customer.objects.get(customer_id={c!r})",
                lambda: Customer.objects.get(customer_id=c), lambda: Customer.objects.filter(customer_id=c).explain()),
        Pattern("get a customer and their newest 3 orders", f"Customer.objects.with_newest_orders({c!r}, 3)",
                lambda: list(Customer.objects.with_newest_orders(c, 3)),
                lambda: Customer.objects.with_newest_orders(c, 3).explain()),
        Pattern("get all orders of a customer", f"Order.objects.of_customer({c!r})",
                lambda: list(Order.objects.of_customer(c)), lambda: Order.objects.of_customer(c).explain()),
        Pattern("get a customer's orders placed in February 2020",
                f"Order.objects.placed_between({c!r}, '2020-02-01', '2020-02-29')",
                lambda: list(Order.objects.placed_between(c, "2020-02-01", "2020-02-29")),
                lambda: Order.objects.placed_between(c, "2020-02-01", "2020-02-29").explain()),
    ]
