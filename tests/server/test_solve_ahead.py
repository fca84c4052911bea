"""The value flow solved ahead (``SolvedGraphs.solve_ahead``), through the real client: a project
whose graph the server reads from the facts cache is solved on another thread once diagnostics
are out, and the first edit that changes what flows re-derives or extends that solve instead
of solving the project in full. What the server publishes is what a fresh ``graphlint check``
of the edited text reports, whether the edit came after the solve ahead ended or while it ran;
``solveAhead`` off, the first such edit solves in full as before."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lsprotocol import types

from tests.server.client import GRAPHLINT, WAIT, Editor
from tests.server.test_server import EXTENDED_HELPERS, RUN_COMPILED, TO_HOST_LINE, editor, run, write_project

# ``y`` is read by nothing: what it is assigned may change without anything else changing
MODEL = textwrap.dedent("""\
    from torch import nn

    from .helpers import build_positions, to_host


    class Decoder(nn.Module):
        def forward(self, x):
            h = build_positions(x)
            y = h
            return x + h
""")
CHANGED_MODEL = MODEL.replace("y = h", "y = x")  # re-derived in the kept solve (``rederive.py``)
CALLING_MODEL = MODEL + "        z = to_host(x)\n"  # a call appended: extends the kept solve
SOLVED_AHEAD = "value flow solved ahead, kept for the next edit"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The project, its graph in the facts cache (``graphlint check``): opened, nothing is solved."""
    root = write_project(tmp_path, EXTENDED_HELPERS, MODEL, RUN_COMPILED)
    subprocess.run([sys.executable, str(GRAPHLINT), "check", "--cache-dir", str(tmp_path / "cache"), str(root)],
                   capture_output=True, check=False, timeout=WAIT)
    return root


def fresh_check(project: Path, tmp_path: Path, edited: dict[str, str], path: str) -> list[tuple[str, int]]:
    """What ``graphlint check`` reports in ``path`` of a copy of ``project`` with ``edited`` saved."""
    copy = tmp_path / "fresh"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(project, copy)
    for name, text in edited.items():
        (copy / name).write_text(text, encoding="utf-8")
    result = subprocess.run([sys.executable, str(GRAPHLINT), "check", "--no-cache", "--format", "json", str(copy)],
                            capture_output=True, text=True, check=False, timeout=WAIT, cwd=copy)
    return sorted((f["code"], f["line"] - 1) for f in json.loads(result.stdout)["findings"] if f["path"] == path)


def published(diagnostics: list[types.Diagnostic]) -> list[tuple[str, int]]:
    return sorted((str(d.code), d.range.start.line) for d in diagnostics)


def solves(logs: list[str]) -> list[str]:
    return [m for m in logs if m.startswith("value flow")]


async def logged(ed: Editor, start: str) -> None:
    """Until the server logged a line that starts with ``start``."""
    async def wait() -> None:
        while not any(m.startswith(start) for m in ed.logs):
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(wait(), WAIT)
    except TimeoutError:
        raise AssertionError(f"no {start!r} in {ed.logs}") from None


def test_the_first_edit_that_changes_what_flows_re_derives_the_solve_ahead(project, tmp_path):
    model = project / "pkg" / "model.py"

    async def session() -> None:
        async with editor(project, tmp_path) as ed:
            ed.open(model)
            await ed.diagnostics(model, version=1)
            await logged(ed, SOLVED_AHEAD)
            assert solves(ed.logs)[0].startswith(SOLVED_AHEAD), ed.logs  # the open read the graph from the cache
            ed.logs.clear()
            version = ed.change(model, CHANGED_MODEL)
            found = await ed.diagnostics(model, version=version)
            assert solves(ed.logs) and "changed assignments re-derived" in solves(ed.logs)[0], ed.logs
            assert published(found) == fresh_check(project, tmp_path, {"pkg/model.py": CHANGED_MODEL}, "pkg/model.py")

    run(session())


GATE = textwrap.dedent("""\
    # The solve ahead waits until the test creates the gate file, so that an edit comes while it runs.
    import os, threading, time
    from graphlint.checks.incremental_solve import LiveSolve

    real = LiveSolve.__init__

    def gated(self, *args):
        if threading.current_thread().name == "graphlint-solve-ahead":
            while not os.path.exists(os.environ["GRAPHLINT_TEST_GATE"]):
                time.sleep(0.01)
        real(self, *args)

    LiveSolve.__init__ = gated
""")


def test_an_edit_while_the_project_is_solved_ahead_waits_for_it_and_is_exact(project, tmp_path):
    helpers, model = project / "pkg" / "helpers.py", project / "pkg" / "model.py"
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(GATE, encoding="utf-8")
    gate = tmp_path / "gate"
    env = {**os.environ, "GRAPHLINT_TEST_GATE": str(gate),
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}

    async def session() -> None:
        async with editor(project, tmp_path, env=env) as ed:
            ed.open(helpers)
            before = await ed.diagnostics(helpers, version=1)
            assert TO_HOST_LINE not in {line for _, line in published(before)}
            ed.open(model)
            ed.change(model, CALLING_MODEL)  # reaches ``to_host``: a finding there
            await asyncio.sleep(1.0)  # the check of the edit waits for the solve ahead
            assert not solves(ed.logs), ed.logs
            gate.touch()
            found = await ed.diagnostics(helpers, lambda p: TO_HOST_LINE in {d.range.start.line for d in p.diagnostics})
            waited, extended = solves(ed.logs)[:2]
            assert waited.startswith(SOLVED_AHEAD) and "the edit waited" in waited, ed.logs
            assert extended.startswith("value flow extended in place"), ed.logs
            assert published(found) == fresh_check(project, tmp_path, {"pkg/model.py": CALLING_MODEL}, "pkg/helpers.py")

    run(session())


@pytest.mark.parametrize("off", [("--no-solve-ahead",), {"solveAhead": False}], ids=["flag", "initialization-option"])
def test_without_solving_ahead_the_first_edit_that_changes_what_flows_solves_in_full(project, tmp_path, off):
    model = project / "pkg" / "model.py"
    args, options = (off, None) if isinstance(off, tuple) else ((), off)

    async def session() -> None:
        async with editor(project, tmp_path, *args, initialization_options=options) as ed:
            ed.open(model)
            await ed.diagnostics(model, version=1)
            version = ed.change(model, CHANGED_MODEL)
            found = await ed.diagnostics(model, version=version)
            assert [m.split(" (")[0] for m in solves(ed.logs)] == ["value flow solved in full"], ed.logs
            assert published(found) == fresh_check(project, tmp_path, {"pkg/model.py": CHANGED_MODEL}, "pkg/model.py")
            assert not ed.messages  # the option is known

    run(session())
