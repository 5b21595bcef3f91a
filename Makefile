# applier: one command for each daily task. `make help` lists them.
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= out
VENV35 ?= .venv35
# The lowest pyspark pyproject.toml declares (its first "pyspark>=3.5.N,<5"): test-spark35 runs on it.
SPARK_LOWEST := $(shell sed -n 's/^ *"pyspark>=\([0-9.]*\),.*/\1/p' pyproject.toml | head -1)

.DEFAULT_GOAL := help
.PHONY: help setup demo test test-unit test-tsql test-faults test-faults-large test-e2e test-spark35 lint bench bench-capture publisher-matrix clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

setup: ## install what is missing: apt packages, .venv with applier and test extras (idempotent)
	@bash ci/setup.sh

demo: setup ## run the main job: a multi-stream apply against an embedded PostgreSQL
	$(BIN)/applier run --report $(OUT)/demo-report.json --junit $(OUT)/demo-junit.xml --html $(OUT)/demo-report.html

test: setup ## run the tests (unit + integration on embedded PostgreSQL and local Spark)
	$(BIN)/pytest -m "not faults and not faults_large and not e2e and not tsql"

test-tsql: setup ## the T-SQL path on a real T-SQL engine: the embedded Babelfish ($$APPLIER_BABELFISH or ../shared/babelfish)
	$(BIN)/pytest -m tsql --durations=10

test-faults: setup ## kill -9 at seeded moments and resume (runs, snapshot ranges, barrier events), connection kills, signals (~11 min)
	$(BIN)/pytest -m faults

test-faults-large: setup ## kill -9 at size: runs of 50,000 commands killed at 10 seeded moments and resumed, a 1,000,000-row snapshot load killed at 80 % (prints the figures; ~6 min)
	$(BIN)/pytest -m faults_large --durations=5

test-e2e: setup ## longer end-to-end runs: plugin per target, hazards' blame, seeded schedules, bench, fuzz, matrix, every capture example, the publisher matrix (~17 min)
	$(BIN)/pytest -m e2e

test-spark35: setup ## the smoke tests (-m smoke) on the lowest pyspark pyproject.toml declares (3.5.x), in .venv35
	@test -x $(VENV35)/bin/python || python3 -m venv $(VENV35)
	@echo '*' > $(VENV35)/.gitignore
	@want="$$(sha256sum pyproject.toml | cut -d' ' -f1) $(SPARK_LOWEST)"; \
	if [ "$$(cat $(VENV35)/.applier-installed 2>/dev/null)" != "$$want" ]; then \
		echo "test-spark35: installing applier with pyspark==$(SPARK_LOWEST) into $(VENV35)"; \
		$(VENV35)/bin/python -m pip install -q -e ".[test]" "pyspark==$(SPARK_LOWEST)" && \
		echo "$$want" > $(VENV35)/.applier-installed; \
	fi
	@mkdir -p $(VENV35)/etc/odbc && cp $(VENV)/etc/odbc/odbcinst.ini $(VENV35)/etc/odbc/
	@$(VENV35)/bin/python -c "import pyspark, sys; v = pyspark.__version__; print('pyspark', v); sys.exit(v != '$(SPARK_LOWEST)')"
	$(VENV35)/bin/pytest -m "smoke and not tsql" --durations=8

test-unit: setup ## run the unit tests only (no database, no Spark)
	$(BIN)/pytest tests/unit

lint: setup ## ruff, mypy and the import layers (import-linter)
	$(BIN)/ruff check applier tests
	$(BIN)/ruff format --check applier tests
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: setup ## benchmark: ceiling, applier and PostgreSQL's logical apply at N=1,2,4,8 (BENCH_ARGS="--commands 200000")
	@$(BIN)/python -c "import matplotlib" 2>/dev/null || $(BIN)/python -m pip install -q -e ".[bench]"
	$(BIN)/applier bench --out $(OUT)/bench $(BENCH_ARGS)

bench-capture: setup ## Debezium reader vs canonical reader, 1,000,000 events (EVENTS=...): figures in out/bench-capture/figures.json
	$(BIN)/python ci/bench_capture.py $(or $(EVENTS),1000000) $(OUT)/bench-capture

publisher-matrix: setup ## concurrent traffic on an embedded publisher, both wal2json formats, every strategy/model at N=1,4,8, compared with the publisher (HARNESS_ARGS="--transactions 2000")
	$(BIN)/python -m tests.support.harness --out $(OUT)/publisher-matrix $(HARNESS_ARGS)

clean: ## remove the virtual environment and outputs
	rm -rf $(VENV) $(VENV35) $(OUT) .pytest_cache .mypy_cache .ruff_cache
