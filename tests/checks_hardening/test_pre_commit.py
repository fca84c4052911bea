"""graphlint as a pre-commit hook, for real: a temporary git repository uses a snapshot of this
checkout (committed and uncommitted work alike: ``rev:`` only sees commits) as its hook repo;
``pre-commit`` builds the hook's own environment from ``.pre-commit-hooks.yaml`` (``pip install``
of graphlint and its light dependencies, never torch), fails the commit on a GL201 in a capture
region and passes once the line is fixed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GIT_IDENTITY = ("-c", "user.name=graphlint tests", "-c", "user.email=tests@graphlint.invalid", "-c", "commit.gpgsign=false")

MODEL = """\
import torch


@torch.compile(mode="reduce-overhead")
def step(x):
    offsets = torch.arange(4).to(x.device)
    return x + offsets
"""
MODEL_FIXED = MODEL.replace("torch.arange(4).to(x.device)", "torch.arange(4, device=x.device)")


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *GIT_IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def snapshot_of_checkout(destination: Path) -> str:
    """This working tree as it is now, committed into a repository of its own; its commit id."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO)
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    git("init", "-q", cwd=destination)
    git("add", "-A", cwd=destination)
    git("commit", "-q", "-m", "snapshot", cwd=destination)
    return git("rev-parse", "HEAD", cwd=destination).strip()


def pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("GRAPHLINT_CACHE_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_pre_commit_fails_on_gl201_in_capture_and_passes_when_fixed(tmp_path):
    assert (REPO / ".pre-commit-hooks.yaml").is_file()
    hook_repo = tmp_path / "graphlint-hook"
    rev = snapshot_of_checkout(hook_repo)

    project = tmp_path / "project"
    project.mkdir()
    git("init", "-q", cwd=project)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: graphlint\n", encoding="utf-8"
    )
    (project / "model.py").write_text(MODEL, encoding="utf-8")
    git("add", "-A", cwd=project)
    home = tmp_path / "pre-commit-home"

    failing = pre_commit("run", "--all-files", cwd=project, home=home)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "model.py:6:" in failing.stdout and "GL201" in failing.stdout, failing.stdout

    (project / "model.py").write_text(MODEL_FIXED, encoding="utf-8")
    git("add", "-A", cwd=project)
    passing = pre_commit("run", "--all-files", cwd=project, home=home)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "graphlint" in passing.stdout and "Passed" in passing.stdout
