"""Hangs and dead ranks: the merge names the first rank that stopped progressing (or died), the
others are stopped with their stacks, and nothing is left running."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from graphlint.tracer.distributed.hangs import hang_findings
from graphlint.tracer.distributed.views import RankView
from tests.distributed.conftest import REPO, SAMPLES, STAGES, TARGETS, job_environment, live_processes_of_job, processes_of_job

SLEEPS = SAMPLES / "rank_sleeps.py"

def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


SLEEP_LINE, ALL_REDUCE_LINE = line_of(SLEEPS, "time.sleep("), line_of(SLEEPS, "dist.all_reduce(")


def test_stuck_rank_and_waiting_ranks_are_located_from_their_stack_dumps(distributed_run) -> None:
    _, report = distributed_run(SLEEPS, 2, "--timeout", "10")
    endings = {entry["rank"]: entry["ending"] for entry in report["ranks"]}
    assert endings[0]["where"] == {"file": os.path.relpath(SLEEPS), "line": ALL_REDUCE_LINE, "collective": "all_reduce"}
    assert endings[1]["where"] == {"file": os.path.relpath(SLEEPS), "line": SLEEP_LINE, "collective": None}
    assert all(e["last_progress"] <= e["ended_at"] for e in endings.values())
    # later stages cannot line up again after a hang: every rank skips them
    for entry in report["ranks"]:
        assert [row["status"] for row in entry["stages"]] == ["failed", "skipped", "skipped"]


def test_when_every_rank_waits_in_the_same_collective_the_oldest_progress_is_named(distributed_run) -> None:
    _, report = distributed_run(SLEEPS, 2, "--timeout", "10")
    # rank 0's real dump (waiting in all_reduce; it hung, or was stopped when rank 1 hung first),
    # given to three ranks that got there at different times
    rank0 = {"findings": [f for f in report["findings"] if f["kind"] in ("hang", "stopped") and f["ranks"] == [0]]}
    assert rank0["findings"], report["findings"]
    progress = report["ranks"][0]["progress"]
    views = []
    for rank, since in enumerate((progress["since"], progress["since"] - 30.0, progress["since"] + 5.0)):
        rank_report = copy.deepcopy(rank0)
        rank_report["rank"] = {"progress": {"since": since, "where": progress["where"]}}
        views.append(RankView(rank, rank_report))
    (finding,) = hang_findings(views)
    assert finding.details["ranks"] == [1]
    assert finding.line == ALL_REDUCE_LINE
    assert "rank 1 last progressed" in finding.message and "inside all_reduce" in finding.message
    assert "ranks 0, 2 are waiting in all_reduce" in finding.message


def test_a_rank_that_dies_is_named_and_the_others_are_stopped(distributed_run) -> None:
    target = TARGETS / "rank_dies.py"
    status, report = distributed_run(target, 2, "--timeout", "60")
    assert status == 1
    died = next(f for f in report["findings"] if f["kind"] == "rank-died")
    # no stacks after SIGKILL: the line is where the progress watcher last saw the rank
    assert (died["code"], died["ranks"], died["line"]) == ("GD006", [1], line_of(target, "time.sleep("))
    assert report["verdict"]["layer"] == "distributed" and report["verdict"]["ranks"] == [1]
    assert "SIGKILL" in died["message"]


def test_four_ranks_under_torchrun_rank_0_prints_the_merged_report(tmp_path: Path) -> None:
    """``torchrun ... -m graphlint trace`` without --nproc: every rank traces, rank 0 merges."""
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=4",
        "-m", "graphlint", "trace", os.path.relpath(SLEEPS, REPO), "--stages", STAGES, "--timeout", "10",
        "--format", "json",
    ]
    with job_environment() as job:
        env = {**os.environ, "GRAPHLINT_RANKS_DIR": str(tmp_path), "OMP_NUM_THREADS": "1"}
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["world_size"] == 4 and all(entry["reported"] for entry in report["ranks"])
    hang = next(f for f in report["findings"] if f["layer"] == "distributed")
    assert (hang["code"], hang["ranks"], hang["line"]) == ("GD005", [1], SLEEP_LINE)
    assert "ranks 0, 2, 3 are waiting in all_reduce" in hang["message"]
    assert json.loads((tmp_path / "merged.json").read_text()) == report
    assert processes_of_job(job) == []


def test_interrupting_graphlint_leaves_no_process_of_the_job() -> None:
    command = [sys.executable, "-m", "graphlint", "trace", os.path.relpath(SLEEPS, REPO), "--nproc", "2", "--stages", "eager"]
    with job_environment() as job:
        # Ctrl-C in a terminal: SIGINT handled as Python does by default. A parent that ignores it
        # (a shell's background job without job control, as `make test &` is) would hand the
        # launcher an ignored SIGINT, which it rightly keeps ignoring.
        launcher = subprocess.Popen(
            command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    try:
        deadline = time.monotonic() + 120
        while sum("graphlint.tracer.worker" in p for p in processes_of_job(job)) < 2:  # both ranks are tracing
            assert launcher.poll() is None and time.monotonic() < deadline, "the ranks' workers never started"
            time.sleep(0.5)
        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(timeout=60) == 130
        assert processes_of_job(job) == []
    finally:  # a failure here must not leave the job running beside the rest of the suite
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        for pid in live_processes_of_job(job):
            os.kill(pid, signal.SIGKILL)
