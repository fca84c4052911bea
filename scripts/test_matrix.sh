#!/usr/bin/env bash
# The tracer on another torch: `make test-matrix TORCH=torch==2.6.0` (any pip requirement).
#
# Builds (once) a venv with that torch and graphlint's dependencies under $MATRIX_HOME, runs
# graphlint from this working tree (so the venv serves every clone), fetches the torch_npu wheel that
# pairs with that torch (`graphlint torchair fetch`: the newest release of its X.Y.Z, else of
# its X.Y; read, never installed) and runs the tracer's version-sensitive tests: the golden
# trace samples, the capture samples, the classifiers, the inconclusive paths, the audit's Meta
# kernels and the torchair stage. The venvs and graphlint's wheel cache live under $MATRIX_HOME
# (outside the clone), so a second run downloads nothing.
#
#   scripts/test_matrix.sh torch==2.6.0        MATRIX_HOME=... PYTEST_WORKERS=0 PYTHON=python3.11
#   scripts/test_matrix.sh torch==2.8.0 tests/tracer/test_classify.py    (other tests, same venv)
#   scripts/test_matrix.sh --prepare torch==2.6.0   only the venv and the wheel (CI makes them
#                                                   while its main suite runs), no tests
set -euo pipefail
cd "$(dirname "$0")/.."
prepare_only=false
if [ "${1:-}" = "--prepare" ]; then prepare_only=true; shift; fi
TORCH=${1:?usage: scripts/test_matrix.sh [--prepare] TORCH_REQUIREMENT [TESTS...] (e.g. torch==2.6.0)}
shift
PYTHON=${PYTHON:-python3}
MATRIX_HOME=${MATRIX_HOME:-$HOME/.cache/graphlint-ci}
PYTEST_WORKERS=${PYTEST_WORKERS:-auto}
TESTS=(
  tests/tracer/test_golden_samples.py
  tests/capture/test_samples.py
  tests/capture/test_meta_kernels.py
  tests/tracer/test_inconclusive.py
  tests/tracer/test_classify.py
  tests/tracer/test_env.py
  tests/torchair/test_stage.py
)
if [ $# -gt 0 ]; then TESTS=("$@"); fi
name=$(printf '%s' "$TORCH" | tr -c 'A-Za-z0-9.\n' '-')
venv="$MATRIX_HOME/venvs/$name"
export PIP_CACHE_DIR="$MATRIX_HOME/pip"
export GRAPHLINT_HOME="$MATRIX_HOME/graphlint"
started=$(date +%s)

# The venv is made once per torch and refreshed when pyproject.toml (graphlint's dependencies)
# changes; graphlint itself runs from this tree (PYTHONPATH), so a new clone installs nothing.
# The stamp is written last: a run stopped half way through pip is completed by the next.
stamp="$TORCH $(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -x "$venv/bin/python" ]; then
  "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
fi
if [ "$(cat "$venv/.graphlint-matrix" 2>/dev/null)" != "$stamp" ]; then
  "$venv/bin/python" -m pip install -q "$TORCH" -e ".[trace,test]"
  echo "$stamp" > "$venv/.graphlint-matrix"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
echo "test-matrix: $("$venv/bin/python" -c 'import torch; print("torch", torch.__version__)') in $venv ($(( $(date +%s) - started )) s to set up)"
"$venv/bin/python" -m graphlint torchair fetch
"$venv/bin/python" -m graphlint env | grep -E '^(torch|torchair|pairing)'
if $prepare_only; then exit 0; fi
"$venv/bin/python" -m pytest -n "$PYTEST_WORKERS" --maxprocesses 4 --dist worksteal --durations 15 -p no:cacheprovider "${TESTS[@]}"
echo "test-matrix: $TORCH done in $(( $(date +%s) - started )) s"
