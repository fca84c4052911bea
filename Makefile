# graphlint developer commands.
#   make demo               set up .venv and run graphlint on samples/
#   make test               set up .venv and run the whole test suite
#   make test TORCH=torch==2.13.0   (what CI does: a CPU build from local disk)
PYTHON ?= python3
TORCH ?= torch
VENV ?= .venv
BIN := $(VENV)/bin
# Where tests and `graphlint torchair fetch` keep the torch_npu wheel (read, never installed).
export GRAPHLINT_HOME ?= $(CURDIR)/.cache/graphlint

.PHONY: venv install demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

venv: $(BIN)/python

install: venv
	$(BIN)/python -m pip install -q "$(TORCH)" -e ".[trace,test]"

demo: install
	$(BIN)/graphlint torchair fetch
	-$(BIN)/graphlint check samples/
	-$(BIN)/graphlint trace samples/trace/str_on_symint.py

test: install
	$(BIN)/graphlint torchair fetch  # the torch_npu wheel the torchair tests read (never installed)
	$(BIN)/python -m pytest tests

bench: install
	$(BIN)/python benchmarks/check_throughput.py

clean:
	rm -rf $(VENV) .cache .graphlint_cache .pytest_cache
