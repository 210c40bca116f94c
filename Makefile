# EventScript — set-up, run and test. Every target creates .venv and installs the project first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SHARED ?= ../shared

.PHONY: setup run test lint typecheck unit conformance bench clean fuzz ops kafka

$(STAMP): pyproject.toml constraints.txt scripts/install-system-deps scripts/install-helm
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@scripts/install-system-deps
	@scripts/install-helm $(VENV)
	@touch $@

setup: $(STAMP) kafka

# Apache Kafka for the Kafka tests (scripts/get-kafka: Maven Central into ~/.cache/eventscript,
# once). Without Java or Maven the tests fall back to the embedded broker and skip what needs a
# real one, saying so; `make run` never needs Java.
kafka:
	@if command -v java >/dev/null && command -v mvn >/dev/null; then scripts/get-kafka >/dev/null; \
	else echo "make: no java or mvn on PATH: the Kafka tests will run on the embedded Tansu broker"; fi

# Starts the embedded Kafka-compatible broker, runs the shipped sensors topology (two chained
# programs), publishes a sample trace, prints what the programs wrote, and stops. It needs the
# package and the broker only: no system packages (Graphviz, promtool, helm, Java), which setup installs.
RUN_STAMP := $(VENV)/.installed-run

$(RUN_STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[broker]'
	@touch $@

run: $(RUN_STAMP)
	$(BIN)/eventscript check topologies/sensors/overheat.es topologies/sensors/site_alarm.es
	$(BIN)/eventscript dev topologies/sensors/topology.yaml --trace topologies/sensors/sample.trace --until-idle 2 --show

# Lint, format and types: ruff's rules, ruff's formatting (line length in pyproject.toml) and mypy on
# the package at the strictness set in pyproject.toml's [tool.mypy]. The tools are pinned there, so a
# fresh clone checks with the versions the code was checked with.
lint: $(STAMP)
	$(BIN)/ruff check service tests bench
	$(BIN)/ruff format --check service tests bench
	$(BIN)/mypy service/eventscript

typecheck: $(STAMP)
	$(BIN)/mypy service/eventscript

# The tests run in PYTEST_WORKERS processes (pytest-xdist; --dist loadgroup as tests/parallel_groups.py
# defines it: every test on the session's Kafka broker in one process, one after the other, handed
# out first; every test with its own brokers (fault harness, three-broker failover, dev) in one, one
# after the other, handed out first to the other process; every Spark test in one; the other tests a
# whole file at a time, to whichever process is free). Two by default: the Kafka tests mostly wait, and the CPU-bound tests fill that time.
# PYTEST_WORKERS= (empty) runs everything in one process. See README.md, "Running the tests in parallel".
PYTEST_WORKERS ?= 2
unit: $(STAMP)
	$(BIN)/pytest -q $(if $(PYTEST_WORKERS),-n $(PYTEST_WORKERS) --dist loadgroup)

# The conformance suite fails the build on any failing case.
conformance: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(SHARED)/conformance/run

test: lint kafka unit conformance

# The fault harness's long run (tests/chaos: three Apache Kafka brokers, workers killed, frozen, joining
# and leaving, a broker killed; both guarantees, both clocks); make test runs its short round. Sizes:
# CHAOS_ROUNDS (5), CHAOS_RATE (150 records/s), CHAOS_SEED, CHAOS_KEYS, CHAOS_PROGRESS (new outputs
# between two faults), CHAOS_WALL_QUIET (s); CHAOS_ARGS for pytest (e.g. -k exactly_once-record).
# Also every shipped pipeline's two workers killed -9 again and again (tests/kafka/test_pipeline_kills.py;
# PIPELINE_KILLS_SEED, one or several seeds).
.PHONY: chaos
chaos: $(STAMP) kafka
	CHAOS_LONG=1 $(BIN)/pytest -q -s -p no:cacheprovider tests/chaos/test_chaos.py tests/kafka/test_pipeline_kills.py $(CHAOS_ARGS)

# The per-topology runs on a broker that make test takes on a subset of the shipped topologies
# (tests/long_runs.py: the embedded broker's, and the Apache Kafka runs with a worker killed), on
# every one of them.
.PHONY: test-all-topologies
test-all-topologies: $(STAMP) kafka
	ALL_TOPOLOGIES=1 $(BIN)/pytest -q -p no:cacheprovider tests/test_topologies.py tests/kafka/test_event_time_kafka.py

# The operations checks alone (make unit runs them too): promtool rule tests, the chart with the real
# helm (lint --strict, renders validated by kubernetes-validate), hadolint, the metrics a live worker
# exports (embedded broker).
ops: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q -p no:cacheprovider tests/ops tests/test_deploy_files.py

# Long runs of the random-program and mutation fuzzers (make test runs a few examples of each).
fuzz: $(STAMP)
	REFERENCE_EXAMPLES=3000 MUTATION_EXAMPLES=3000 $(BIN)/pytest -q -p no:cacheprovider \
		tests/reference tests/language/test_compiler_mutation_fuzz.py

bench: $(STAMP)
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/check.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
