# EventScript — set-up, run and test. Every target creates .venv and installs the project first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SHARED ?= ../shared

.PHONY: setup run test lint unit conformance bench clean

$(STAMP): pyproject.toml scripts/install-system-deps
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@scripts/install-system-deps
	@touch $@

setup: $(STAMP)

# Runs a shipped program through the tester and shows its output.
run: $(STAMP)
	$(BIN)/eventscript check topologies/sensors/*.es
	$(BIN)/eventscript test --trace topologies/sensors/sample.trace topologies/sensors/overheat.es topologies/sensors/site_alarm.es

lint: $(STAMP)
	$(BIN)/ruff check service tests bench

unit: $(STAMP)
	$(BIN)/pytest -q

# The conformance suite fails the build on any failing case.
conformance: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(SHARED)/conformance/run

test: lint unit conformance

bench: $(STAMP)
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/check.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
