"""GE-level counts: on the real torch_npu wheel (torchair's own converters, run offline by the
torchair stage) through the CLI, and ``count_ge_ops`` on partial dumps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphlint.cli import main
from graphlint.tracer.copies.ge import GE_COPY_TYPES, count_ge_ops
from tests.copies.markers import SAMPLES, lines_of


@pytest.fixture(scope="module")
def offline_reports(torch_npu_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("ge")
    reports = {}
    for name in ("inplace_heavy", "inplace_heavy_rewritten"):
        output = folder / f"{name}.json"
        argv = ["copies", str(SAMPLES / f"{name}.py"), "--torchair", str(torch_npu_wheel), "--format", "json",
                "--output", str(output)]
        assert main(argv) == 0
        reports[name] = json.loads(output.read_text(encoding="utf-8"))
    return reports


def test_each_copy_back_becomes_an_assign_at_its_line(offline_reports: dict[str, dict[str, Any]]) -> None:
    report = offline_reports["inplace_heavy"]
    torchair = next(s for s in report["stages"] if s["name"] == "torchair")
    assert (torchair["status"], torchair["mode"]) == ("passed", "offline")
    assert report["ge"]["Assign"] == report["aten"]["copy_"] == 2
    assert set(report["ge"]) == set(GE_COPY_TYPES)

    def lines(level: str, op: str) -> list[tuple[str, int]]:
        return sorted((e["file"], e["line"]) for e in report["by_line"] if e["level"] == level and e["op"] == op)

    sample = "samples/copies/inplace_heavy.py"
    assert lines("ge", "Assign") == lines("aten", "copy_") == [
        (sample, line) for line in lines_of(SAMPLES / "inplace_heavy.py", "copy_")
    ]
    assert all(e["file"] == "samples/copies/inplace_heavy.py" for e in report["by_line"] if e["level"] == "ge")
    assigns = [e for e in report["by_line"] if e["level"] == "ge" and e["op"] == "Assign"]
    assert sorted(node for e in assigns for node in e["fx_nodes"]) == ["copy_", "copy__1"]
    assert 0 < report["totals"]["ge"]["share"] < 1


def test_rewrite_drops_the_assigns(offline_reports: dict[str, dict[str, Any]]) -> None:
    before, after = offline_reports["inplace_heavy"]["ge"], offline_reports["inplace_heavy_rewritten"]["ge"]
    assert after["Assign"] == 0
    assert sum(after.values()) < sum(before.values())


def test_partial_dumps_are_counted_as_far_as_they_go() -> None:
    graphs: list[Any] = [
        {"name": "g0", "ops": [
            {"name": "Data", "type": "Data"},
            {"name": "TensorMove", "type": "TensorMove", "fx_node": "copy_", "file": "/elsewhere/m.py", "line": "7"},
            {"name": "TensorMove_1", "type": "TensorMove", "fx_node": "copy__1", "file": "/elsewhere/m.py", "line": 7},
            {"name": "Add", "type": "Add"},
            {"name": "weird", "type": ["not", "a", "type"], "line": "x"},
            "not an op",
        ], "optimized_types": {"TensorMove": 1, "Add": 1, "Cast": "?"}},
        {"name": "no ops"},
        {"ops": 3},
        "not a graph",
    ]
    counts = count_ge_ops(graphs)
    assert counts["ops"]["TensorMove"] == 2 and sum(counts["ops"].values()) == 2
    assert counts["total_ops"] == 4  # TensorMove ×2, Add, the op of unknown type; Data is plumbing
    assert counts["optimized"]["TensorMove"] == 1 and sum(counts["optimized"].values()) == 1
    assert [g["name"] for g in counts["graphs"]] == ["g0", "no ops", "ge_graph_2"]
    assert counts["graphs"][0]["lines"] == [
        {"file": "/elsewhere/m.py", "line": 7, "op": "TensorMove", "fx_node": "copy_", "count": 1},
        {"file": "/elsewhere/m.py", "line": 7, "op": "TensorMove", "fx_node": "copy__1", "count": 1},
    ]
