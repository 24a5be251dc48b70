# The two commands of the README. Both create .venv and install the project on first use.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test lint bench chaos client webhook-schema caniemail settings-docs

$(PY): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	touch $(PY)

run: $(PY)  ## the product: moto + console on :8000 + consumer, sample templates loaded
	$(PY) manage.py devstack

# One pytest process per CPU (pytest-xdist); a test file stays on one process, so its module-scoped
# stack starts once. Files go out in tests/conftest.py's order, the longest first (xdist would
# sort them by their number of tests). PYTEST_ARGS adds to it (PYTEST_ARGS="-n 0 -x" runs here).
PYTEST_ARGS ?=
test: $(PY)  ## lint, then every test (browser tests need Debian's chromium)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest -n auto --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# Sizes of the long benchmark and of the chaos run; override on the command line.
BENCH_RSS_MESSAGES ?= 20000
CHAOS_REQUESTS ?= 3000
CHAOS_SECONDS ?= 600

bench: $(PY)  ## benchmarks: figures side by side, not pass/fail (several minutes)
	$(PY) bench/consumer_concurrency.py
	$(PY) bench/hot_path_latency.py
	$(PY) bench/pipeline_cpu.py
	$(PY) bench/suppression_check.py
	$(PY) bench/consumer_rss_threads.py
	$(PY) bench/startup.py
	$(PY) bench/events_throughput.py
	$(PY) bench/consumer_throughput.py
	$(PY) bench/journal_search.py
	$(PY) bench/render_limits.py
	$(PY) bench/send_rate_cap.py
	$(PY) bench/webhook_outage.py
	$(PY) bench/consumer_rss.py --messages $(BENCH_RSS_MESSAGES)

chaos: $(PY)  ## the fault suite, long: consumers SIGKILLed and AWS faults for CHAOS_SECONDS
	FAULTS_REQUESTS=$(CHAOS_REQUESTS) FAULTS_CHAOS_SECONDS=$(CHAOS_SECONDS) \
	FAULTS_DRAIN_SECONDS=$${FAULTS_DRAIN_SECONDS:-600} \
	$(PY) -m pytest -m faults -s -p no:cacheprovider tests/faults

client: $(PY)  ## regenerate emailops/client/messages.py from emailops/data/template-variables.json
	$(PY) -m emailops.client.generate

webhook-schema: $(PY)  ## regenerate docs/webhooks.schema.json from emailops.core.webhooks.WebhookPayload
	$(PY) -m api.webhook_schema

CANIEMAIL ?= latest
caniemail:  ## refresh emailops/data/caniemail/ (caniemail's data, MIT) from the npm package caniemail@$(CANIEMAIL)
	set -e; tmp=$$(mktemp -d); (cd $$tmp && npm pack --silent caniemail@$(CANIEMAIL) >/dev/null && tar xzf caniemail-*.tgz); \
	cp $$tmp/package/data/caniemail.json $$tmp/package/LICENSE emailops/data/caniemail/; \
	version=$$(node -p "require('$$tmp/package/package.json').version"); \
	updated=$$(node -p "require('$$tmp/package/data/caniemail.json').last_update_date"); \
	printf '%s\n' "caniemail's data (https://www.caniemail.com, MIT: LICENSE beside this file), as the npm package" \
	  "caniemail $$version ships it (data/caniemail.json), last_update_date $$updated," \
	  "vendored $$(date -u +%F). Refresh: \`make caniemail\` (npm pack caniemail, then this file is rewritten)." \
	  > emailops/data/caniemail/SOURCE; rm -rf $$tmp; cat emailops/data/caniemail/SOURCE

settings-docs: $(PY)  ## rewrite .env.example and docs/configuration.md's tables from emailops/settings_catalog.py
	$(PY) -m emailops.settings_docs
