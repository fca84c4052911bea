"""Running ``graphlint check`` the way users do: the installed console script, in a subprocess.

A subprocess, not ``cli.main``: a crash of the checker (a signal from libcst's native parser, a
hang) must fail the test, not take pytest down with it; and the console script, unlike
``python -m``, does not put the working directory on ``sys.path``, as in pre-commit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GRAPHLINT = Path(sys.executable).with_name("graphlint")

# One finding, known exactly: `.item()` inside a captured function (GL202 at line 6, column 12).
CAPTURE_SYNC = """\
import torch


@torch.compile(mode="reduce-overhead")
def step(x):
    return x.item()
"""
CAPTURE_SYNC_FINDING = ("GL202", 6, 12)


@dataclass
class CheckRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def report(self) -> dict[str, Any]:
        return json.loads(self.stdout)

    def findings(self, code: str | None = None) -> list[dict[str, Any]]:
        return [f for f in self.report["findings"] if code is None or f["code"] == code]

    def by_path(self) -> dict[str, list[tuple[str, int, int]]]:
        """path → [(code, line, column)] of its findings."""
        found: dict[str, list[tuple[str, int, int]]] = {}
        for f in self.report["findings"]:
            found.setdefault(f["path"], []).append((f["code"], f["line"], f["column"]))
        return found


def graphlint_check(
    *args: str | Path,
    cwd: Path,
    timeout: float = 120,
    preexec_fn: Callable[[], None] | None = None,
    env: dict[str, str] | None = None,
) -> CheckRun:
    """``graphlint check ARGS`` in ``cwd``; a JSON report unless ``args`` pick another format."""
    command: list[str] = [str(GRAPHLINT), "check", *map(str, args)]
    if not any(str(a).startswith("--format") for a in args) and "--diff" not in args:
        command += ["--format", "json"]
    result = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=timeout, preexec_fn=preexec_fn, env=env
    )
    if result.returncode < 0:
        raise AssertionError(f"graphlint check died of signal {-result.returncode}:\n{result.stderr[-3000:]}")
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return CheckRun(result.returncode, result.stdout, result.stderr)


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def findings_without_timing(report: dict[str, Any]) -> dict[str, Any]:
    """The report minus the one field that differs between identical runs."""
    return {**report, "summary": {k: v for k, v in report["summary"].items() if k != "seconds"}}


def assert_same_findings(runs: Sequence[CheckRun]) -> None:
    first = findings_without_timing(runs[0].report)
    for run in runs[1:]:
        assert findings_without_timing(run.report) == first
