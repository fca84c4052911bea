"""Stage 5: can the graph be captured and replayed? One of three modes, by what the machine has.

``real`` with torch_npu and CANN (torchair reduce-overhead / npugraph_ex, replayed), ``cuda`` on a
CUDA machine (CUDA-graph trees, and ``torch.cuda.graph`` over the aot-compiled callable), else
``audit``: the aten graphs traced on a stand-in device and judged for what capture forbids. The
findings carry the static rules' codes (GL201–GL203) and GL204 (CPU fallback); see docs/capture.md.
"""

from __future__ import annotations

import importlib
import os
import time

from graphlint.tracer.findings import Finding, Mode, StageResult
from graphlint.tracer.locate import display_path
from graphlint.tracer.stages.base import Stage, StageContext

# Forces a mode (e.g. ``audit`` on a GPU machine, for the codes and lines of the audit).
MODE_VARIABLE = "GRAPHLINT_CAPTURE_MODE"
# The module that runs each mode, in order of preference; each has ``capture(ctx) -> CaptureOutcome``.
MODE_MODULES: dict[str, str] = {
    "real": "graphlint.tracer.capture.npu",
    "cuda": "graphlint.tracer.capture.cuda",
    "audit": "graphlint.tracer.capture.audit",
}


class CaptureStage(Stage):
    name = "capture"
    layer = "capture"

    def unavailable_reason(self, ctx: StageContext) -> str | None:
        """Only a forced mode can be unavailable; otherwise the audit runs anywhere."""
        forced = os.environ.get(MODE_VARIABLE)
        if not forced:
            return None
        if forced not in MODE_MODULES:
            return f"{MODE_VARIABLE}={forced!r} is not a capture mode ({', '.join(MODE_MODULES)})"
        if not mode_available(forced):
            return f"{MODE_VARIABLE}={forced} but this machine has no {'NPU' if forced == 'real' else 'CUDA device'}"
        return None

    def run(self, ctx: StageContext) -> StageResult:
        start = time.perf_counter()
        mode = capture_mode()
        outcome = importlib.import_module(MODE_MODULES[mode]).capture(ctx)
        errors = [f for f in outcome.findings if f.severity == "error"]
        return self.result(
            start,
            outcome.findings,
            reason=_summary(errors) if errors else None,
            inconclusive=outcome.inconclusive,
            mode=mode,
            graphs=outcome.graphs,
            artifacts=outcome.artifacts,
        )

def capture_mode() -> Mode:
    """``$GRAPHLINT_CAPTURE_MODE`` when set (checked by ``unavailable_reason``), else the
    machine's natural mode."""
    forced = os.environ.get(MODE_VARIABLE)
    return forced if forced in MODE_MODULES else natural_mode()  # type: ignore[return-value]


def natural_mode() -> Mode:
    """``real`` where an NPU can capture, ``cuda`` where CUDA can, else ``audit``."""
    return next(mode for mode in MODE_MODULES if mode_available(mode))  # type: ignore[return-value]


def mode_available(mode: str) -> bool:
    if mode == "real":
        from graphlint.tracer.capture.npu import npu_available

        return npu_available()
    if mode == "cuda":
        import torch

        return torch.cuda.is_available()
    return True


def _summary(errors: list[Finding]) -> str:
    first = errors[0]
    where = f" at {display_path(first.file)}:{first.line}" if first.file else ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{first.code or first.kind}{where}: {first.message}{more}"


STAGE = CaptureStage
