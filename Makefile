# Two entry points on a fresh machine:
#   make demo   create .venv, install the workflow and run the embedded demo end to end on every core
#               (CORES=N: at most N; VERBOSE=1: every job record)
#   make test   create .venv, install the workflow and run every test (lint, dry run, unit, demo)
# make lint checks the style (ruff, snakefmt, snakemake --lint); make format rewrites the files to pass it.
# The CPythons pyproject.toml admits (benchmarks/results/wheels.json: every dependency has a wheel for them),
# the first on PATH taken: 3.11 first, as the CPU build of torch lies on disk for it here. PYTHON=... overrides.
PYTHONS := python3.11 python3.12 python3.13
PYTHON ?= $(firstword $(foreach python,$(PYTHONS),$(shell command -v $(python) 2>/dev/null)))
VENV ?= .venv
BIN := $(VENV)/bin
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: install demo demo-gpu test lint format dryrun schema clean-demo

# Byte-compiled on every call (0.1 s when nothing changed): where PYTHONDONTWRITEBYTECODE is set, as in many
# container images, each process, every fine-tuning run's fork among them, would compile our modules anew.
install: $(VENV)/.installed
	python -m compileall -q workflow_scripts

# pip byte-compiles the 16,000 modules it installs one by one, about half of the install's time; they are
# compiled afterwards on every core instead. A file that does not compile is left, as pip leaves it (torch
# ships one in Python 3.12 syntax), for an import to report.
$(VENV)/.installed: pyproject.toml
	$(if $(PYTHON),,$(error No Python 3.11 to 3.13 on PATH (looked for $(PYTHONS)): install one (Debian 13 and Ubuntu 24.04: apt-get install python3-venv; elsewhere: uv python install 3.13) or name one with make PYTHON=/path/to/python3.X))
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-compile torch==2.13.0
	$(BIN)/pip install --quiet --no-compile -e ".[dev]"
	$(BIN)/python -c "import compileall, sys; compileall.compile_dir(sys.argv[1], quiet=2, workers=0)" $(VENV)/lib
	touch $@

# WORKFLOW_PRELOAD: fine-tuning runs fork one interpreter that has imported torch (workflow_scripts/preload.py).
# One progress line; Snakemake's job records go to demo/results/logs/snakemake.log (make demo VERBOSE=1 shows them).
# profiles/local takes every core; CORES=N caps the run at N (each job's threads come from the config, so the
# tables are the same at any count).
demo: install
	WORKFLOW_PRELOAD=1 python -m workflow_scripts.console $(if $(VERBOSE),--verbose) \
		--report demo/results/report.html -- --directory demo --workflow-profile profiles/local \
		$(if $(CORES),--cores $(CORES))

# make demo-gpu: the demo on this machine's card(s) through profiles/gpu-server (docs/gpu-server.md), every core,
# training rules on the cards; in its own directory results/demo-gpu (demo/results and demo/medians.csv stay the CPU's).
demo-gpu: install
	mkdir -p results/demo-gpu && ln -sfn $(abspath demo/raw_source) results/demo-gpu/raw_source
	WORKFLOW_PRELOAD=1 python -m workflow_scripts.console $(if $(VERBOSE),--verbose) \
		--report results/demo-gpu/report.html -- --directory results/demo-gpu --workflow-profile profiles/gpu-server \
		--configfile $(abspath demo/config.yaml) $(abspath profiles/gpu-server/demo.yaml)

# Two workers: the demo's run and the Slurm tests overlap the single-threaded unit tests (tests/conftest.py).
TEST_WORKERS ?= 2

test: install
	pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: install
	ruff check .
	ruff format --check .
	snakefmt --check Snakefile rules
	snakemake --lint

format: install
	ruff format .
	ruff check --fix .
	snakefmt Snakefile rules

dryrun: install
	snakemake -n --quiet rules

schema: install
	python -m workflow_scripts.config.schema > schemas/config.schema.yaml
	python -m workflow_scripts.config.docs > docs/configuration.md

clean-demo:
	rm -rf demo/results demo/.snakemake
