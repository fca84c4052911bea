"""How a failed translation is judged: by the op being converted and what torchair raised."""

from __future__ import annotations

import pytest

from graphlint.tracer.torchair.runner import TranslationFailure, is_cpu_only_op
from graphlint.tracer.torchair.verdicts import finding_of_failure

BUILTIN_OP = (
    "Failed to auto-generated converter for {op} to AscendIR: PyTorch built-in ops not support "
    "auto-generate converters. If necessary, you can check the Ascend Extension for Pytorch version "
    "documentation and refer to the custom op guide to implement your own converter."
)


def failure(op: str | None, error: BaseException, has_converter: bool | None) -> TranslationFailure:
    return TranslationFailure("graph_0", error, op, "node", "model.py", 7, has_converter)


@pytest.mark.parametrize(
    ("op", "error", "has_converter", "code", "kind", "severity"),
    [
        ("aten.index_put.default", NotImplementedError("ge_converter is not implemented!"), True,
         "TA001", "converter-not-implemented", "error"),
        ("aten.histc.default", RuntimeError(BUILTIN_OP.format(op="aten.histc.default")), False,
         "TA002", "converter-missing", "error"),
        ("aten.add.Tensor", AssertionError("dtype mismatch"), True, "TA003", "converter-raised", "error"),
        (None, KeyError("graph pass"), None, "TA003", "converter-raised", "error"),
        ("aten._scaled_dot_product_flash_attention_for_cpu.default",
         RuntimeError(BUILTIN_OP.format(op="sdpa")), False, "TA004", "inconclusive", "info"),
    ],
    ids=["not-implemented", "missing", "raised", "outside-a-converter", "cpu-only-op"],
)
def test_judgement(
    op: str | None, error: BaseException, has_converter: bool | None, code: str, kind: str, severity: str
) -> None:
    finding = finding_of_failure(failure(op, error, has_converter))
    assert (finding.code, finding.kind, finding.severity, finding.layer) == (code, kind, severity, "torchair")
    assert (finding.file, finding.line, finding.details["op"]) == ("model.py", 7, op)
    assert finding.details["exception"] == type(error).__name__


@pytest.mark.parametrize(
    ("op", "cpu_only"),
    [
        ("aten._scaled_dot_product_flash_attention_for_cpu.default", True),
        ("aten._scaled_dot_product_flash_attention_for_cpu_backward.default", True),
        ("mkldnn._linear_pointwise.default", True),
        ("aten.mkldnn_rnn_layer.default", True),
        ("aten._scaled_dot_product_flash_attention.default", False),
        ("aten.add.Tensor", False),
    ],
)
def test_cpu_only_ops(op: str, cpu_only: bool) -> None:
    assert is_cpu_only_op(op) is cpu_only
