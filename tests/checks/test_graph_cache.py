"""The solved call graph is kept under the fingerprints of what the solve reads
(``graph_cache.py``): a warm ``graphlint check`` and an editor edit that changes no assignment
fact do not solve again, and what they report is what a fresh solve reports.

Solves are counted where the work is done (``valueflow.Solver.run``), so a test fails if any
path solves when it should not, or reads a graph when it must solve."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import chdir
from pathlib import Path

import pytest

from graphlint.checks import valueflow
from graphlint.checks.engine import CheckOptions, link_paths, run_check
from graphlint.checks.graph_cache import graph_from_json, graph_to_json
from graphlint.checks.session import CheckSession
from tests.checks.conftest import run_cli

HELPERS = """\
import torch


def count(mask):
    return int(mask.sum().item())
"""

RUN = """\
import torch

from app.helpers import count


class Net(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.width = width
        self.proj = torch.nn.Linear(width, width)

    def forward(self, x):
        n = count(x > 0)
        return self.proj(x) * n


def build(width):
    return torch.compile(Net(width))
"""


@pytest.fixture
def solves(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many times the value-flow graph was solved (one entry per solve: its file count)."""
    counted: list[int] = []
    real = valueflow.Solver.run

    def run(self: valueflow.Solver) -> valueflow.CallGraph:
        counted.append(len(self.files))
        return real(self)

    monkeypatch.setattr(valueflow.Solver, "run", run)
    yield counted


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "app").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.graphlint]\n", encoding="utf-8")
    (root / "app" / "__init__.py").write_text("", encoding="utf-8")
    (root / "app" / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (root / "app" / "run.py").write_text(RUN, encoding="utf-8")
    return root


def check(root: Path, cache: Path) -> dict:
    with chdir(root):
        status, out = run_cli("check", "--format", "json", "--cache-dir", str(cache), ".")
    assert status in (0, 1), out
    report = json.loads(out)
    report["summary"].pop("seconds", None)
    return report


def found(report: dict) -> list[tuple[str, str, int, list[str] | None]]:
    return [(f["code"], f["path"], f["line"], (f.get("region") or {}).get("chain")) for f in report["findings"]]


def test_a_warm_check_reads_the_solved_graph_instead_of_solving(project: Path, tmp_path: Path, solves: list[int]) -> None:
    cache = tmp_path / "cache"
    cold = check(project, cache)
    assert solves == [3]
    assert ("GL202", "app/helpers.py", 5, ["Net.forward", "count"]) in found(cold)
    warm = check(project, cache)
    assert solves == [3]  # nothing changed: not solved again
    assert warm == cold


def test_a_project_with_no_entry_point_is_never_solved(project: Path, tmp_path: Path, solves: list[int]) -> None:
    """Without a compile or capture entry there is no region: the rules' candidates (``.cpu()``
    of a tensor that may be on the host asks the value flow) become no findings without a solve."""
    (project / "app" / "run.py").write_text(RUN.replace("torch.compile(Net(width))", "Net(width)"), encoding="utf-8")
    (project / "app" / "helpers.py").write_text(HELPERS + "\n\ndef to_host(x):\n    return x.cpu().tolist()\n", encoding="utf-8")
    report = check(project, tmp_path / "cache")
    assert report["findings"] == [] and solves == []


def test_an_edit_that_moves_code_does_not_solve_and_one_that_changes_a_value_does(
    project: Path, tmp_path: Path, solves: list[int]
) -> None:
    cache = tmp_path / "cache"
    check(project, cache)
    helpers = project / "app" / "helpers.py"
    # Lines move and a constant is added: the same values flow to the same places.
    helpers.write_text("# counting\n\n" + HELPERS.replace("def count(mask):", "def count(mask):\n    limit = 10"), encoding="utf-8")
    moved = check(project, cache)
    assert solves == [3]
    assert ("GL202", "app/helpers.py", 8, ["Net.forward", "count"]) in found(moved)

    # Now ``forward`` no longer calls ``count``: the graph must be solved again, and say so.
    run = project / "app" / "run.py"
    run.write_text(RUN.replace("n = count(x > 0)", "n = 1"), encoding="utf-8")
    changed = check(project, cache)
    assert solves == [3, 3]
    assert not [f for f in found(changed) if f[1] == "app/helpers.py"]
    fresh = run_check(CheckOptions(paths=[project], use_cache=False))
    assert len(solves) == 3
    assert [(f.code, f.line) for f in fresh.findings] == [(f[0], f[2]) for f in found(changed)]


def test_the_cached_graph_is_the_solved_graph(project: Path, tmp_path: Path, solves: list[int]) -> None:
    with chdir(project):
        linked = link_paths(CheckOptions(paths=[Path(".")], use_cache=False))
    graph = linked.project.graph
    assert graph.entry_targets and graph.callees  # a real graph, not an empty one
    assert graph_from_json(json.loads(json.dumps(graph_to_json(graph)))) == graph


def test_an_editor_edit_that_changes_no_assignment_fact_does_not_solve(
    project: Path, tmp_path: Path, solves: list[int]
) -> None:
    session = CheckSession(project, cache_directory=tmp_path / "cache")
    helpers, run = project / "app" / "helpers.py", project / "app" / "run.py"
    first = session.check([helpers]).findings
    assert [(f.code, f.line) for f in first] == [("GL202", 5)]
    assert solves == [3]

    typed = HELPERS.replace("def count(mask):", "def count(mask):\n    # keep the count small\n    limit = 10")
    assert [(f.code, f.line) for f in session.check([helpers], {helpers: typed}).findings] == [("GL202", 7)]
    assert solves == [3]  # a comment and a constant: no value flows anywhere new

    uncalled = RUN.replace("n = count(x > 0)", "n = 1")
    assert session.check([helpers], {run: uncalled}).findings == []
    assert solves == [3, 3]  # ``forward`` no longer calls ``count``: solved again
    assert [(f.code, f.line) for f in session.check([helpers]).findings] == [("GL202", 5)]
    assert solves == [3, 3]  # back to the files on disk: their graph is still in memory
    assert session.check([run, helpers]).findings and session.check([run]).findings == []
    assert solves == [3, 3]  # other documents open: the same files, linked in the same order


def test_a_session_with_configured_roots_links_the_same_entries_every_time(
    project: Path, tmp_path: Path, solves: list[int]
) -> None:
    """Entries from ``compile-roots`` are added to a copy of the facts: a session that kept
    them would add them again at every check (and its graph would never be the same)."""
    (project / "pyproject.toml").write_text('[tool.graphlint]\ncompile-roots = ["app.helpers.count"]\n', encoding="utf-8")
    (project / "app" / "run.py").write_text(RUN.replace("return torch.compile(Net(width))", "return Net(width)"), encoding="utf-8")
    session = CheckSession(project, cache_directory=tmp_path / "cache")
    helpers = project / "app" / "helpers.py"
    for _ in range(3):
        assert [(f.code, f.line) for f in session.check([helpers]).findings] == [("GL202", 5)]
    assert solves == [3]


HOST_STEPS = """\
import torch


def lengths(steps):
    return steps.cpu().tolist()


class Net(torch.nn.Module):
    def forward(self, x):
        return x * len(lengths(torch.arange(4, device="cpu")))


fast = torch.compile(Net(), mode="reduce-overhead")
"""


def test_a_warm_check_knows_the_host_tensors_a_cold_one_knew(tmp_path: Path, solves: list[int]) -> None:
    """``steps.tolist()`` of a host tensor waits for nothing: the cold check says so from the
    solve, the warm one from the cached graph (which once lost it: vllm-ascend's
    ``cu_seqlens.cpu().tolist()`` of a host ``arange`` came back as two false errors)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.graphlint]\n", encoding="utf-8")
    (root / "net.py").write_text(HOST_STEPS, encoding="utf-8")
    cold = check(root, tmp_path / "cache")
    warm = check(root, tmp_path / "cache")
    assert solves == [1]
    assert found(cold) == [] and found(warm) == []


def test_a_call_made_a_host_tensor_is_solved_again(solves: list[int]) -> None:
    """``device="cpu"`` makes a call's result a host tensor (``FileFacts.host_calls``) without
    changing its flow facts (the keyword's value is no flow): the graph is keyed by both."""
    from graphlint.checks.extract import extract_facts
    from graphlint.checks.graph_cache import SolvedGraphs
    from graphlint.checks.value_graph import LinkedModule

    def files(device: str) -> list[LinkedModule]:
        source = f"import torch\n\n\ndef f(model):\n    x = torch.ones(2, device={device!r})\n    return x.tolist()\n\n\ng = torch.compile(f)\n"
        return [LinkedModule("app", False, extract_facts(source.encode()))]

    npu, cpu = files("npu"), files("cpu")
    assert npu[0].facts.flow.solver_digest() == cpu[0].facts.flow.solver_digest()
    assert npu[0].facts.host_calls != cpu[0].facts.host_calls
    graphs = SolvedGraphs()
    on_device = graphs.graph(npu, {})
    on_host = graphs.graph(cpu, {})
    assert solves == [1, 1]
    assert on_host.host_receivers and not on_device.host_receivers
