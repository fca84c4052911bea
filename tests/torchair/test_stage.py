"""The torchair stage offline, on the real torch_npu wheel: real converters, real GE graphs."""

from __future__ import annotations

import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch

from graphlint.tracer.copies.ge import GE_STRUCTURAL_TYPES
from graphlint.tracer.findings import StageResult
from graphlint.tracer.ladder import run_ladder
from graphlint.tracer.stages import load_stage
from graphlint.tracer.stages.base import StageContext, TraceOptions, TraceTarget
from graphlint.tracer.torchair.locate import TORCHAIR_DIR
from tests.expectations import read_expectations
from tests.torchair import models

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "trace" / "converter_gap.py"
MODELS_FILE = str(Path(models.__file__).resolve())


def run_stage(target: TraceTarget, wheel: Path, dump_dir: Path | None = None) -> StageResult:
    ctx = StageContext(target, TraceOptions(torchair=str(wheel), dump_dir=dump_dir))
    return load_stage("torchair").run(ctx)


def target_of(fn: Any, *args: Any) -> TraceTarget:
    return TraceTarget(fn, [args], [{}], name=getattr(fn, "__name__", "model"), user_files={MODELS_FILE})


def ge_types(result: StageResult) -> set[str]:
    return {op["type"] for graph in result.artifacts["ge_graphs"] for op in graph["ops"]}


