"""The one-compile design measured by ``benchmarks/trace_dispatch.py`` (issue 19): on a real
target and torchair offline, its dispatcher gives the dynamo, aot and torchair stages today's
findings, and it sees when a stage's run through dynamo's cache compiles again."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import trace_dispatch  # noqa: E402

pytestmark = pytest.mark.slow  # four fresh interpreters, each compiling with torchair offline

SAMPLES = REPO / "samples" / "trace"


def test_one_compile_gives_each_stage_the_findings_of_its_own_compile(torch_npu_wheel: Path) -> None:
    result = trace_dispatch.compare(str(SAMPLES / "converter_gap.py"), None, False, 1)
    assert result["same"] == {"dynamo": True, "aot": True, "torchair": True}
    assert result["late"] == []
    torchair = result["dispatch"]["stages"]["torchair"]
    assert torchair["graphs"] == 1
    assert [f for f in torchair["findings"] if f[1] == "TA001" and f[2:4] == ["converter_gap.py", 22]]
    assert result["dispatch"]["stages"]["aot"]["graphs"] == 1 and result["dispatch"]["stages"]["aot"]["findings"] == []


def test_a_stage_whose_cached_run_compiles_again_is_seen(torch_npu_wheel: Path) -> None:
    # inputs of two sizes: the automatic-dynamic state of the first run makes the aot run compile
    result = trace_dispatch.compare(str(SAMPLES / "str_on_symint.py"), None, False, 1)
    assert result["late"] == ["aot"]
    assert result["separate"]["stages"]["dynamo"]["graphs"] < result["dispatch"]["stages"]["dynamo"]["graphs"]
    assert not result["same"]["aot"]
