# The two commands of the README. Both create .venv and install the project on first use.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test lint bench client

$(PY): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	touch $(PY)

run: $(PY)  ## the product: moto + console on :8000 + consumer, sample templates loaded
	$(PY) manage.py devstack

test: $(PY)  ## lint, then every test (browser tests need Debian's chromium)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest

bench: $(PY)  ## benchmarks: figures, not tests
	$(PY) bench/consumer_throughput.py
	$(PY) bench/journal_search.py

client: $(PY)  ## regenerate emailops/client/messages.py from emailops/data/template-variables.json
	$(PY) -m emailops.client.generate
