"""A range query on a numeric sort attribute: multi-attribute GSI vs the zero-padded template GSI.

Two tables hold the same 2,000 readings (tenant, sensor, year, a 60-byte note): one answers
"a sensor's readings from year A to B" through a multi-attribute GSI (``tenant``, ``sensor``
HASH; ``year`` RANGE as a number), the other through a template GSI
(``GSI1PK = "R#{tenant}#{sensor}"``, ``GSI1SK = "{year:06d}"``, zero-padded so that text order is
number order), with the same hand-written boto3 request next to each. Reported: requests, read
capacity (RCU) and item bytes (DynamoDB's count: names plus values) of both layouts.
Target: equal requests and items; the multi-attribute items smaller (no key text).

    python bench/bench_multikey.py

Results: ``bench/results/bench_multikey.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dynorm  # noqa: E402
from bench.common import connect  # noqa: E402
from dynorm import Entity, Index, Table, backend, fields  # noqa: E402
from dynorm._codec import item_size  # noqa: E402

N = 2000
LOW, HIGH = 400, 1399  # a 1,000-year window: half of the readings


class MultiTable(Table):
    class Meta:
        table_name = "bench_multi"
        gsis = {"BySensor": {"pk": {"tenant": "S", "sensor": "S"}, "sk": {"year": "N"}}}


class TemplateTable(Table):
    class Meta:
        table_name = "bench_template"
        gsi_count = 1


class MultiReading(Entity):
    tenant = fields.String()
    sensor = fields.String()
    reading_id = fields.String()
    year = fields.Integer()
    note = fields.String()

    class Meta:
        table = MultiTable
        entity_type = "reading"
        pk = "R#{reading_id}"
        sk = "R"
        indexes = {"by_sensor": Index("BySensor", pk=("tenant", "sensor"), sk=("year",))}


class TemplateReading(Entity):
    tenant = fields.String()
    sensor = fields.String()
    reading_id = fields.String()
    year = fields.Integer()
    note = fields.String()

    class Meta:
        table = TemplateTable
        entity_type = "reading"
        pk = "R#{reading_id}"
        sk = "R"
        indexes = {"by_sensor": Index("GSI1", pk="R#{tenant}#{sensor}", sk="{year:06d}")}


class RolloutTable(Table):
    class Meta:
        table_name = "bench_rollout"
        gsis = {"BySensor": {"pk": {"tenant": "S", "sensor": "S"}, "sk": {"year": "N"}}}


class RolloutReading(Entity):
    """The multi-attribute layout in a key-version rollout: v2 app, items at v1 and copied to v2."""

    tenant = fields.String()
    sensor = fields.String()
    reading_id = fields.String()
    year = fields.Integer()
    note = fields.String()

    class Meta:
        table = RolloutTable
        entity_type = "reading"
        key_version = "v2"
        read_versions = ["v2", "v1"]
        pk = "{version}#R#{reading_id}"
        sk = "R"
        indexes = {"by_sensor": Index("BySensor", pk=("tenant", "sensor"), sk=("year",))}


def rollout_window(note: str) -> dict[str, Any]:
    """Requests and RCU of the window query while a copy-mode rekey is half done, vs. after it.

    Every reading is stored at v1; every fourth (half of sensor s0's) is copied to v2 as well. The
    multi-attribute index holds both copies: dynorm reads each once (the v2 copy, else the v1 one
    after a BatchGetItem per page finds no v2 copy).
    """
    RolloutReading.objects.bulk_create([RolloutReading(tenant="acme", sensor=f"s{i % 2}", reading_id=f"r{i:05d}",
                                                       year=i, note=note) for i in range(0, N, 4)])
    items = [RolloutReading(tenant="acme", sensor=f"s{i % 2}", reading_id=f"r{i:05d}", year=i, note=note)
             for i in range(N)]
    for chunk in range(0, N, 25):  # the v1 copies, as the v1 app wrote them
        requests = []
        for obj in items[chunk:chunk + 25]:
            item = {"PK": {"S": f"v1#R#{obj.reading_id}"}, "SK": {"S": "R"}, "entityType": {"S": "reading"},
                    "tenant": {"S": obj.tenant}, "sensor": {"S": obj.sensor}, "reading_id": {"S": obj.reading_id},
                    "year": {"N": str(obj.year)}, "note": {"S": note}}
            requests.append({"PutRequest": {"Item": item}})
        backend.call("BatchWriteItem", {"RequestItems": {RolloutTable.table_name(): requests}})
    qs = RolloutReading.objects.filter(tenant="acme", sensor="s0", year__between=(LOW, HIGH))
    with dynorm.capture() as c:
        got = list(qs)
    assert [r.year for r in got] == list(range(LOW + (LOW % 2), HIGH + 1, 2)), "each reading once, in order"
    return {"requests": c.count, "operations": sorted(set(c.operations)), "rcu": c.stats.read_capacity,
            "items": len(got), "index_items": 2 * len(got) - sum(1 for r in got if r._state.fallback)}


def raw_query(params: dict[str, Any]) -> tuple[int, float, int]:
    client = backend.client()
    requests, rcu, items = 0, 0.0, 0
    params = dict(params)
    while True:
        resp = client.query(**params)
        requests += 1
        rcu += resp.get("ConsumedCapacity", {}).get("CapacityUnits", 0.0)
        items += len(resp["Items"])
        if "LastEvaluatedKey" not in resp:
            return requests, rcu, items
        params["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def stored_bytes(table: type[Table]) -> tuple[int, int]:
    """(total item bytes, items) of a table, by a Scan."""
    total = n = 0
    params: dict[str, Any] = {"TableName": table.table_name()}
    while True:
        resp = backend.call("Scan", params)
        total += sum(item_size(i) for i in resp["Items"])
        n += len(resp["Items"])
        if "LastEvaluatedKey" not in resp:
            return total, n
        params["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def main() -> int:
    _, server = connect("benchmk-")
    tables = (MultiTable, TemplateTable, RolloutTable)
    for table in tables:
        if table.exists():
            table.delete_table()
        table.create_table()
    note = "x" * 60
    for cls in (MultiReading, TemplateReading):
        cls.objects.bulk_create([cls(tenant="acme", sensor=f"s{i % 2}", reading_id=f"r{i:05d}", year=i, note=note)
                                 for i in range(N)])
    by_hand = {  # the same reads written by hand with boto3
        "multi-attribute": {"TableName": MultiTable.table_name(), "IndexName": "BySensor",
                            "KeyConditionExpression": "tenant = :t AND sensor = :s AND #y BETWEEN :lo AND :hi",
                            "ExpressionAttributeNames": {"#y": "year"},
                            "ExpressionAttributeValues": {":t": {"S": "acme"}, ":s": {"S": "s0"},
                                                          ":lo": {"N": str(LOW)}, ":hi": {"N": str(HIGH)}}},
        "template": {"TableName": TemplateTable.table_name(), "IndexName": "GSI1",
                     "KeyConditionExpression": "GSI1PK = :p AND GSI1SK BETWEEN :lo AND :hi",
                     "ExpressionAttributeValues": {":p": {"S": "R#acme#s0"}, ":lo": {"S": f"{LOW:06d}"},
                                                   ":hi": {"S": f"{HIGH:06d}"}}},
    }
    rows: dict[str, Any] = {}
    for label, cls in (("multi-attribute", MultiReading), ("template", TemplateReading)):
        qs = cls.objects.filter(tenant="acme", sensor="s0", year__between=(LOW, HIGH))
        with dynorm.capture() as c:
            got = list(qs)
        raw = raw_query({**by_hand[label], "ReturnConsumedCapacity": "TOTAL"})
        size, count = stored_bytes(cls._meta.table)
        rows[label] = {"requests": c.count, "rcu": c.stats.read_capacity, "items": len(got),
                       "boto3": {"requests": raw[0], "rcu": raw[1], "items": raw[2]},
                       "bytes_per_item": round(size / count, 1), "key_condition": qs.explain().readable(
                           qs.explain().key_condition)}
    m, t = rows["multi-attribute"], rows["template"]
    print(f"{'layout':<18}{'requests':>9}{'RCU':>9}{'items':>7}{'bytes/item':>12}  key condition")
    for label, r in rows.items():
        print(f"{label:<18}{r['requests']:>9}{r['rcu']:>9g}{r['items']:>7}{r['bytes_per_item']:>12}  "
              f"{r['key_condition']}")
    equal = m["requests"] == t["requests"] and m["items"] == t["items"] and all(
        r["requests"] == r["boto3"]["requests"] and r["rcu"] == r["boto3"]["rcu"] for r in rows.values())
    print(f"equal requests and items (and dynorm == boto3 on each): {equal}")
    print(f"ratio multi/template: RCU {m['rcu'] / t['rcu']:.3f}, bytes per item "
          f"{m['bytes_per_item'] / t['bytes_per_item']:.3f}")
    rollout = rollout_window(note)
    print(f"rollout window (v2 app, all readings at v1, half of s0's also at v2): {rollout['requests']} requests "
          f"({', '.join(rollout['operations'])}), RCU {rollout['rcu']:g} for {rollout['items']} readings read once "
          f"out of {rollout['index_items']} index entries; ratio to the settled layout: requests "
          f"{rollout['requests'] / m['requests']:.2f}, RCU {rollout['rcu'] / m['rcu']:.2f}")
    out = Path(__file__).parent / "results" / "bench_multikey.json"
    out.write_text(json.dumps({"n": N, "window": [LOW, HIGH], "layouts": rows, "equal": equal,
                               "rollout_window": rollout}, indent=2))
    print(f"written {out}")
    for table in tables:
        table.delete_table()
    if server:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
