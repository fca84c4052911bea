"""The stand-ins for torch_npu's native parts answer like the real modules, or say they cannot.

A custom op with no GE IR (the shape of transformers' ``grouped_mm_fallback``) goes through
torchair's custom-op pre-scan, which asks the native ``get_registered_ir_def``; before the
stand-ins answered, that gave a false TA003 "cannot unpack non-iterable StandIn object" at a
line of torchair's own sources."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
import torch

from graphlint.tracer.findings import StageResult
from graphlint.tracer.stages import load_stage
from graphlint.tracer.stages.base import StageContext, TraceOptions, TraceTarget
from graphlint.tracer.torchair import stand_in
from graphlint.tracer.torchair.locate import TORCHAIR_DIR
from graphlint.tracer.torchair.stand_in import StandIn, StandInCannotAnswer, native_answers, stand_in_behind

TARGETS = Path(__file__).resolve().parents[1] / "tracer" / "targets"
TINY_MOE = str(TARGETS / "tiny_moe.py")


class ExpertsOnly(torch.nn.Module):
    """Only the grouped matmul custom op of the tiny MoE: no other op lacks a converter."""

    def forward(self, tokens: torch.Tensor, weights: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        from tests.tracer.targets.tiny_moe import grouped_matmul

        return grouped_matmul(tokens, weights, offsets) * 2.0


def experts_only_stage(wheel: Path) -> StageResult:
    import tests.tracer.targets.tiny_moe as tiny_moe

    inputs = (torch.randn(6, 8), torch.randn(4, 8, 8), torch.tensor([1, 3, 3, 6], dtype=torch.int32))
    target = TraceTarget(ExpertsOnly(), [inputs], [{}], name="experts", user_files={__file__, tiny_moe.__file__})
    return load_stage("torchair").run(StageContext(target, TraceOptions(torchair=str(wheel))))


def test_a_custom_op_without_ge_ir_gets_torchairs_own_verdict(torch_npu_wheel: Path) -> None:
    result = experts_only_stage(torch_npu_wheel)
    assert result.status == "failed", result.reason
    [finding] = result.findings
    assert (finding.code, finding.details["op"]) == ("TA002", "graphlint_tests.grouped_matmul.default")
    # torchair's GE_IR_NOT_REGISTERED, raised by its converter auto-generation: the real verdict
    assert "No AscendIR GroupedMatmul was found to be registered" in finding.message
    assert finding.file == str(Path(__file__).resolve())
    assert "StandIn" not in finding.message and result.artifacts["stand_ins_refused"] == []


def test_no_finding_points_into_torchair_or_graphlint(torch_npu_wheel: Path) -> None:
    from graphlint.tracer.target import load_target

    result = load_stage("torchair").run(StageContext(load_target(TINY_MOE), TraceOptions(torchair=str(torch_npu_wheel))))
    assert {f.code for f in result.findings} == {"TA001", "TA002"}
    for finding in result.findings:
        assert finding.file == TINY_MOE, finding
        assert "stand-in" not in finding.message.lower()


def test_a_stand_in_that_cannot_answer_leaves_the_verdict_inconclusive(
    torch_npu_wheel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stand_in, "native_answers", lambda: {})  # as if the table lacked the entry
    result = experts_only_stage(torch_npu_wheel)
    assert result.status == "inconclusive", [f.message for f in result.findings]
    assert "torchair.core._torchair.get_registered_ir_def()" in result.reason
    [finding] = result.findings
    assert (finding.code, finding.kind, finding.severity) == ("TA004", "inconclusive", "info")
    assert finding.details["stand_in"] == "torchair.core._torchair.get_registered_ir_def()"
    assert "not a verdict of torchair's" in finding.message
    assert finding.file is None or TORCHAIR_DIR not in finding.file and "torchair-src" not in finding.file


def test_a_stand_in_refuses_to_be_used_as_a_value() -> None:
    unknown = StandIn("torchair.core._torchair.SomethingNew")()
    assert not unknown  # "is the device there?": no
    with pytest.raises(StandInCannotAnswer, match=r"SomethingNew\(\) cannot answer offline \(it was iterated"):
        status, _ = unknown
    with pytest.raises(StandInCannotAnswer):
        unknown == "SUCCESS"  # noqa: B015 - the comparison itself is the test
    try:
        int(unknown)
    except StandInCannotAnswer as exc:
        wrapped = RuntimeError("torchair failed")
        wrapped.__cause__ = exc
        assert stand_in_behind(wrapped) == "torchair.core._torchair.SomethingNew()"
    assert stand_in_behind(TypeError("expected str, got int")) is None


def _torchair_sources(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as archive:
        return {
            name: archive.read(name).decode("utf-8", "replace")
            for name in archive.namelist()
            if name.startswith(TORCHAIR_DIR) and name.endswith(".py")
        }


def test_each_answer_is_the_one_torchairs_callers_read(torch_npu_wheel: Path) -> None:
    sources = _torchair_sources(torch_npu_wheel)
    answers = native_answers()
    for name, answer in answers.items():
        function = name.rsplit(".", 1)[1]
        callers = [path for path, text in sources.items() if re.search(rf"\b{function}\(", text)]
        assert callers, f"torchair never calls {name}"
        # the answer's rationale names a caller it was read from
        assert any(caller.rsplit("/", 1)[-1] in answer.why for caller in callers), (name, callers)
    status, inputs, outputs, attrs = answers["torchair.core._torchair.get_registered_ir_def"].value
    pre_scan = sources[f"{TORCHAIR_DIR}/_ge_concrete_graph/custom_op_pre_scan.py"]
    # (False, None): "GE IR not found" — the answer for an op CANN does not know
    assert re.search(rf'if status == "{status}":\s+return False, None', pre_scan)
    converter = sources[f"{TORCHAIR_DIR}/_ge_concrete_graph/fx2ge_converter.py"]
    assert 'if status != "SUCCESS":\n        raise RuntimeError(ConverterErrorMsg.GE_IR_NOT_REGISTERED' in converter
    assert (dict(inputs), dict(outputs), dict(attrs)) == ({}, {}, {})  # ge_custom.py reads them as dicts
