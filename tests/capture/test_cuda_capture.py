"""The CUDA mode for real: reduce-overhead (CUDA-graph trees) and torch.cuda.graph over the
aot-compiled sample, replayed and compared with eager. Run by scripts/device_check.sh."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from graphlint.tracer.stages.base import StageContext, TraceOptions
from graphlint.tracer.stages.capture import CaptureStage, capture_mode
from graphlint.tracer.target import load_target
from tests.capture.conftest import CAPTURE_SAMPLES
from tests.expectations import read_expectations

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]

SAMPLES = {s.stem: s for s in CAPTURE_SAMPLES}


def cuda_capture(sample: Path):
    return CaptureStage().run(StageContext(load_target(str(sample)), TraceOptions(stages=("capture",))))


def test_a_machine_with_cuda_captures_for_real() -> None:
    assert capture_mode() == "cuda"


def test_the_clean_sample_captures_and_replays_like_eager() -> None:
    result = cuda_capture(SAMPLES["clean"])
    assert (result.mode, result.status) == ("cuda", "passed"), [f.message for f in result.findings]
    assert [f for f in result.findings if f.layer == "accuracy"] == []


@pytest.mark.parametrize("name", ["host_to_device_copy", "host_constant", "item_sync", "boolean_mask"])
def test_an_unsafe_sample_fails_capture_at_its_line(name: str) -> None:
    sample = SAMPLES[name]
    result = cuda_capture(sample)
    assert (result.mode, result.status) == ("cuda", "failed")
    lines = {f.line for f in result.findings if f.file == str(sample.resolve()) and f.severity == "error"}
    expected_lines = {line for _, line in read_expectations(sample).trace_findings}
    assert lines & expected_lines, [(f.kind, f.line, f.message) for f in result.findings]
