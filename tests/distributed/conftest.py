"""Run multi-rank traces the way a user does (``graphlint trace TARGET --nproc N``: torchrun,
gloo, real rank processes) and parse the merged JSON; runs are cached for the session since
each costs half a minute on two cores."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graphlint.cli import main

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples" / "distributed"
TARGETS = Path(__file__).resolve().parent / "targets"
STAGES = "eager,dynamo,aot"  # torchair and capture add nothing to a multi-rank comparison

DistributedRun = Callable[..., tuple[int, dict[str, Any]]]


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes (not zombies) that mention ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(cmdline)
    return found


@pytest.fixture(scope="session")
def distributed_run() -> DistributedRun:
    """``distributed_run(target, nproc, *options)`` → (exit status, merged report); cached. Asserts
    that no process of the job is left once the command returns."""
    cache: dict[tuple[str, ...], tuple[int, dict[str, Any]]] = {}

    def run(target: Path, nproc: int, *options: str) -> tuple[int, dict[str, Any]]:
        key = (str(target), str(nproc), *options)
        if key not in cache:
            out, err = io.StringIO(), io.StringIO()
            argv = ["trace", os.path.relpath(target), "--nproc", str(nproc), "--stages", STAGES, "--format", "json"]
            argv += options
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = main(argv)
            assert out.getvalue(), f"no report on stdout; stderr:\n{err.getvalue()}"
            assert processes_mentioning(target.name) == [], "processes of the job were left behind"
            cache[key] = (status, json.loads(out.getvalue()))
        return cache[key]

    return run
