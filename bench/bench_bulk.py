"""bulk_create throughput (items/s) vs a hand-written PynamoDB batch_write() on the same server.

    python bench/bench_bulk.py [--items 5000] [--rounds 3]

Wall time per round (the server is local, so this measures client cost plus loopback round
trips), median of rounds. Results: ``bench/results/bench_bulk.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pynamodb.attributes import UnicodeAttribute  # noqa: E402
from pynamodb.models import Model  # noqa: E402

from bench.common import connect, finish, fresh_table, pynamodb_meta  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    endpoint, server = connect("benchbulk-")
    from tests.models import Person, Retail

    table = fresh_table(Retail)

    class PPerson(Model):
        Meta = pynamodb_meta(table, endpoint)

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
    finish("bench_bulk", {"items": args.items, "rounds": args.rounds, **results}, Retail, server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
