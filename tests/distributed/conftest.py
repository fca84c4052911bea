"""Run multi-rank traces the way a user does (``graphlint trace TARGET --nproc N``: torchrun,
gloo, real rank processes) and parse the merged JSON; runs are cached for the session since
each costs half a minute on two cores."""

from __future__ import annotations

import contextlib
import io
import json
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from graphlint.cli import main

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples" / "distributed"
TARGETS = Path(__file__).resolve().parent / "targets"
STAGES = "eager,dynamo,aot"  # torchair and capture add nothing to a multi-rank comparison

DistributedRun = Callable[..., tuple[int, dict[str, Any]]]


JOB_VARIABLE = "GRAPHLINT_TEST_JOB"  # set for one job: every process of it inherits it


def processes_of_job(job: str) -> list[str]:
    """Command lines of the live processes (not zombies) whose environment has
    ``GRAPHLINT_TEST_JOB=job``: the launcher's torchrun, the ranks and their workers."""
    return list(live_processes_of_job(job).values())


def live_processes_of_job(job: str) -> dict[int, str]:
    """Those processes by pid."""
    marker = f"{JOB_VARIABLE}={job}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state != "Z":
            found[int(entry.name)] = cmdline
    return found


@contextlib.contextmanager
def job_environment() -> Iterator[str]:
    """Mark the processes started inside the block (they inherit the variable) as one job."""
    job = uuid.uuid4().hex
    os.environ[JOB_VARIABLE] = job
    try:
        yield job
    finally:
        del os.environ[JOB_VARIABLE]


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
            with job_environment() as job, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                status = main(argv)
            assert out.getvalue(), f"no report on stdout; stderr:\n{err.getvalue()}"
            assert processes_of_job(job) == [], "processes of the job were left behind"
            cache[key] = (status, json.loads(out.getvalue()))
        return cache[key]

    return run
