"""A target that segfaults or hangs still gets a report: a crash/hang finding of the running
stage, the next stages run in a fresh worker, and no process of the trace outlives it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.tracer.conftest import TARGETS


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie is dead, waiting for its parent


def _wait_gone(pids: list[int], seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


@pytest.fixture(scope="module")
def pid_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pids") / "pids.txt"
    os.environ["GRAPHLINT_TEST_PID_FILE"] = str(path)
    yield path
    del os.environ["GRAPHLINT_TEST_PID_FILE"]


def test_segfault_in_forward_is_a_crash_finding_of_each_stage_that_runs_it(trace_json, pid_file: Path) -> None:
    target = TARGETS / "segfault.py"
    status, report = trace_json(os.path.relpath(target), "--stages", "eager,dynamo")
    assert status == 1
    assert [(s["name"], s["status"]) for s in report["stages"]] == [("eager", "failed"), ("dynamo", "failed")]
    assert not any("cpu_seconds" in s for s in report["stages"])  # no worker lived to measure them
    crashes = [f for f in report["findings"] if f["kind"] == "crash"]
    assert [f["stage"] for f in crashes] == ["eager", "dynamo"]
    for finding in crashes:
        assert finding["code"] == "GT005" and "SIGSEGV" in finding["message"]
        assert Path(finding["file"]).resolve() == target.resolve() and finding["line"] == 14
        assert "Segmentation fault" in finding["details"]["stacks"]
        assert finding["refs"]  # the knowledge base's crash hint
    assert report["verdict"]["layer"] == "model"
    assert _wait_gone([int(p) for p in pid_file.read_text().split()]) == []


def test_hang_in_forward_is_stopped_with_python_stacks_and_no_orphans(trace_json, pid_file: Path) -> None:
    pid_file.write_text("")
    target = TARGETS / "sleeps.py"
    status, report = trace_json(os.path.relpath(target), "--stages", "eager,dynamo", "--timeout", "4")
    assert status == 1
    hangs = [f for f in report["findings"] if f["kind"] == "hang"]
    assert [f["stage"] for f in hangs] == ["eager", "dynamo"]
    eager_hang = hangs[0]
    assert eager_hang["code"] == "GT006" and "the eager stage did not finish within 4 s" in eager_hang["message"]
    assert Path(eager_hang["file"]).resolve() == target.resolve() and eager_hang["line"] == 18
    assert "in forward" in eager_hang["details"]["stacks"]
    started = [int(p) for p in pid_file.read_text().split()]
    assert len(started) >= 2  # the worker and the child it started in forward
    assert _wait_gone(started) == []
