"""Entities used by the test suite (besides demo_project's catalog)."""

from __future__ import annotations

from dynorm import Entity, Index, QuerySet, Table, UniqueConstraint, fields


class Retail(Table):
    class Meta:
        table_name = "retail"
        gsis = {"GSI1": ("GSI1PK", "GSI1SK"), "INV": ("SK", "PK")}
        lsis = {"LSI1": "placed_at"}
        ttl_attribute = "expires_at"


class Store(Entity):
    store_id = fields.String()
    name = fields.String()
    city = fields.String(null=True)

    class Meta:
        table = Retail
        entity_type = "STORE"
        pk = "{version}#STORE#{store_id}"
        sk = "METADATA"
        indexes = {"by_city": Index("GSI1", pk="{version}#CITY#{city}", sk="STORE#{store_id}")}


class StoreEmployee(Entity):
    store_id = fields.String()
    employee_id = fields.String()
    name = fields.String()
    started = fields.DateTime(null=True)

    class Meta:
        table = Retail
        entity_type = "STORE_EMPLOYEE"
        pk = "{version}#STORE#{store_id}"
        sk = "EMP#{employee_id}"


class OrderQuerySet(QuerySet["Order"]):
    def of_customer(self, customer_id: str) -> OrderQuerySet:
        """Orders of a customer, newest first by sort key."""
        return self.filter(customer_id=customer_id)  # type: ignore[return-value]


class Order(Entity):
    customer_id = fields.String()
    order_id = fields.ULID(auto=True)
    placed_at = fields.DateTime(auto_now_add=True)
    total = fields.Decimal(default=0)
    status = fields.String(default="NEW")
    tags = fields.Set(str)
    lines = fields.List(null=True)
    extra = fields.Map(null=True)
    coupon = fields.String(null=True)
    expires_at = fields.TTL(null=True)
    version = fields.Version()

    objects = OrderQuerySet.as_manager()

    class Meta:
        table = Retail
        entity_type = "ORDER"
        key_version = "v2"
        pk = "{version}#CUST#{customer_id}"
        sk = "ORDER#{order_id}"
        indexes = {
            # sparse: only orders with a coupon are in GSI1
            "by_coupon": Index("GSI1", pk="{version}#COUPON#{coupon}", sk="{placed_at}"),
            "by_placed": Index("LSI1"),
        }


class Customer(Entity):
    customer_id = fields.String()
    email = fields.String()

    class Meta:
        table = Retail
        entity_type = "CUSTOMER"
        key_version = "v2"
        pk = "{version}#CUST#{customer_id}"
        sk = "#A"  # the "A record": sorts before ORDER#..., so newest orders come first in reverse


class Reading(Entity):
    sensor = fields.String()
    year = fields.Integer()
    seq = fields.Integer()
    value = fields.Number(default=0)

    class Meta:
        table = Retail
        entity_type = "READING"
        pk = "{version}#SENSOR#{sensor}"
        sk = "Y#{year:04d}#{seq:06d}"


class Person(Entity):
    person_id = fields.String()
    name = fields.String()

    class Meta:
        table = Retail
        entity_type = "PERSON"
        pk = "{version}#PERSON#{person_id}"
        sk = "METADATA"


class Employment(Entity):
    store_id = fields.String()
    person_id = fields.String()
    person = fields.Reference(Person)
    role = fields.String(default="clerk")

    class Meta:
        table = Retail
        entity_type = "EMPLOYMENT"
        pk = "{version}#STORE#{store_id}"
        sk = "EMPLOYMENT#{person_id}"


class Counter(Entity):
    name = fields.String()
    value = fields.Integer(default=0)
    note = fields.String(null=True)
    version = fields.Version()

    class Meta:
        table = Retail
        entity_type = "COUNTER"
        pk = "{version}#COUNTER#{name}"
        sk = "METADATA"


class Tally(Entity):
    """Unversioned: nothing but the revision token (or a transaction's ClientRequestToken) stops a
    retried increment."""

    name = fields.String()
    n = fields.Integer(default=0)
    note = fields.String(null=True)
    log = fields.List(null=True)

    class Meta:
        table = Retail
        entity_type = "TALLY"
        pk = "{version}#TALLY#{name}"
        sk = "METADATA"


class Stock(Entity):
    sku = fields.String()
    name = fields.String(null=True)
    warehouse = fields.String(null=True)

    class Meta:
        table = Retail
        entity_type = "STOCK"
        pk = "{version}#STOCK#{sku}"
        sk = "METADATA"


