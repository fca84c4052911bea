"""The audit does not stop at an op that cannot run on meta tensors: a list index (Falcon's
``qkv[..., [-2], :]``) creates a plain meta tensor mid-trace, which is made fake like a tensor on
a real device; the rest of the graph is audited, and the ops that needed it are listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlint.tracer.stages.base import StageContext, TraceOptions
from graphlint.tracer.stages.capture import MODE_VARIABLE, CaptureStage
from graphlint.tracer.target import load_target

TARGET = Path(__file__).resolve().parents[1] / "tracer" / "targets" / "list_index_heads.py"


def test_the_graph_after_a_list_index_is_audited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODE_VARIABLE, "audit")
    result = CaptureStage().run(StageContext(load_target(str(TARGET)), TraceOptions(stages=("capture",))))
    assert (result.status, result.graphs) == ("failed", 1), [f.message for f in result.findings]
    lines = TARGET.read_text(encoding="utf-8").splitlines()
    arange = next(n for n, line in enumerate(lines, 1) if "torch.arange(x.shape[1]).to(x.device)" in line)
    assert {(f.code, f.line) for f in result.findings} == {("GL201", arange), ("GL203", arange)}
    assert not [f for f in result.findings if f.kind == "audit-incomplete"]
    assert result.artifacts["meta_inputs_faked"] == ["aten.index.Tensor"]
