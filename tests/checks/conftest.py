from __future__ import annotations

import dataclasses
import io
import json
from contextlib import chdir, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from graphlint.checks import presets
from graphlint.cli import main


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        status = main(list(args))
    return status, out.getvalue()


def check_json(*args: str) -> tuple[int, dict[str, Any]]:
    """`graphlint check --format json ARGS`, parsed."""
    status, out = run_cli("check", "--format", "json", *args)
    return status, json.loads(out)


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One facts cache for the session: files shared between tests are parsed once."""
    return tmp_path_factory.mktemp("graphlint-cache")


def lint_project(root: Path, files: dict[str, str], *args: str, pyproject: str = "") -> tuple[int, dict[str, Any]]:
    """Write a small project (``pyproject.toml`` + ``files``) under ``root`` and check it."""
    (root / "pyproject.toml").write_text(pyproject)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    with chdir(root):  # paths in the report are then relative: "app.py:5"
        return check_json(".", "--no-cache", *args)


def found(report: dict[str, Any]) -> set[tuple[str, int]]:
    return {(f["code"], f["line"]) for f in report["findings"]}


@pytest.fixture
def held_sglang(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sglang preset as if it shipped opt-in (``auto = false``), the way a preset whose findings
    on its framework's own tree are not yet precise ships: importing sglang then holds it."""
    shipped = presets.all_presets()
    held = {**shipped, "sglang": dataclasses.replace(shipped["sglang"], auto=False)}
    monkeypatch.setattr(presets, "all_presets", lambda: held)
