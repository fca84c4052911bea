"""Fixtures of the capture tests: the capture samples, and the capture stage run on each of them
in this process (cached for the session: each run compiles the sample)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from graphlint.tracer.findings import StageResult
from graphlint.tracer.stages.base import StageContext, TraceOptions
from graphlint.tracer.stages.capture import MODE_VARIABLE, CaptureStage
from graphlint.tracer.target import load_target
from tests.tracer.conftest import REPO, trace_json  # noqa: F401  (a fixture, shared)

CAPTURE_SAMPLES = sorted((REPO / "samples" / "capture").glob("*.py"))
# Capture samples elsewhere: the ladder's own sample of a capture failure.
OTHER_CAPTURE_SAMPLES = [REPO / "samples" / "trace" / "capture_unsafe_copy.py"]


@pytest.fixture(scope="session")
def capture_stage_on(torch_npu_wheel: Path) -> Callable[[Path], StageResult]:
    """``capture_stage_on(sample)``: the capture stage's audit of the sample, with torch_npu's
    kernel list from the wheel (so the CPU-fallback check runs)."""
    cache: dict[Path, StageResult] = {}

    def run(sample: Path) -> StageResult:
        if sample not in cache:
            target = load_target(str(sample))
            ctx = StageContext(target, TraceOptions(stages=("capture",), torchair=str(torch_npu_wheel)))
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv(MODE_VARIABLE, "audit")  # the audit, also on a machine with a GPU
                cache[sample] = CaptureStage().run(ctx)
        return cache[sample]

    return run