class Measure(Entity):
    """One field of every value kind (exact round trips and refused values, issue 9 section 3)."""

    sensor = fields.String()
    label = fields.String(null=True)
    amount = fields.Number(null=True)
    exact = fields.Decimal(null=True)
    qty = fields.Integer(null=True)
    at = fields.DateTime(null=True)
    nums = fields.Set(int)
    words = fields.Set(str)
    entries = fields.List(null=True)
    doc = fields.Map(null=True)

    class Meta:
        table = Retail
        entity_type = "MEASURE"
        pk = "{version}#MEASURE#{sensor}"
        sk = "METADATA"
        indexes = {"by_label": Index("GSI1", pk="{version}#LABEL#{label}", sk="MEASURE#{sensor}")}


class Member(Entity):
    """Unique constraints: an email unique across members, a handle unique per tenant (None: unconstrained)."""

    member_id = fields.String()
    tenant_id = fields.String()
    email = fields.String(unique=True)
    handle = fields.String(null=True)
    note = fields.String(null=True)
    visits = fields.Integer(default=0)

    class Meta:
        table = Retail
        entity_type = "MEMBER"
        pk = "{version}#MEMBER#{member_id}"
        sk = "METADATA"
        constraints = [UniqueConstraint(fields=["tenant_id", "handle"], name="unique_handle_per_tenant")]


class Account(Entity):
    """A versioned entity with a unique field."""

    account_id = fields.String()
    email = fields.String(unique=True)
    version = fields.Version()

    class Meta:
        table = Retail
        entity_type = "ACCOUNT"
        pk = "{version}#ACCOUNT#{account_id}"
        sk = "METADATA"
class Voucher(Entity):
    """A unique Decimal: 1.5 and 1.50 are one stored value."""

    voucher_id = fields.String()
    amount = fields.Decimal(unique=True)

    class Meta:
        table = Retail
        entity_type = "VOUCHER"
        pk = "{version}#VOUCHER#{voucher_id}"
        sk = "METADATA"


class Feed(Table):
    """A table with a stream (docs/streams.md; tests/integration/test_streams.py)."""

    class Meta:
        table_name = "feed"
        gsi_count = 1
        ttl_attribute = "expires_at"
        stream = "NEW_AND_OLD_IMAGES"


class Post(Entity):
    post_id = fields.String()
    author = fields.String()
    title = fields.String()
    likes = fields.Integer(default=0)
    expires_at = fields.TTL(null=True)
    version = fields.Version()

    class Meta:
        table = Feed
        entity_type = "POST"
        pk = "{version}#POST#{post_id}"
        sk = "METADATA"
        indexes = {"by_author": Index("GSI1", pk="{version}#AUTHOR#{author}", sk="POST#{post_id}")}


class Like(Entity):
    post_id = fields.String()
    user_id = fields.String()

    class Meta:
        table = Feed
        entity_type = "LIKE"
        pk = "{version}#POST#{post_id}"
        sk = "LIKE#{user_id}"


# -- write sharding (tests/integration/test_sharded_indexes.py, tests/reliability/test_sharded_differential.py)
class Telemetry(Table):
    class Meta:
        table_name = "telemetry"
        gsi_count = 1


class SensorReading(Entity):
    """A sensor reading; every reading of a day is one hot GSI1 partition, spread over 4 buckets."""

    sensor_id = fields.String()
    reading_id = fields.String()
    day = fields.String()
    at = fields.Integer()
    note = fields.String(null=True)

    class Meta:
        table = Telemetry
        entity_type = "SENSOR_READING"
        pk = "{version}#SENSOR#{sensor_id}"
        sk = "R#{reading_id}"
        indexes = {"by_day": Index("GSI1", pk="{version}#DAY#{day}", sk="{at}", shards=4)}


class SensorAlarm(Entity):
    """Another entity type in the same GSI1 partitions (its keys render like a reading's)."""

    alarm_id = fields.String()
    day = fields.String()
    at = fields.Integer()

    class Meta:
        table = Telemetry
        entity_type = "SENSOR_ALARM"
        pk = "{version}#ALARM#{alarm_id}"
        sk = "A"
        indexes = {"by_day": Index("GSI1", pk="{version}#DAY#{day}", sk="{at}", shards=4)}


class Depot(Entity):
    """Document paths (issue 26 §3): counts per warehouse in a map, lines in a list, and a map an
    index key is built from."""

    depot_id = fields.String()
    stock_by_warehouse = fields.Map(null=True)
    lines = fields.List(null=True)
    label = fields.Map(null=True)

    class Meta:
        table = Retail
        entity_type = "DEPOT"
        pk = "{version}#DEPOT#{depot_id}"
        sk = "METADATA"
        indexes = {"by_label": Index("GSI1", pk="{version}#DEPOTLABEL#{label}", sk="S#{depot_id}")}
