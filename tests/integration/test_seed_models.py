"""Every access pattern of every published seed model is answered by exactly one request."""

from __future__ import annotations

import importlib

import pytest

EXPECTED = {
    "kayak": (8, {"Query"}),
    "orders": (4, {"GetItem", "Query"}),
    "monithor": (7, {"GetItem", "Query"}),
    "library": (9, {"GetItem", "Query", "PutItem", "TransactWriteItems"}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_access_pattern_is_one_request(name: str) -> None:
    loader = importlib.import_module(f"demo_project.{name}.load")
    demo = importlib.import_module(f"demo_project.{name}.demo")
    from demo_project.runner import run_pattern

    ids = loader.load()
    patterns = demo.patterns(ids)
    count, operations = EXPECTED[name]
    assert len(patterns) == count
    seen = set()
    for i, pattern in enumerate(patterns, start=1):
        result, capture = run_pattern(i, pattern)
        assert capture.count == 1, (pattern.title, capture.operations)
        seen |= set(capture.operations)
        if isinstance(result, list):
            assert result, f"{pattern.title}: no results"
    assert seen == operations


def test_catalog_patterns_are_one_request_each() -> None:
    from demo_project.catalog import demo

    assert demo.main(["load-v1"]) == 0  # writes under v1 keys...
    from demo_project.catalog.models import Brand, Product

    assert Brand.objects.count() == 0  # ...which the v2 models do not see until migrated
    from demo_project.catalog.load import load

    load(products=60)
    assert demo.main(["patterns"]) == 0
    assert Product.objects.scan().count() == 300 + 60  # a Scan sees both versions: same entity type


def test_kayak_materialized_graph_edges_are_flipped_pairs() -> None:
    from demo_project.kayak.load import load
    from demo_project.kayak.models import EmploymentRelationship

    ids = load()
    edges = list(EmploymentRelationship.objects.stores_of(ids["employee_id"]))
    assert len(edges) >= 2  # an employee who moved between stores
    for edge in edges:
        back = list(EmploymentRelationship.objects.ever_at_store(edge.store_id))
        assert ids["employee_id"] in {b.person_id for b in back}


def test_monithor_logs_carry_a_ttl_and_the_table_has_ttl_on() -> None:
    from demo_project.monithor.load import load
    from demo_project.monithor.models import Log, Monithor
    from dynorm import backend

    ids = load()
    log = Log.objects.of_monitor_between(ids["monitor_id"], ids["now"].replace(hour=0), ids["now"]).first()
    assert log is not None and log.expires_at > log.created_at
    ttl = backend.call("DescribeTimeToLive", {"TableName": Monithor.table_name()})["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] in ("ENABLED", "ENABLING") and ttl["AttributeName"] == "expires_at"
