"""The value flow solved ahead on another thread (``SolvedGraphs.solve_ahead``): opened with its
graph read from the cache, the project is solved while the editor is idle, and the first edit
that changes what flows re-derives or extends that solve instead of solving in full. Each
edit's graph is compared with a fresh full solve, whether the edit came after the solve ahead
ended or while it ran; a solve ahead of a project the solve's inputs have moved on from is
dropped."""

from __future__ import annotations

import gc
import logging
import random
import threading
from pathlib import Path
from typing import Any

import pytest

from graphlint.checks import valueflow
from graphlint.checks.cache import FactsCache
from graphlint.checks.collector import collector_paused
from graphlint.checks.facts import ExtractOptions
from graphlint.checks.graph_cache import SolvedGraphs
from graphlint.checks.incremental_solve import LiveSolve
from graphlint.checks.valueflow import solve

from .test_incremental_solve import canonical, linked
from .test_rederive import BASE, edit

ADDED = "    w = int(torch.ones(2).sum())\n"  # appended to app/entry.py's ``run``: calls the value flow follows


@pytest.fixture
def full_solves(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads a full solve ran on (``Solver.run``), one entry per solve."""
    threads: list[str] = []
    real = valueflow.Solver.run

    def run(self: valueflow.Solver) -> valueflow.CallGraph:
        threads.append(threading.current_thread().name)
        return real(self)

    monkeypatch.setattr(valueflow.Solver, "run", run)
    return threads


def read_from_cache(tmp_path: Path, sources: dict[str, str]) -> SolvedGraphs:
    """A server's graphs with the project's graph read from the cache: no solver kept."""
    SolvedGraphs(FactsCache(tmp_path, ExtractOptions())).graph(linked(sources), {}, {})  # fills the cache
    graphs = SolvedGraphs(FactsCache(tmp_path, ExtractOptions()), incremental=True)
    graphs.graph(linked(sources), {}, {})
    assert graphs._live is None
    return graphs


def solved_ahead(graphs: SolvedGraphs, waited: bool) -> None:
    """Start the solve ahead; ``waited``: until it ended and was taken (else it ends 0.2 s
    later, while the next edit waits for it)."""
    ended = threading.Event()
    gate = threading.Event()  # the solve ahead starts when the test says
    real = LiveSolve.__init__

    def gated(self: LiveSolve, *args: Any) -> None:
        gate.wait()
        real(self, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LiveSolve, "__init__", gated)
        graphs.solve_ahead(ended.set)
        if waited:
            gate.set()
            assert ended.wait(60)
            graphs.take_solved_ahead()
            assert graphs._live is not None
        else:
            threading.Timer(0.2, gate.set).start()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("waited", [True, False])
def test_edits_after_a_solve_ahead_answer_as_a_full_solve(tmp_path: Path, full_solves: list[str], seed: int, waited: bool) -> None:
    sources = dict(BASE)
    graphs = read_from_cache(tmp_path, sources)
    full_solves.clear()
    solved_ahead(graphs, waited)
    rng = random.Random(seed)
    for n in range(12):
        if n == 0:  # what only a variable nothing reads holds: re-derived, no solve in full
            sources = {**sources, "app/helpers.py": sources["app/helpers.py"].replace("other = unused", "other = kept")}
        else:
            sources = edit(sources, rng)
        files = linked(sources)
        got = graphs.graph(files, {}, {})
        if n == 0:
            assert full_solves == ["graphlint-solve-ahead"], full_solves
            assert graphs._live is not None and graphs._live.rederived
        assert canonical(got) == canonical(solve(files)), (seed, n, sources)


def test_an_edit_that_adds_a_call_extends_the_solve_ahead(tmp_path: Path, full_solves: list[str]) -> None:
    sources = dict(BASE)
    graphs = read_from_cache(tmp_path, sources)
    full_solves.clear()
    solved_ahead(graphs, waited=False)
    edited = {**sources, "app/entry.py": sources["app/entry.py"] + ADDED}
    files = linked(edited)
    got = graphs.graph(files, {}, {})
    assert full_solves == ["graphlint-solve-ahead"]
    assert canonical(got) == canonical(solve(files))


def test_a_solve_ahead_of_a_project_since_changed_is_dropped(tmp_path: Path, full_solves: list[str], caplog: pytest.LogCaptureFixture) -> None:
    """While the project is solved ahead, an edit changes the solve's inputs to those of a graph
    in the cache (solving nothing, so not waiting for it): the solve ahead is of a project that
    is no longer the one checked, and is not kept; the next edit solves in full."""
    sources = dict(BASE)
    graphs = read_from_cache(tmp_path, sources)
    edited = {**sources, "app/entry.py": sources["app/entry.py"] + ADDED}
    SolvedGraphs(FactsCache(tmp_path, ExtractOptions())).graph(linked(edited), {}, {})  # its graph in the cache now
    full_solves.clear()
    ended = threading.Event()
    graphs.solve_ahead(ended.set)
    assert ended.wait(60)
    files = linked(edited)
    assert canonical(graphs.graph(files, {}, {})) == canonical(solve(files))  # read from the cache
    with caplog.at_level(logging.INFO, logger="graphlint.checks.graph_cache"):
        graphs.take_solved_ahead()
    assert graphs._live is None and "value flow solved ahead dropped" in caplog.text
    again = linked({**edited, "app/entry.py": edited["app/entry.py"] + "    v = int(2)\n"})
    full_solves.clear()
    assert canonical(graphs.graph(again, {}, {})) == canonical(solve(again))
    assert full_solves == ["MainThread", "MainThread"]  # the project before the edit (then extended), the fresh one


def test_a_check_that_ends_while_the_project_is_solved_ahead_leaves_the_collector_off(tmp_path: Path) -> None:
    """The solve ahead runs with the cyclic collector off (its millions of objects, frozen when
    it ends); a check on the server's thread that paused it first and ends first does not turn
    it on under the solve."""
    graphs = read_from_cache(tmp_path, dict(BASE))
    solving, gate, ended = threading.Event(), threading.Event(), threading.Event()
    real = LiveSolve.__init__

    def gated(self: LiveSolve, *args: Any) -> None:
        solving.set()
        gate.wait()
        real(self, *args)

    assert gc.isenabled()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LiveSolve, "__init__", gated)
        with collector_paused():  # a check, under way when the solve ahead starts
            graphs.solve_ahead(ended.set)
            assert solving.wait(60)
        assert not gc.isenabled()
        gate.set()
        assert ended.wait(60)
    graphs.take_solved_ahead()
    assert gc.isenabled() and graphs._live is not None
