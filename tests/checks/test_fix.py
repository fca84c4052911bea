"""--diff, --fix and --unsafe-fixes on real files: the fixed code parses, keeps its formatting,
and no longer has the finding."""

from __future__ import annotations

import textwrap
from contextlib import chdir
from pathlib import Path

import libcst as cst
import pytest

from tests.checks.conftest import check_json, found, run_cli

SOURCE = textwrap.dedent("""\
    import torch
    from torch import nn


    @torch.compile(dynamic=True)
    def shift(x):
        return x + 1


    class Rotary(nn.Module):
        def forward(self, x):
            # positions for every token
            pos = torch.arange(x.shape[1]).to(x.device)   # odd spacing is kept
            grid = (torch.zeros(2, 3, dtype=torch.float16,).to(device=x.device))
            idx = torch.ones(4).to(x.device, non_blocking=True)
            return shift(x + pos) + grid.sum() + idx


    class Runner:
        def __init__(self):
            self.model = Rotary()
            self.graph = torch.cuda.CUDAGraph()

        def capture(self, x):
            with torch.cuda.graph(self.graph):
                return self.model(x)
""")

SAFE_FIXED = SOURCE.replace(
    "torch.arange(x.shape[1]).to(x.device)", "torch.arange(x.shape[1], device=x.device)"
).replace(
    "(torch.zeros(2, 3, dtype=torch.float16,).to(device=x.device))",
    "(torch.zeros(2, 3, dtype=torch.float16, device=x.device))",
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "rotary.py").write_text(SOURCE)
    return tmp_path


def _check(project: Path) -> set[tuple[str, int]]:
    with chdir(project):
        return found(check_json("--no-cache", ".")[1])


def test_findings_before_fixing(project: Path) -> None:
    assert _check(project) == {
        ("GL101", 5), ("GL201", 13), ("GL203", 13), ("GL201", 14), ("GL203", 14), ("GL201", 15), ("GL203", 15),
    }


def test_diff_shows_safe_fixes_and_writes_nothing(project: Path) -> None:
    with chdir(project):
        status, out = run_cli("check", "--no-cache", "--diff", ".")
    assert status == 1
    assert "--- a/rotary.py" in out and "+++ b/rotary.py" in out
    assert "+        pos = torch.arange(x.shape[1], device=x.device)   # odd spacing is kept" in out
    assert "@torch.compile" not in out  # the unsafe fix needs --unsafe-fixes
    assert (project / "rotary.py").read_text() == SOURCE


def test_fix_applies_safe_fixes_keeping_formatting(project: Path) -> None:
    with chdir(project):
        status, _ = run_cli("check", "--no-cache", "--fix", ".")
    fixed = (project / "rotary.py").read_text()
    assert fixed == SAFE_FIXED
    cst.parse_module(fixed)
    # The non_blocking copy has no safe fix; the nested decorator needs --unsafe-fixes.
    assert _check(project) == {("GL101", 5), ("GL201", 15), ("GL203", 15)}
    assert status == 1


def test_unsafe_fixes_remove_the_nested_decorator(project: Path) -> None:
    with chdir(project):
        run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", ".")
    fixed = (project / "rotary.py").read_text()
    assert "@torch.compile" not in fixed
    assert "\n\ndef shift(x):\n    return x + 1\n" in fixed
    assert _check(project) == {("GL201", 14), ("GL203", 14)}  # one line less above
