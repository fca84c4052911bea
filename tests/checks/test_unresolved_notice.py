"""GL001 names a capture graphlint cannot follow, not one in a private method nothing runs (sglang's
``NPUGraphRunner._capture_graph``: its base class captures through its graph backend instead)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.checks.conftest import lint_project

# The NPU runner's override is called by no one; another runner's method of the same name is
# called on its own instance (resolved to that one). The second project's base class calls it.
RUNNER = """
    import torch


    class CudaGraphRunner:
        def capture(self, graph, run_once):
            return run_once()


    class NPUGraphRunner(CudaGraphRunner):
        def _capture_graph(self, graph, pool, stream, run_once_fn):
            with torch.npu.graph(graph, pool=pool, stream=stream):
                out = run_once_fn()
            return out
"""
VIT_RUNNER = """
    import torch


    class ViTGraphRunner:
        def __init__(self, model):
            self.model = model

        def _capture_graph(self, graph):
            with torch.npu.graph(graph):
                self.out = self.model(graph)

        def run(self, graph):
            self._capture_graph(graph)
"""
CALLED = RUNNER.replace("return run_once()", "return self._capture_graph(graph, None, None, run_once)")


def _notices(tmp_path: Path, runner: str) -> set[tuple[str, int]]:
    files = {"runtime/graph_runner.py": textwrap.dedent(runner), "runtime/vit_runner.py": textwrap.dedent(VIT_RUNNER)}
    _, report = lint_project(tmp_path, files, pyproject="[tool.graphlint]\npresets = []\n")
    return {(f["path"].rpartition("/")[2], f["line"]) for f in report["findings"] if f["code"] == "GL001"}


def test_a_capture_in_a_private_method_nothing_runs_is_no_notice(tmp_path: Path) -> None:
    assert _notices(tmp_path, RUNNER) == {("vit_runner.py", 10)}


def test_a_capture_in_a_private_method_a_base_class_calls_is_a_notice(tmp_path: Path) -> None:
    assert _notices(tmp_path, CALLED) == {("graph_runner.py", 12), ("vit_runner.py", 10)}
