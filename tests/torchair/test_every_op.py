"""Translation goes on past a failing node: every unsupported op of every graph, forward and
backward, once, with its count, its user lines and the graphs it is in; each verdict agrees with
torchair's converter registry (what ``graphlint ops`` reads)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from graphlint.tracer.findings import Finding, StageResult
from graphlint.tracer.locate import display_path
from graphlint.tracer.stages import load_stage
from graphlint.tracer.stages.base import StageContext, TraceOptions
from graphlint.tracer.target import load_target
from graphlint.tracer.torchair.locate import source_at
from graphlint.tracer.torchair.registry import scan_registry

TINY_MOE = Path(__file__).resolve().parents[1] / "tracer" / "targets" / "tiny_moe.py"


def line_of(text: str, path: Path = TINY_MOE) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


def by_op(result: StageResult) -> dict[str, Finding]:
    findings = {f.details["op"]: f for f in result.findings if f.layer == "torchair"}
    assert len(findings) == len(result.findings), [f.message for f in result.findings]
    return findings


@pytest.fixture(scope="module", params=[False, True], ids=["inference", "train"])
def moe(request: pytest.FixtureRequest, torch_npu_wheel: Path) -> tuple[StageResult, bool]:
    options = TraceOptions(torchair=str(torch_npu_wheel), train=request.param)
    return load_stage("torchair").run(StageContext(load_target(str(TINY_MOE)), options)), request.param


def test_every_failing_op_of_the_graph_is_reported(moe: tuple[StageResult, bool], torch_npu_wheel: Path) -> None:
    findings = by_op(moe[0])
    assert {"aten.histc.default", "graphlint_tests.grouped_matmul.default", "aten.index_put.default"} <= set(findings)
    histc, index_put = findings["aten.histc.default"], findings["aten.index_put.default"]
    assert (histc.code, histc.line) == ("TA002", line_of("torch.histc("))
    assert (index_put.code, index_put.line) == ("TA001", line_of("inverse[perm] ="))
    registry = scan_registry(source_at(torch_npu_wheel))
    assert registry.status_of("aten.histc.default") == "missing"
    assert registry.status_of("aten.index_put.default") == "not implemented"


def test_the_backward_graph_is_translated_and_named(moe: tuple[StageResult, bool]) -> None:
    result, train = moe
    findings = by_op(result)
    if not train:
        assert all(f.details["graphs"] == ["graph_0_forward"] for f in findings.values())
        return
    backward = findings["graphlint_tests.grouped_matmul_backward.default"]
    assert backward.details["graphs"] == ["graph_0_backward"]
    assert backward.line == line_of("grouped_matmul(routed")  # the forward call it differentiates
    index_put = findings["aten.index_put.default"]
    assert index_put.details["graphs"] == ["graph_0_forward", "graph_0_backward"]
    assert index_put.count == 2  # the assignment and its gradient (the indexing by inverse)


class HistogramTwice(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        low = torch.histc(x, bins=4, min=-1, max=0)
        high = torch.histc(x, bins=4, min=0, max=1)
        return low + high


def test_an_op_failing_at_two_lines_is_one_finding_with_both(torch_npu_wheel: Path) -> None:
    from graphlint.tracer.stages.base import TraceTarget

    target = TraceTarget(HistogramTwice(), [(torch.rand(16),)], [{}], name="histc", user_files={__file__})
    result = load_stage("torchair").run(StageContext(target, TraceOptions(torchair=str(torch_npu_wheel))))
    [finding] = result.findings
    assert (finding.code, finding.count) == ("TA002", 2)
    here = Path(__file__).resolve()
    lines = [line_of(f"torch.histc(x, bins=4, min={low}", here) for low in ("-1", "0,")]
    assert finding.details["lines"] == [f"{display_path(str(here))}:{n}" for n in lines]
