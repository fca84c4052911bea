"""Custom ops are audited from inside: their Python implementation runs on every call, so what
it does (a host sync, a host tensor copied to the device) is in the captured region too. Found at
the user's line of the call, with the line inside the op."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from graphlint.tracer.findings import StageResult
from graphlint.tracer.locate import display_path
from graphlint.tracer.stages.base import StageContext, TraceOptions, TraceTarget
from graphlint.tracer.stages.capture import MODE_VARIABLE, CaptureStage
from graphlint.tracer.target import load_target

TINY_MOE = Path(__file__).resolve().parents[1] / "tracer" / "targets" / "tiny_moe.py"
HERE = Path(__file__).resolve()


@torch.library.custom_op("graphlint_tests::add_positions", mutates_args=())
def add_positions(x: torch.Tensor) -> torch.Tensor:
    return x + torch.arange(x.shape[-1]).to(x.device)


@add_positions.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


@torch.library.custom_op("graphlint_tests::double", mutates_args=())
def double(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@double.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class Positions(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        doubled = double(x)
        return add_positions(doubled)


def line_of(text: str, path: Path) -> int:
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in line)


def audit(target: TraceTarget, monkeypatch: pytest.MonkeyPatch) -> StageResult:
    monkeypatch.setenv(MODE_VARIABLE, "audit")
    return CaptureStage().run(StageContext(target, TraceOptions(stages=("capture",))))


def test_the_host_sync_inside_the_moe_grouped_matmul_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    result = audit(load_target(str(TINY_MOE)), monkeypatch)
    assert result.status == "failed"
    [sync] = [f for f in result.findings if f.code == "GL202"]
    assert (sync.file, sync.line) == (str(TINY_MOE), line_of("grouped_matmul(routed", TINY_MOE))
    assert sync.details["custom_op"] == "graphlint_tests::grouped_matmul"
    assert sync.details["inside_op"] == f"{display_path(str(TINY_MOE))}:{line_of('enumerate(offsets.tolist())', TINY_MOE)}"
    assert result.artifacts["custom_ops_audited"] == ["graphlint_tests::grouped_matmul"]


def test_a_host_tensor_copied_inside_a_custom_op_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    target = TraceTarget(Positions(), [(torch.randn(2, 4),)], [{}], name="positions", user_files={str(HERE)})
    result = audit(target, monkeypatch)
    codes = {(f.code, f.details.get("custom_op")) for f in result.findings}
    assert codes == {("GL201", "graphlint_tests::add_positions"), ("GL203", "graphlint_tests::add_positions")}
    inner = f"{display_path(str(HERE))}:{line_of('torch.arange(x.shape[-1]).to(x.device)', HERE)}"
    for finding in result.findings:
        assert finding.line == line_of("return add_positions(doubled)", HERE)
        assert finding.details["inside_op"] == inner
    # the clean op was audited from inside too, and found clean
    assert set(result.artifacts["custom_ops_audited"]) == {"graphlint_tests::double", "graphlint_tests::add_positions"}
    assert result.artifacts["custom_ops_opaque"] == {}
