# Every target makes its own virtualenv, so a fresh clone needs nothing but python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The main job installs what it needs and nothing more (the package: no test, docs or export extras);
# the tests install the dev extra on top. Each stamp is remade when pyproject.toml changes.
EVAL_STAMP := $(VENV)/.eval-stamp
STAMP := $(VENV)/.installed-stamp
DOCS_STAMP := $(VENV)/.docs-stamp

.PHONY: eval test lint docs cassettes clean cli-versions

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# pip is quiet while it installs: say once what the wait is for.
$(EVAL_STAMP): pyproject.toml | $(BIN)/python
	@echo "setting up $(VENV): installing loop-harness (a minute or so, the first time only)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $(EVAL_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	@echo "setting up $(VENV): installing loop-harness and its dev extra (several minutes, the first time only)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP) $(EVAL_STAMP) $(DOCS_STAMP)

# The docs need the package and the docs extra only (mkdocs and its plugins), not the test tools.
$(DOCS_STAMP): pyproject.toml | $(BIN)/python
	@echo "setting up $(VENV): installing loop-harness and its docs extra (the first time only)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[docs]'
	touch $(DOCS_STAMP) $(EVAL_STAMP)

## The main job: the eval suite over the bundled cassettes, with its report.
eval: $(EVAL_STAMP)
	$(BIN)/harness eval --json reports/results.json --markdown reports/results.md \
		--junit reports/junit.xml --html reports/report.html

## Re-record the bundled cassettes against the local simulator (no network).
cassettes: $(STAMP)
	$(BIN)/harness record --demo

## The official TypeScript SDK for the any-client tests (skipped, and said so, where npm is missing).
TS_STAMP := tests/ts/node_modules/.installed-stamp
$(TS_STAMP): tests/ts/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix tests/ts --no-audit --no-fund --silent && touch $(TS_STAMP); \
	else echo "npm not found: the TypeScript client tests will be skipped"; fi

## The bundled Claude Code CLI of older claude-agent-sdk releases, one folder each (the binary only: the
## installed SDK drives it), for tests/test_agent_sdk_cli_versions.py; the newest comes with the dev extra.
## CI runs it; a clone without it skips those releases' tests, saying so.
CLI_VERSIONS := 0.2.184
CLI_VERSIONS_DIR := $(VENV)/cli-versions
cli-versions: $(CLI_VERSIONS:%=$(CLI_VERSIONS_DIR)/%/.installed-stamp)

$(CLI_VERSIONS_DIR)/%/.installed-stamp: | $(BIN)/python
	rm -rf $(CLI_VERSIONS_DIR)/$*
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --target $(CLI_VERSIONS_DIR)/$* \
		'claude-agent-sdk==$*'
	test -x $(CLI_VERSIONS_DIR)/$*/claude_agent_sdk/_bundled/claude
	touch $@

## The whole test suite (lint and type check included: mypy reads its settings from pyproject.toml).
test: $(STAMP) $(TS_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 -q

## The docs site, built --strict into site/ (reference pages generated from the code).
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict --site-dir site

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) build *.egg-info reports site
