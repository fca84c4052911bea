"""Stage 5: can the graph be captured and replayed? One of three modes, by what the machine has.

``real`` with torch_npu and CANN (torchair reduce-overhead / npugraph_ex, replayed), ``cuda`` on a
CUDA machine (CUDA-graph trees, and ``torch.cuda.graph`` over the aot-compiled callable), else
``audit``: the aten graphs traced on a stand-in device and judged for what capture forbids. The
findings carry the static rules' codes (GL201–GL203) and GL204 (CPU fallback); see docs/capture.md.
"""

from __future__ import annotations

import importlib
import time

from graphlint.tracer.findings import Finding, Mode, StageResult
from graphlint.tracer.locate import display_path
from graphlint.tracer.stages.base import Stage, StageContext

# The module that runs each mode; each has ``capture(ctx) -> CaptureOutcome``.
MODE_MODULES: dict[str, str] = {
    "real": "graphlint.tracer.capture.npu",
    "cuda": "graphlint.tracer.capture.cuda",
    "audit": "graphlint.tracer.capture.audit",
}


class CaptureStage(Stage):
    name = "capture"
    layer = "capture"

    def run(self, ctx: StageContext) -> StageResult:
        start = time.perf_counter()
        mode = capture_mode()
        outcome = importlib.import_module(MODE_MODULES[mode]).capture(ctx)
        errors = [f for f in outcome.findings if f.severity == "error"]
        return StageResult(
            self.name,
            "failed" if errors else "passed",
            mode=mode,
            seconds=time.perf_counter() - start,
            reason=_summary(errors) if errors else None,
            graphs=outcome.graphs,
            findings=outcome.findings,
            artifacts=outcome.artifacts,
        )


def capture_mode() -> Mode:
    """``real`` where an NPU can capture, ``cuda`` where CUDA can, else ``audit``."""
    from graphlint.tracer.capture.npu import npu_available

    if npu_available():
        return "real"
    import torch

    return "cuda" if torch.cuda.is_available() else "audit"


def _summary(errors: list[Finding]) -> str:
    first = errors[0]
    where = f" at {display_path(first.file)}:{first.line}" if first.file else ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{first.code or first.kind}{where}: {first.message}{more}"


STAGE = CaptureStage
