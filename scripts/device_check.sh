#!/usr/bin/env bash
# The capture stage's CUDA checks, on a machine with a CUDA GPU (CI has none; see docs/capture.md).
#
# Installs graphlint from this working tree into a private --target folder (no network needed:
# the machine's own torch and pytest are used; graphlint's pure-Python dependencies come from
# the machine, or from wheels in .whl/ when that folder exists), then runs the tests marked
# `cuda` and prints pytest's summary of each. Stops itself after DEVICE_CHECK_SECONDS (420 s by
# default) so the whole script stays under 8 minutes.
#
#   scripts/device_check.sh            # from anywhere; PYTHON=... picks the interpreter
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
LIMIT=${DEVICE_CHECK_SECONDS:-420}
SITE=$(mktemp -d)/site
started=$(date +%s)

"$PYTHON" - <<'PY'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit("device_check: torch.cuda.is_available() is False: this script needs a CUDA GPU")
print(f"device_check: torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
PY

"$PYTHON" -m pip install -q --no-deps --no-index --no-build-isolation --target "$SITE" .
if [ -d .whl ] && compgen -G ".whl/*.whl" >/dev/null; then
  "$PYTHON" -m pip install -q --no-deps --no-index --target "$SITE" .whl/*.whl
fi
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
"$PYTHON" -c 'import graphlint.tracer.capture.cuda, graphlint.tracer.stages.capture'

status=0
PYTHONUNBUFFERED=1 timeout "$LIMIT" "$PYTHON" -m pytest tests/capture -m cuda -rA -q -p no:cacheprovider \
  || status=$?
echo "device_check: pytest exit status $status after $(( $(date +%s) - started )) s"
exit "$status"
