"""Make repros the way a user does (``graphlint repro`` in a subprocess) and run them in a fresh
folder where only graphlint can be imported; repros are cached for the session because each
costs a trace and a shrink (seconds of compiles)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

MadeRepro = Callable[..., Path]


def graphlint(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "graphlint", *args], cwd=cwd, env=env, capture_output=True, text=True)


@pytest.fixture(scope="session")
def graphlint_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only the graphlint package: the repro's import path, without the project."""
    folder = tmp_path_factory.mktemp("graphlint-only")
    (folder / "graphlint").symlink_to(REPO / "graphlint")
    return folder


@pytest.fixture(scope="session")
def run_repro(tmp_path_factory: pytest.TempPathFactory, graphlint_only: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Copy a repro into a fresh folder and run it there with ``python repro.py`` (and ``environ``)."""

    def run(repro: Path, **environ: str) -> subprocess.CompletedProcess[str]:
        fresh = tmp_path_factory.mktemp("fresh")
        shutil.copy(repro, fresh / "repro.py")
        env = {**os.environ, "PYTHONPATH": str(graphlint_only), **environ}
        return subprocess.run([sys.executable, "repro.py"], cwd=fresh, env=env, capture_output=True, text=True)

    return run


@pytest.fixture(scope="session")
def made_repro(tmp_path_factory: pytest.TempPathFactory) -> MadeRepro:
    """``made_repro(target, *options)``: the path of ``graphlint repro TARGET -o FILE *options``."""
    cache: dict[tuple[str, ...], Path] = {}

    def make(target: Path, *options: str) -> Path:
        key = (str(target), *options)
        if key not in cache:
            out = tmp_path_factory.mktemp("repro") / "repro.py"
            made = graphlint("repro", str(target), "-o", str(out), *options)
            assert made.returncode == 0, made.stderr[-3000:]
            cache[key] = out
        return cache[key]

    return make
