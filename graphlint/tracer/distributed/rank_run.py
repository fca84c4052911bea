"""One rank's ``graphlint trace`` under torchrun: the ordinary ladder, coordinated with the other
ranks through the job folder. A rank whose stage crashes or hangs ends its ladder and posts a
stop note; the others then stop too (their stacks dumped first: they show where they waited),
so nothing is left running. Every rank writes its report; rank 0 waits for them and merges."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

from graphlint.tracer.distributed.job import STALE_NOTE_SECONDS, JobFiles, RankInfo, read_json, write_json
from graphlint.tracer.ladder import STARTUP_ALLOWANCE_SECONDS, run_ladder
from graphlint.tracer.stages.base import TraceOptions
from graphlint.tracer.target import TargetError

POLL_SECONDS = 0.2
# How long a rank that took the stacks of its hung worker waits for the other ranks to take
# theirs before its worker is killed (which lets their collectives fail and move on).
STACKS_WAIT_SECONDS = 3.0
STACKS_POLL_SECONDS = 0.02
# Rank 0 finished its ladder; a peer still running is at most in a stage that its own timeout
# (and the startup allowance, while loading) will end, plus this margin.
MERGE_MARGIN_SECONDS = 15.0


def run_rank(
    info: RankInfo, target_spec: str, options: TraceOptions, entry: str | None, script_args: list[str]
) -> dict[str, Any] | None:
    """Run this rank's ladder and write its report. Rank 0 returns the merged report of the
    job; the other ranks return None (their report is in rank 0's)."""
    from graphlint.tracer.distributed.merge import merge_reports

    started = time.time()
    files = JobFiles(info.folder, started)
    write_json(files.process(info.rank), {"pid": os.getpid()})
    if options.dump_dir is not None:
        options = dataclasses.replace(options, dump_dir=options.dump_dir / f"rank-{info.rank}")
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        try:
            report = run_ladder(target_spec, options, entry, script_args, peers=RankPeers(files, info))
        except TargetError as exc:
            files.post_stop(info.rank, f"the target did not load on rank {info.rank}")
            raise exc
        report["rank"] = {
            "rank": info.rank, "world_size": info.world_size, "local_rank": info.local_rank,
            "facts": read_json(files.facts(info.rank)),
            "collectives": read_json(files.collectives(info.rank)),
            "progress": read_json(files.progress(info.rank)),
        }
        write_json(files.report(info.rank), report)
        if options.dump_dir is not None:  # DIR/rank-N/, beside the rank's graphs
            write_json(options.dump_dir / "report.json", report)
        if info.rank != 0:
            return None
        deadline = time.monotonic() + options.timeout + STARTUP_ALLOWANCE_SECONDS + MERGE_MARGIN_SECONDS
        reports = wait_for_reports(files, info.world_size, started, deadline)
        merged = merge_reports(reports, info.world_size, options.lang)
        write_json(files.merged, merged)
        return merged
    finally:
        signal.signal(signal.SIGTERM, previous)


class RankPeers:
    """The other ranks of the job, as the ladder sees them (``graphlint.tracer.ladder.Peers``),
    through the job folder."""

    def __init__(self, files: JobFiles, info: RankInfo) -> None:
        self.files, self.info = files, info

    def stop_reason(self) -> str | None:
        return self.files.stop_reason_for(self.info.rank)

    def stopping(self, reason: str) -> None:
        self.files.post_stop(self.info.rank, reason)

    def stacks_taken(self) -> None:
        """Mark this rank's stacks as taken, then wait until every other rank has taken its
        own or finished (a rank that is gone is waited for only ``STACKS_WAIT_SECONDS``)."""
        write_json(self.files.stacks_taken(self.info.rank), time.time())
        others = [r for r in range(self.info.world_size) if r != self.info.rank]
        give_up = time.monotonic() + STACKS_WAIT_SECONDS
        while time.monotonic() < give_up:
            if all(self._fresh(self.files.stacks_taken(r)) or self._fresh(self.files.report(r)) for r in others):
                return
            time.sleep(STACKS_POLL_SECONDS)

    def _fresh(self, path: Path) -> bool:
        """Written by this job, not left by an earlier one in the same folder."""
        try:
            return path.stat().st_mtime >= (self.files.started or 0.0) - STALE_NOTE_SECONDS
        except OSError:
            return False


def wait_for_reports(
    files: JobFiles, world_size: int, since: float, deadline: float
) -> dict[int, dict[str, Any] | None]:
    """Every rank's report written after ``since`` (older ones are from an earlier job in the
    same folder), waiting until ``deadline`` for the missing ones."""
    while True:
        reports = {rank: _fresh_report(files, rank, since) for rank in range(world_size)}
        if all(r is not None for r in reports.values()) or time.monotonic() > deadline:
            return reports
        time.sleep(POLL_SECONDS)


def _fresh_report(files: JobFiles, rank: int, since: float) -> dict[str, Any] | None:
    path = files.report(rank)
    try:
        if path.stat().st_mtime < since:
            return None
    except OSError:
        return None
    return read_json(path)


def _exit_on_sigterm(signum: int, _frame: FrameType | None) -> None:
    """torchrun stops ranks with SIGTERM; exiting by an exception lets the supervisor's
    ``finally`` blocks kill the worker's session, so no worker is orphaned."""
    sys.exit(128 + signum)
