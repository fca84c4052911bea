"""Which rank stopped the job. A collective waits for every rank, so one rank that stops
progressing leaves every other rank waiting inside the collective, and every log ends with the
same timeout (pytorch#1415: rank 3 stuck in initialisation, ranks 0-2 in HcclAllreduce). The
rank to look at is the first that stopped progressing: one that died, else one that is not in
the collective the others wait in, else the one whose last progress is oldest."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from graphlint.tracer.classify.codes import trace_code
from graphlint.tracer.distributed.stacks import Where, main_thread_frames, where_in_frames
from graphlint.tracer.distributed.views import RankView, clock, rank_list
from graphlint.tracer.findings import Finding
from graphlint.tracer.locate import display_path

ENDINGS = ("crash", "hang", "stopped")  # how a stage of a rank ends without a result


@dataclass
class RankEnding:
    """Where and when one rank's ladder ended without a result."""

    rank: int
    kind: str  # crash, hang or stopped
    stage: str
    message: str
    where: Where
    since: float | None  # when it got to where it is: its last progress
    ended_at: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank, "kind": self.kind, "stage": self.stage, "where": self.where.to_json(),
            "last_progress": self.since, "ended_at": self.ended_at,
        }


def rank_ending(view: RankView) -> RankEnding | None:
    finding = next((f for f in view.findings if f["kind"] in ENDINGS), None)
    if finding is None:
        return None
    details = finding.get("details", {})
    dumped = where_in_frames(main_thread_frames(details.get("stacks", "")), set())
    progress = view.side.get("progress") or {}
    watched = Where(**progress["where"]) if progress.get("where") else None
    if dumped.file is None and dumped.collective is None and watched is not None:
        where, since = watched, progress.get("since")  # no stacks (SIGKILL): where the watcher last saw it
    else:
        where = dumped
        same_place = watched is not None and (watched.line, watched.collective) == (dumped.line, dumped.collective)
        since = progress.get("since") if same_place else details.get("started_at")
    where = Where(display_path(where.file) if where.file else None, where.line, where.collective)
    return RankEnding(
        view.rank, finding["kind"], finding["stage"], finding["message"], where, since, details.get("ended_at")
    )


def hang_findings(views: list[RankView]) -> list[Finding]:
    """One finding for the rank(s) that stopped the job, then one per rank without a report."""
    endings = [e for e in (rank_ending(v) for v in views if v.report is not None) if e is not None]
    found = []
    died = sorted((e for e in endings if e.kind == "crash"), key=lambda e: e.ended_at or 0.0)
    stuck = [e for e in endings if e.kind != "crash"]
    if died:
        found.append(_died_finding(died, stuck))
    elif stuck:
        found.append(_stuck_finding(stuck))
    for view in views:
        if view.report is None:
            found.append(
                Finding(
                    layer="distributed", stage="merge", kind="rank-missing", code=trace_code("rank-missing"),
                    message=f"rank {view.rank} wrote no report: its graphlint process was killed, or was still "
                    "running when rank 0 stopped waiting",
                    details={"ranks": [view.rank]},
                )
            )
    return found


def _waiting(endings: list[RankEnding]) -> str:
    """``; ranks 0, 2 are waiting in all_reduce at model.py:88 (since …)``: the ranks stuck
    behind the one named, grouped by place."""
    by_place: dict[str, list[RankEnding]] = {}
    for e in endings:
        by_place.setdefault(e.where.describe(), []).append(e)
    return "".join(
        f"; {rank_list([e.rank for e in group])} {'is' if len(group) == 1 else 'are'} waiting {place} "
        f"(since {clock(min((e.since for e in group if e.since is not None), default=None))})"
        for place, group in by_place.items()
    )


def _died_finding(died: list[RankEnding], others: list[RankEnding]) -> Finding:
    first = died[0]
    stopped = "".join(f"; rank {e.rank} was stopped in the {e.stage} stage {e.where.describe()}" for e in others)
    return _finding(
        "rank-died", first, [e.rank for e in died],
        f"rank {first.rank} died in the {first.stage} stage at {clock(first.ended_at)}, "
        f"last seen {first.where.describe()} "
        f"({first.message}){stopped}" + ("" if others else "; the other ranks' errors in their collectives follow from it"),
        [*died, *others],
    )


def _stuck_finding(stuck: list[RankEnding]) -> Finding:
    in_collective = Counter(e.where.collective for e in stuck if e.where.collective)
    waited_in = in_collective.most_common(1)[0][0] if in_collective else None
    behind = [e for e in stuck if e.where.collective != waited_in] if waited_in else []
    culprits = sorted(behind or stuck, key=lambda e: e.since if e.since is not None else float("inf"))
    first = culprits[0]
    if not behind:
        culprits = [first]  # all in the same place: the oldest progress is the first that stopped
    waiting = [e for e in stuck if e not in culprits]
    state = f"inside {first.where.collective}" if first.where.collective else "not in a collective"
    place = f"{first.where.file}:{first.where.line}" if first.where.file else "an unknown line"
    return _finding(
        "rank-hang", first, [e.rank for e in culprits],
        f"rank {first.rank} last progressed at {clock(first.since)} in {place} ({state}) during the {first.stage} "
        f"stage{_waiting(waiting)}",
        stuck,
    )


def _finding(kind: str, first: RankEnding, ranks: list[int], message: str, endings: list[RankEnding]) -> Finding:
    return Finding(
        layer="distributed", stage=first.stage, kind=kind, code=trace_code(kind), message=message,
        file=first.where.file, line=first.where.line,
        details={"ranks": sorted(ranks), "endings": [e.to_json() for e in sorted(endings, key=lambda e: e.rank)]},
    )
