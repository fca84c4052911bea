"""The isolated import of torchair: what it leaves behind in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter so that torch modules are first imported during the session.
SCRIPT = """
import sys, torch
from pathlib import Path
from graphlint.tracer.torchair.locate import source_at
from graphlint.tracer.torchair.offline import offline_torchair

with offline_torchair(source_at(Path(sys.argv[1]))) as torchair:
    assert torch.ops.air.scope_enter.default is not None  # torchair's own operator library
    assert torchair.CompilerConfig is not None
# torch's libraries created while torchair imported (torch.ao's quantized_decomposed) survive,
assert "quantize_per_tensor" in str(torch.ops.quantized_decomposed.quantize_per_tensor.default)
# torchair's are gone,
try:
    torch.ops.air.scope_enter.default
except (AttributeError, RuntimeError):
    pass
else:
    raise AssertionError("torch.ops.air outlived the session")
# and a second session imports torchair again from scratch.
with offline_torchair(source_at(Path(sys.argv[1]))) as torchair:
    assert torch.ops.air.scope_enter.default is not None
print("ok")
"""


def test_session_removes_only_what_torchair_registered(torch_npu_wheel: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(torch_npu_wheel)], capture_output=True, text=True, cwd=REPO,
        env=os.environ,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip().endswith("ok")