@pytest.fixture(scope="module")
def clean(torch_npu_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[StageResult, Path]:
    dump = tmp_path_factory.mktemp("dump")
    return run_stage(target_of(models.Clean(), torch.randn(4, 8)), torch_npu_wheel, dump), dump


def test_converter_gap_sample_golden(torch_npu_wheel: Path) -> None:
    expected = read_expectations(SAMPLE)
    stages = ("eager", "dynamo", "aot", "torchair")  # the verdict needs no later stage
    report = run_ladder(str(SAMPLE), TraceOptions(stages=stages, torchair=str(torch_npu_wheel)))
    torchair_row = next(s for s in report["stages"] if s["name"] == "torchair")
    assert (torchair_row["status"], torchair_row["mode"]) == ("failed", "offline")
    assert report["verdict"]["layer"] == expected.trace_verdict
    found = {(f["code"], f["line"]) for f in report["findings"]}
    assert expected.trace_findings <= found


def test_index_put_fails_with_torchairs_own_message(torch_npu_wheel: Path) -> None:
    result = run_stage(
        target_of(models.scatter_with_index_put, torch.zeros(5), torch.tensor([1, 3]), torch.tensor([1.0, 2.0])),
        torch_npu_wheel,
    )
    assert (result.status, result.mode) == ("failed", "offline")
    (finding,) = [f for f in result.findings if f.severity == "error"]
    assert (finding.code, finding.kind, finding.layer) == ("TA001", "converter-not-implemented", "torchair")
    assert "aten.index_put.default ge_converter is not implemented" in finding.message
    assert finding.details["op"] == "aten.index_put.default"
    assert finding.details["exception"] == "NotImplementedError"
    assert (finding.file, finding.line) == (MODELS_FILE, 27)


def test_op_without_any_converter_is_converter_missing(torch_npu_wheel: Path) -> None:
    result = run_stage(target_of(models.histogram, torch.randn(16)), torch_npu_wheel)
    assert (result.status, result.mode) == ("failed", "offline")
    (finding,) = [f for f in result.findings if f.severity == "error"]
    assert (finding.code, finding.details["op"], finding.line) == ("TA002", "aten.histc.default", 32)
    # torchair's own reason, in its words: "PyTorch built-in ops not support auto-generate
    # converters" (2.13), "this op is not custom op to auto generate" (2.6.0.post5)
    assert re.search(r"not (support|custom op to) auto[- ]generate", finding.message), finding.message


def test_clean_model_builds_a_ge_graph(clean: tuple[StageResult, Path]) -> None:
    result, dump = clean
    assert (result.status, result.mode) == ("passed", "offline"), result.findings
    assert {"Data", "MatMul", "Add", "Transpose", "Mul", "NetOutput"} <= ge_types(result)
    mul = next(op for g in result.artifacts["ge_graphs"] for op in g["ops"] if op["type"] == "Mul")
    assert (mul["file"], mul["line"]) == (MODELS_FILE, 17)
    operators = [op for g in result.artifacts["ge_graphs"] for op in g["ops"] if op["type"] not in GE_STRUCTURAL_TYPES]
    assert result.artifacts["copies_ge"]["total_ops"] == len(operators)
    dumped = sorted(p.name for p in (dump / "torchair").iterdir())
    assert dumped == ["config.json", "graph_0.optimized.pbtxt", "graph_0.original.pbtxt"]
    assert 'type: "NetOutput"' in (dump / "torchair" / "graph_0.original.pbtxt").read_text()
    assert "settings" in json.loads((dump / "torchair" / "config.json").read_text())  # what a repro runs with


def test_in_place_update_of_an_input_becomes_assign(torch_npu_wheel: Path) -> None:
    result = run_stage(target_of(models.update_in_place, torch.zeros(4), torch.ones(4)), torch_npu_wheel)
    assert result.status == "passed", result.findings
    assert "Assign" in ge_types(result)
    assign = next(op for g in result.artifacts["ge_graphs"] for op in g["ops"] if op["type"] == "Assign")
    assert assign["fx_node"] is not None


def test_train_translates_forward_and_backward(torch_npu_wheel: Path) -> None:
    options = TraceOptions(torchair=str(torch_npu_wheel), train=True)
    ctx = StageContext(target_of(models.Clean(), torch.randn(4, 8)), options)
    result = load_stage("torchair").run(ctx)
    assert (result.status, result.graphs) == ("passed", 2), result.findings
    forward, backward = result.artifacts["ge_graphs"]
    assert "MatMul" in {op["type"] for op in backward["ops"]}  # the weight's gradient


def test_the_users_process_is_left_as_it_was(torch_npu_wheel: Path) -> None:
    modules_before = dict(sys.modules)
    meta_path_before = list(sys.meta_path)
    all_reduce_before = torch.distributed.all_reduce
    kernels_before = dict(torch.ops.aten.to.other.py_kernels)

    result = run_stage(target_of(models.Clean(), torch.randn(4, 8)), torch_npu_wheel)

    assert result.mode == "offline" and result.artifacts["ge_graphs"]
    assert sys.meta_path == meta_path_before
    leaked = [n for n in sys.modules if n.split(".")[0] in ("torchair", "torch_npu")]
    assert leaked == []
    changed = [n for n, m in modules_before.items() if sys.modules.get(n) is not m]
    assert changed == []
    assert torch.distributed.all_reduce is all_reduce_before
    assert dict(torch.ops.aten.to.other.py_kernels) == kernels_before
    assert not hasattr(torch.ops.aten.add.Tensor, "_ge_converter")
    with pytest.raises(ModuleNotFoundError):
        __import__("torchair")


def test_static_fallback_when_torchair_will_not_import(
    torch_npu_wheel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphlint.tracer.torchair import offline

    def refuse(source: Any) -> Any:
        raise ImportError("torchair built for another torch")

    monkeypatch.setattr(offline, "offline_torchair", refuse)
    result = run_stage(
        target_of(models.scatter_with_index_put, torch.zeros(5), torch.tensor([1, 3]), torch.tensor([1.0, 2.0])),
        torch_npu_wheel,
    )
    assert (result.status, result.mode) == ("failed", "offline-static")
    (finding,) = [f for f in result.findings if f.severity == "error"]
    assert (finding.code, finding.line, finding.details["prediction"]) == ("TA001", 27, True)
    assert "another torch" in result.artifacts["offline_import_error"]


def test_static_fallback_that_predicts_no_failure_is_inconclusive_and_says_why(
    torch_npu_wheel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torchair's sources import numpy: without it the stage could only look ops up, and says so."""
    from graphlint.tracer.torchair import offline

    def without_numpy(source: Any) -> Any:
        import importlib

        return importlib.import_module("numpy_is_not_installed")  # the ModuleNotFoundError a missing numpy raises

    monkeypatch.setattr(offline, "offline_torchair", without_numpy)
    result = run_stage(target_of(models.Clean(), torch.randn(4, 8)), torch_npu_wheel)
    assert (result.status, result.mode) == ("inconclusive", "offline-static"), result.findings
    assert "ModuleNotFoundError: No module named 'numpy_is_not_installed'" in result.reason
    assert "converter registry" in result.reason


def test_torchair_for_another_torch_is_predicted_statically(torch_npu_wheel: Path, tmp_path: Path) -> None:
    """A torch_npu folder from another release, whose torchair does not import here: the
    version warning, then predictions from its (here: empty) converter registry."""
    with zipfile.ZipFile(torch_npu_wheel) as wheel:
        wheel.extract(f"{TORCHAIR_DIR}/__init__.py", tmp_path)
    (tmp_path / "torch_npu" / "version.py").write_text("__version__ = '2.1.0'\n")
    result = run_stage(target_of(models.Clean(), torch.randn(4, 8)), tmp_path)
    assert (result.status, result.mode) == ("failed", "offline-static")
    assert "ModuleNotFoundError" in result.artifacts["offline_import_error"]
    by_code = {f.code: f for f in result.findings}
    assert by_code["TA005"].severity == "warning" and "2.1.0" in by_code["TA005"].message
    predicted = by_code["TA002"]
    assert predicted.details["prediction"] and predicted.file == MODELS_FILE


def test_skipped_with_a_way_out_when_no_torchair_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHLINT_HOME", str(tmp_path))
    monkeypatch.delenv("GRAPHLINT_TORCHAIR", raising=False)
    ctx = StageContext(target_of(models.Clean(), torch.randn(4, 8)), TraceOptions())
    reason = load_stage("torchair").unavailable_reason(ctx)
    assert reason is not None and "graphlint torchair fetch" in reason
