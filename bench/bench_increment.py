"""Cost of an increment that is applied once: dynorm's transactional path vs a plain UpdateItem.

An unversioned ``update(n=F("n") + 1)`` (or ``append()``) is sent as a one-action
TransactWriteItems with a ClientRequestToken, then a consistent GetItem returns the item as
written (docs/writing.md, "What every write guarantees"). This prints, per operation, the
client CPU (process CPU microseconds, median of rounds), the requests sent and the capacity
DynamoDB reports, for:

* ``dynorm F+1``: the transactional path (TransactWriteItems + GetItem);
* ``dynorm SET``: an idempotent unversioned update (one UpdateItem + revision token);
* ``pynamodb F+1``: hand-written PynamoDB ``update(actions=[n.add(1)])`` (one UpdateItem, not
  safe against a lost response);
* ``boto3 F+1``: a hand-written UpdateItem ``SET n = n + :one`` with ``ReturnValues=ALL_NEW``.

Results go to ``bench/results/bench_increment.json``.

    python bench/bench_increment.py [--ops 500] [--rounds 5]

Uses ``DYNORM_TEST_ENDPOINT`` when set, else starts DynamoDB Local itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pynamodb.attributes import NumberAttribute, UnicodeAttribute  # noqa: E402
from pynamodb.models import Model  # noqa: E402

import dynorm  # noqa: E402
from bench.common import boto3_client, connect, cpu_per_op, finish, fresh_table, pynamodb_meta  # noqa: E402
from dynorm import Entity, F, Table, fields  # noqa: E402


class BenchCounters(Table):
    class Meta:
        table_name = "counters"


class Tally(Entity):
    name = fields.String()
    n = fields.Integer(default=0)
    note = fields.String(null=True)

    class Meta:
        table = BenchCounters
        entity_type = "TALLY"
        pk = "TALLY#{name}"
        sk = "METADATA"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ops", type=int, default=500, help="increments per round")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    endpoint, server = connect("bench-")
    table = fresh_table(BenchCounters)

    class PTally(Model):
        Meta = pynamodb_meta(table, endpoint)

        pk = UnicodeAttribute(hash_key=True, attr_name="PK")
        sk = UnicodeAttribute(range_key=True, attr_name="SK")
        n = NumberAttribute()

    client = boto3_client(endpoint)
    for name in ("d", "s", "p", "b"):
        Tally.objects.create(name=name)
    p_obj = PTally.get("TALLY#p", "METADATA")
    b_key = {"PK": {"S": "TALLY#b"}, "SK": {"S": "METADATA"}}

    impls: dict[str, Callable[[int], Any]] = {
        "dynorm F+1": lambda i: Tally.objects.filter(name="d").update(n=F("n") + 1),
        "dynorm SET": lambda i: Tally.objects.filter(name="s").update(note=str(i)),
        "pynamodb F+1": lambda i: p_obj.update(actions=[PTally.n.add(1)]),
        "boto3 F+1": lambda i: client.update_item(
            TableName=table, Key=b_key, UpdateExpression="SET n = n + :one", ReturnValues="ALL_NEW",
            ExpressionAttributeValues={":one": {"N": "1"}}),
    }
    results: dict[str, Any] = {"ops": args.ops, "rounds": args.rounds,
                               "unit": "client CPU microseconds per operation (median of rounds)"}
    # requests and capacity of one operation each (DynamoDB Local reports capacity like DynamoDB)
    for label, fn in (("dynorm F+1", impls["dynorm F+1"]), ("dynorm SET", impls["dynorm SET"])):
        with dynorm.capture() as c:
            fn(0)
        results[label] = {"requests": c.operations, "wcu": c.stats.write_capacity, "rcu": c.stats.read_capacity}
    raw = client.update_item(TableName=table, Key=b_key, UpdateExpression="SET n = n + :one",
                             ReturnValues="ALL_NEW", ReturnConsumedCapacity="TOTAL",
                             ExpressionAttributeValues={":one": {"N": "1"}})
    results["boto3 F+1"] = {"requests": ["UpdateItem"], "wcu": raw["ConsumedCapacity"]["CapacityUnits"], "rcu": 0.0}
    for fn in impls.values():  # warm up
        for i in range(20):
            fn(i)
    cpu = cpu_per_op(impls, args.ops, args.rounds)
    print(f"client CPU µs/op, median of {args.rounds} rounds of {args.ops} increments")
    print(f"{'op':<14}{'µs':>8}{'vs boto3':>10}{'vs pynamodb':>13}  requests / capacity")
    for label, us in cpu.items():
        row = results.setdefault(label, {})
        row["cpu_us"] = us
        row["vs_boto3"] = us / cpu["boto3 F+1"]
        row["vs_pynamodb"] = us / cpu["pynamodb F+1"]
        extra = (f"  {'+'.join(row['requests'])}: {row['wcu']:g} WCU, {row['rcu']:g} RCU"
                 if "requests" in row else "")
        print(f"{label:<14}{us:>8.0f}{row['vs_boto3']:>10.2f}{row['vs_pynamodb']:>13.2f}{extra}")
    assert Tally.objects.get(name="d").n == 20 + 1 + args.ops * args.rounds  # applied once each
    finish("bench_increment", results, BenchCounters, server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
