"""The capture stage: which mode runs, and the stage result it reports."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from graphlint.tracer.stages import load_stage
from graphlint.tracer.stages.base import StageContext, TraceOptions
from graphlint.tracer.stages.capture import MODE_VARIABLE, capture_mode
from graphlint.tracer.target import load_target
from tests.capture.conftest import CAPTURE_SAMPLES

BOOLEAN_MASK = next(s for s in CAPTURE_SAMPLES if s.stem == "boolean_mask")


def context(sample: Path, tmp_path: Path) -> StageContext:
    return StageContext(load_target(str(sample)), TraceOptions(stages=("capture",), dump_dir=tmp_path / "dump"))


def test_a_machine_without_accelerator_audits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODE_VARIABLE, raising=False)
    assert capture_mode() == ("cuda" if torch.cuda.is_available() else "audit")


@pytest.mark.parametrize(
    ("forced", "reason"),
    [
        ("replay", "GRAPHLINT_CAPTURE_MODE='replay' is not a capture mode (real, cuda, audit)"),
        ("real", "GRAPHLINT_CAPTURE_MODE=real but this machine has no NPU"),
        ("audit", None),
    ],
)
def test_a_forced_mode_that_cannot_run_skips_the_stage(
    forced: str, reason: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(MODE_VARIABLE, forced)
    assert load_stage("capture").unavailable_reason(context(BOOLEAN_MASK, tmp_path)) == reason


def test_the_stage_result_names_the_first_hazard_and_dumps_the_audited_graph(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(MODE_VARIABLE, "audit")
    result = load_stage("capture").run(context(BOOLEAN_MASK, tmp_path))
    assert (result.status, result.mode, result.graphs) == ("failed", "audit", 1)
    assert result.reason.startswith(f"GL202 at {os.path.relpath(BOOLEAN_MASK)}:22: aten.index has an output shape")
    (dumped,) = result.artifacts["graphs_dumped"]
    assert "torch.ops.aten.index.Tensor" in Path(dumped).read_text()
    json.dumps(result.artifacts)  # crosses the worker boundary as JSON
    assert result.to_json()["mode"] == "audit"
