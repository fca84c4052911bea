"""The bounds of the value-flow fixed point: a solve cut short says so, and a saturated value
set leaves its calls unresolved instead of linking them wrongly."""

from __future__ import annotations

import json
import textwrap
from contextlib import chdir
from pathlib import Path

import pytest

from graphlint.checks import value_graph
from tests.checks.conftest import run_cli

WRAPPER = """
import torch


class Block(torch.nn.Module):
    def forward(self, x):
        return x * 2


class GraphWrapper:
    def __init__(self, runnable):
        self.runnable = runnable
        self.graph = torch.npu.NPUGraph()

    def __call__(self, x):
        with torch.npu.graph(self.graph):
            return self.runnable(x)


def serve(x):
    return GraphWrapper(Block())(x)
"""


def _project(root: Path) -> None:
    (root / "pyproject.toml").write_text("")
    (root / "serve.py").write_text(textwrap.dedent(WRAPPER))


def _regions(root: Path) -> dict:
    with chdir(root):
        status, out = run_cli("regions", "--format", "json", "--no-cache")
    assert status == 0, out
    return json.loads(out)


def test_unbounded_solve_reaches_the_wrapped_forward_and_gives_no_notice(tmp_path: Path) -> None:
    _project(tmp_path)
    document = _regions(tmp_path)
    assert document["notice"] is None
    (entry,) = document["entries"]
    assert "serve.Block.forward" in entry["functions"]


def test_work_budget_stops_the_solve_and_every_report_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path)
    monkeypatch.setattr(value_graph, "WORK_BUDGET", 3)
    document = _regions(tmp_path)
    assert document["notice"].startswith("value flow stopped after ")
    assert "regions may be incomplete" in document["notice"]
    with chdir(tmp_path):
        status, out = run_cli("check", "--no-cache", "--format", "json")
        summary = json.loads(out)["summary"]
        assert summary["notice"] == document["notice"]
        status, text = run_cli("check", "--no-cache", "--color", "never")
    assert "value flow stopped after" in text.splitlines()[-1]


def test_saturated_value_set_leaves_its_calls_unresolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path)
    monkeypatch.setattr(value_graph, "VALUE_CAP", 0)  # every node saturates: nothing links
    document = _regions(tmp_path)
    assert "value set(s) past 0 values" in document["notice"]
    for entry in document["entries"]:
        assert "serve.Block.forward" not in entry["functions"]


def test_a_project_without_entry_points_is_not_solved_and_gives_no_notice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No compile or capture entry: no region can be incomplete, and the value flow (3 M steps on
    # the standard library) is not solved just to say so.
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "serve.py").write_text(textwrap.dedent(WRAPPER).replace("with torch.npu.graph(self.graph):", "if True:"))
    monkeypatch.setattr(value_graph, "WORK_BUDGET", 3)
    solved = []
    monkeypatch.setattr(value_graph.CallGraph, "notice", lambda self: solved.append(self) or "cut short")
    with chdir(tmp_path):
        status, out = run_cli("check", "--no-cache", "--format", "json")
    summary = json.loads(out)["summary"]
    assert status == 0 and "notice" not in summary and solved == []
