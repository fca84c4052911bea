"""One rank's report as the merge reads it: the report a rank wrote, with the facts, collectives
and progress its worker left (``report["rank"]``), or nothing when the rank wrote no report."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any


@dataclass
class RankView:
    rank: int
    report: dict[str, Any] | None  # None: the rank wrote no report

    @property
    def side(self) -> dict[str, Any]:
        return (self.report or {}).get("rank") or {}

    @property
    def facts(self) -> dict[str, Any]:
        return self.side.get("facts") or {}

    @property
    def findings(self) -> list[dict[str, Any]]:
        return (self.report or {}).get("findings", [])

    def stage_row(self, stage: str) -> dict[str, Any] | None:
        return next((row for row in (self.report or {}).get("stages", []) if row["name"] == stage), None)

    def collectives(self, stage: str) -> list[dict[str, Any]] | None:
        return ((self.side.get("collectives") or {}).get("by_stage") or {}).get(stage)


def reference_value(values: dict[int, Any]) -> Any:
    """The value most ranks have (ties: the lowest rank's); the others deviate from it."""
    ranked = sorted(values.items())
    counts: dict[str, int] = {}
    for _, value in ranked:
        counts[repr(value)] = counts.get(repr(value), 0) + 1
    best = max(counts.values())
    return next(value for _, value in ranked if counts[repr(value)] == best)


def deviating_ranks(values: dict[int, Any]) -> list[int]:
    reference = reference_value(values)
    return sorted(rank for rank, value in values.items() if value != reference)


def clock(timestamp: float | None) -> str:
    """A wall-clock time as ranks' logs show it: ``12:00:01.250 UTC``."""
    if timestamp is None:
        return "an unknown time"
    moment = datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc)
    return moment.strftime("%H:%M:%S.%f")[:-3] + " UTC"


def rank_list(ranks: list[int]) -> str:
    """``rank 1`` / ``ranks 0, 2`` / ``ranks 0–3``."""
    ranks = sorted(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"ranks {ranks[0]}–{ranks[-1]}"
    return "ranks " + ", ".join(str(r) for r in ranks)
