"""bulk_create throughput (items/s) vs a hand-written PynamoDB batch_write() on the same server.

    python bench/bench_bulk.py [--items 5000] [--rounds 3]

Wall time per round (the server is local, so this measures client cost plus loopback round
trips), median of rounds. Results: ``bench/results/bench_bulk.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pynamodb.attributes import UnicodeAttribute  # noqa: E402
from pynamodb.models import Model  # noqa: E402

from bench.common import connect  # noqa: E402
from dynorm.backend import LOCAL_CREDENTIALS  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    endpoint, server = connect("benchbulk-")
    from tests.models import Person, Retail

    if Retail.exists():
        Retail.delete_table()
    Retail.create_table()
    table = Retail.table_name()

    class PPerson(Model):
        class Meta:
            table_name = table
            host = endpoint
            region = "us-east-1"
            aws_access_key_id, aws_secret_access_key = LOCAL_CREDENTIALS

        pk = UnicodeAttribute(hash_key=True, attr_name="PK")
        sk = UnicodeAttribute(range_key=True, attr_name="SK")
        entity_type = UnicodeAttribute(attr_name="entityType")
        person_id = UnicodeAttribute()
        name = UnicodeAttribute()

    def run_dynorm(r: int) -> None:
        Person.objects.bulk_create([Person(person_id=f"d{r}-{i}", name=f"N{i}") for i in range(args.items)])

    def run_pynamodb(r: int) -> None:
        with PPerson.batch_write() as batch:
            for i in range(args.items):
                batch.save(PPerson(f"v1#PERSON#p{r}-{i}", "METADATA", entity_type="PERSON",
                                   person_id=f"p{r}-{i}", name=f"N{i}"))

    results = {}
    for name, fn in (("dynorm", run_dynorm), ("pynamodb", run_pynamodb)):
        rates = []
        for r in range(args.rounds):
            start = time.perf_counter()
            fn(r)
            rates.append(args.items / (time.perf_counter() - start))
        results[name] = statistics.median(rates)
    results["dynorm/pynamodb"] = results["dynorm"] / results["pynamodb"]
    print(f"bulk write of {args.items} items, median of {args.rounds} rounds (items/s):")
    print(f"  dynorm bulk_create      {results['dynorm']:8.0f}")
    print(f"  PynamoDB batch_write()  {results['pynamodb']:8.0f}")
    print(f"  ratio dynorm/PynamoDB   {results['dynorm/pynamodb']:8.2f}")
    out = Path(__file__).parent / "results" / "bench_bulk.json"
    out.write_text(json.dumps({"items": args.items, "rounds": args.rounds, **results}, indent=2))
    print(f"written {out}")
    Retail.delete_table()
    if server:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
