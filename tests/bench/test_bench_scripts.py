"""The benchmarks run (tiny counts, never their figures): ``make bench``'s comparison table and
every other ``bench/`` script, against the session's DynamoDB Local."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.dynamodb_local_only("the benchmarks run on DynamoDB Local")

ROOT = Path(__file__).resolve().parents[2]
ROWS = ["get", "put", "update one attribute", "query-100", "query-1,000", "batch write 1,000", "batch get 100",
        "cold start (wall)", "cold start (CPU)", "memory per decoded item"]


def run(script: str, args: list[str], endpoint: str, env: dict[str, str] | None = None,
        timeout: int = 300) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "DYNORM_TEST_ENDPOINT": endpoint, **(env or {})}
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def installed(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


def test_the_comparison_prints_one_table_and_writes_it(dynamodb_local: str, tmp_path: Path) -> None:
    done = run("bench_compare.py", ["--rounds", "1", "--scale", "0.01", "--warmup", "0", "--cold-runs", "1",
                                    "--memory-repeats", "1", "--results", str(tmp_path)], dynamodb_local)
    header = next(line for line in done.stdout.splitlines() if line.startswith("| operation |"))
    columns = [c.strip() for c in header.strip("|").split("|")][1:]
    assert columns[:2] == ["boto3", "PynamoDB"] and columns[-1].startswith("dynorm")
    # pydynox comes with the bench extra, not the test extra: a column, or a line saying how to get one
    assert ("pydynox" in columns) == installed("pydynox")
    assert ("pydynox: skipped: pip install dynorm[bench]" in done.stdout) != installed("pydynox")
    printed = [line.split("|")[1].strip() for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    assert printed == ROWS
    data = json.loads((tmp_path / "compare.json").read_text())
    assert data["machine"]["versions"]["pynamodb"] and data["machine"]["cores"]
    assert set(data["results"]) == {"get", "put", "update", "query100", "query1000", "batch_write", "batch_get",
                                    "cold_start", "cold_start_cpu", "memory"}
    assert (tmp_path / "compare.md").read_text().startswith(header)
    # each library sent the same kind and number of requests for each operation (read on the wire)
    kinds = {op: {lib: s.split(":")[0] for lib, s in by_lib.items()} for op, by_lib in data["requests"].items()}
    expected = {"get": "GetItem ×1", "put": "PutItem ×1", "update": "UpdateItem ×1", "query100": "Query ×1",
                "query1000": "Query ×1", "batch_write": "BatchWriteItem ×40", "batch_get": "BatchGetItem ×1"}
    for op, by_lib in kinds.items():
        assert set(by_lib) == set(columns), op
        assert set(by_lib.values()) == {expected[op]}, (op, by_lib)


@pytest.mark.slow(reason="a second run of the comparison (30-60 s), for a machine where pydynox is installed")
def test_a_library_not_installed_is_skipped_with_a_line_not_a_crash(dynamodb_local: str, tmp_path: Path) -> None:
    hide = tmp_path / "hide"
    (hide / "pydynox").mkdir(parents=True)
    (hide / "pydynox" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    done = run("bench_compare.py", ["--rounds", "1", "--scale", "0.01", "--warmup", "0", "--cold-runs", "0",
                                    "--memory-repeats", "1", "--results", str(tmp_path)], dynamodb_local,
               env={"PYTHONPATH": str(hide)})
    assert "pydynox: skipped: pip install dynorm[bench]" in done.stdout
    header = next(line for line in done.stdout.splitlines() if line.startswith("| operation |"))
    assert "pydynox" not in header and "PynamoDB" in header


@pytest.mark.slow(reason="runs each of the other nine bench scripts with tiny counts (1-3 min in all)")
@pytest.mark.parametrize(("script", "args"), [
    ("bench_ops.py", ["--ops", "3", "--query-ops", "1", "--rounds", "1"]),
    ("bench_decode.py", ["--items", "20", "--rounds", "1"]),
    ("bench_import.py", ["--runs", "1"]),
    ("bench_increment.py", ["--ops", "3", "--rounds", "1"]),
    ("bench_bulk.py", ["--items", "30", "--rounds", "1"]),
    ("bench_async.py", ["--ops", "10", "--in-flight", "2", "--rounds", "1"]),
    ("bench_migrate.py", ["--items", "50", "--big", "0", "--pairs", "1"]),
    ("bench_migrate_dask.py", ["--items", "50"]),
    ("bench_requests.py", []),
    ("bench_multikey.py", []),
])
def test_bench_script_runs(dynamodb_local: str, script: str, args: list[str]) -> None:
    run(script, args, dynamodb_local, timeout=600)
