"""A customer and their orders in one item collection.

The customer's item has the sort key ``A`` and orders ``#ORDER#<orderId>``; since ``#`` sorts
before ``A``, one reverse Query with Limit N+1 returns the customer and their newest N orders.
The entity type is stored in ``Type``, as in the article.
"""

from __future__ import annotations

from typing import Any

from dynorm import Entity, QuerySet, Table, fields


class Shopfront(Table):
    """The orders table (entity type attribute ``Type``)."""

    class Meta:
        table_name = "orders"
        type_attribute = "Type"


class CustomerQuerySet(QuerySet["Customer"]):
    def with_newest_orders(self, customer_id: str, n: int = 3) -> Any:
        """get a customer and their newest N orders (one reverse Query, Limit N+1)"""
        return self.collection(customer_id=customer_id).order_by("-sk")[: n + 1]


class Customer(Entity):
    customer_id = fields.String(attr_name="CustomerId")
    name = fields.String()
    email = fields.String(null=True)

    objects = CustomerQuerySet.as_manager()

    class Meta:
        table = Shopfront
        entity_type = "Customer"
        pk = "{version}#CUSTOMER#{customer_id}"
        sk = "A"


class OrderQuerySet(QuerySet["Order"]):
    def of_customer(self, customer_id: str) -> OrderQuerySet:
        """get all orders of a customer, oldest first"""
        return self.filter(customer_id=customer_id)  # type: ignore[return-value]

    def placed_between(self, customer_id: str, start: str, end: str) -> OrderQuerySet:
        """get a customer's orders placed between two dates (order ids are ISO dates)"""
        return self.filter(customer_id=customer_id, order_id__between=(start, end))  # type: ignore[return-value]


class Order(Entity):
    customer_id = fields.String(attr_name="CustomerId")
    order_id = fields.String(attr_name="OrderId")
    total = fields.Decimal(default=0)
    status = fields.String(default="PLACED")

    objects = OrderQuerySet.as_manager()

    class Meta:
        table = Shopfront
        entity_type = "Order"
        pk = "{version}#CUSTOMER#{customer_id}"
        sk = "#ORDER#{order_id}"
