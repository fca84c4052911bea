"""Run ``graphlint trace`` the way a user does (the CLI, real worker processes) and parse its
JSON; runs are cached for the session because every compile costs seconds."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graphlint.cli import main

REPO = Path(__file__).resolve().parents[2]
TARGETS = Path(__file__).resolve().parent / "targets"

TraceRun = Callable[..., tuple[int, dict[str, Any]]]


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="session")
def trace_json() -> TraceRun:
    """``trace_json(target, *options)`` → (exit status, report object); cached per arguments."""
    cache: dict[tuple[str, ...], tuple[int, dict[str, Any]]] = {}

    def run(target: str | Path, *options: str) -> tuple[int, dict[str, Any]]:
        key = (str(target), *options)
        if key not in cache:
            status, out, err = run_cli("trace", str(target), "--format", "json", *options)
            assert out, f"no report on stdout; stderr:\n{err}"
            cache[key] = (status, json.loads(out))
        return cache[key]

    return run
