# graphlint developer commands.
#   make demo               set up .venv and run graphlint on samples/
#   make test               set up .venv and run the whole test suite
#   make test TORCH=torch==2.13.0   (what CI does: a CPU build from local disk)
#   make test PYTEST_WORKERS=0      (all in one pytest process, not one worker per core)
#   make test-matrix TORCH=torch==2.6.0   the tracer's tests on another torch (any pip requirement),
#                                   in a venv cached under MATRIX_HOME with the torch_npu that pairs
PYTHON ?= python3
TORCH ?= torch
PYTEST_WORKERS ?= auto
VENV ?= .venv
BIN := $(VENV)/bin
# Where tests and `graphlint torchair fetch` keep the torch_npu wheel (read, never installed).
export GRAPHLINT_HOME ?= $(CURDIR)/.cache/graphlint

# Outside the clone, so that CI's fresh clones reuse the venvs and downloads.
MATRIX_HOME ?= $(HOME)/.cache/graphlint-ci

.PHONY: venv install install-test demo test test-matrix bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

venv: $(BIN)/python

# What `graphlint check` and `graphlint trace` need (the demo); the test extras come on top.
install: venv
	$(BIN)/python -m pip install -q "$(TORCH)" -e ".[trace]"

install-test: venv
	$(BIN)/python -m pip install -q "$(TORCH)" -e ".[trace,test]"

# Where no torch_npu release pairs with the installed torch, fetch says so in one line and exits
# 1; the demo goes on and the trace shows the torchair stage skipped with that reason.
# check and trace exit 1 on the samples, which are made to fail: that is said, not made an error.
demo: install
	-$(BIN)/graphlint torchair fetch
	@$(BIN)/graphlint check samples/ || echo "(graphlint check exited $$?: the samples are made to have findings)"
	@$(BIN)/graphlint trace samples/trace/str_on_symint.py || echo "(graphlint trace exited $$?: this sample is made to fail in dynamo)"

# pytest-xdist, one worker per core (at most 4), each taking a run of tests in order and stealing
# from the others when done: the corpus lint (first, see tests/conftest.py) keeps one worker busy
# while the others get through the rest, most of which waits on one single-threaded compile.
# The 30 slowest tests are listed at the end: the suite must stay under 15 minutes in CI.
test: install-test
	$(BIN)/graphlint torchair fetch  # the torch_npu wheel the torchair tests read (never installed)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --maxprocesses 4 --dist worksteal --durations 30 tests

test-matrix:
	MATRIX_HOME=$(MATRIX_HOME) PYTEST_WORKERS=$(PYTEST_WORKERS) PYTHON=$(PYTHON) scripts/test_matrix.sh "$(TORCH)"

bench: install-test
	$(BIN)/python benchmarks/check_throughput.py

clean:
	rm -rf $(VENV) .cache .graphlint_cache .pytest_cache
