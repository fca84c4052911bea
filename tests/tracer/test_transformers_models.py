"""Real models: tiny GPT-2, Llama and BERT built from transformers configs with random weights,
traced through eager, dynamo and aot (the stages that run on any machine)."""

from __future__ import annotations

import os

import pytest

from tests.tracer.conftest import TARGETS

STAGES = "eager,dynamo,aot"
TARGET = os.path.relpath(TARGETS / "transformers_models.py")


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["gpt2", "llama", "bert"])
def test_tiny_transformers_model_traces_clean_and_complete(entry: str, trace_json) -> None:
    status, report = trace_json(TARGET, "--entry", entry, "--stages", STAGES)
    assert status == 0, report["verdict"]
    assert report["verdict"]["layer"] is None
    assert report["target"] == TARGET
    assert report["environment"]["transformers"]
    rows = {row["name"]: row for row in report["stages"]}
    assert list(rows) == ["eager", "dynamo", "aot"]
    assert all(row["status"] == "passed" and row["mode"] == "real" for row in rows.values())
    assert rows["dynamo"]["graphs"] == 1 and rows["dynamo"]["graph_breaks"] == 0 and rows["dynamo"]["recompiles"] == 0
    assert rows["aot"]["graphs"] == 1  # the functionalized inference graph
    # outputs of every executing stage matched eager's: no accuracy finding, no error at all
    assert [f for f in report["findings"] if f["severity"] == "error"] == []
    copies = report["copies"]
    assert copies is not None and isinstance(copies["aten"], dict)
    assert all(count > 0 for count in copies["aten"].values())
