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


@pytest.mark.parametrize("hangs", [False, True], ids=["crash", "hang"])
def test_a_crash_or_hang_of_torchair_inside_the_one_compile_is_the_torchair_stages(
    hangs: bool, monkeypatch: pytest.MonkeyPatch, trace_json, torch_npu_wheel: Path
) -> None:
    """torchair translates inside the dynamo stage's compile (one_compile.py): its crash or hang
    there is still the torchair stage's finding, and dynamo and aot report from a fresh worker."""
    target = TARGETS / "sees_torchair.py"
    monkeypatch.setenv("GRAPHLINT_TEST_TORCHAIR_CRASH", "1")
    if hangs:
        monkeypatch.setenv("GRAPHLINT_TEST_TORCHAIR_HANG", "1")
    options = ("--stages", "eager,dynamo,aot,torchair", *(("--timeout", "30") if hangs else ()))
    status, report = trace_json(os.path.relpath(target), *options)
    assert status == 1
    assert [(s["name"], s["status"]) for s in report["stages"]] == [
        ("eager", "passed"), ("dynamo", "passed"), ("aot", "passed"), ("torchair", "failed"),
    ]
    (finding,) = [f for f in report["findings"] if f["kind"] in ("crash", "hang")]
    assert finding["stage"] == "torchair" and finding["layer"] == "torchair"
    assert finding["code"] == ("GT006" if hangs else "GT005")
    line = "time.sleep(600)" if hangs else "ctypes.string_at(0)"
    lines = target.read_text().splitlines()
    assert Path(finding["file"]).resolve() == target.resolve()
    assert lines[finding["line"] - 1].strip() == line
    if hangs:
        assert "the torchair stage did not finish within 30 s" in finding["message"]
