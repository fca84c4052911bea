"""Merge the ranks' reports into the one report of the job (the design's JSON plus ``ranks``).

The merged report has the usual fields (``stages`` is the worst status of each stage over the
ranks) plus ``world_size`` and ``ranks``: per rank, its stage table, verdict, versions,
environment, collectives and where it last progressed. Findings carry ``ranks``: the rank
findings are merged across ranks that share them, and the ``distributed`` findings (hangs,
dead ranks, divergences) come first; the verdict names the first of those, else the first stage
that failed on any rank."""

from __future__ import annotations

from typing import Any

from graphlint.tracer.distributed.divergence import divergence_findings
from graphlint.tracer.distributed.hangs import hang_findings, rank_ending
from graphlint.tracer.distributed.views import RankView, rank_list
from graphlint.tracer.findings import Finding
from graphlint.tracer.knowledge import annotate
from graphlint.tracer.report.build import REPORT_VERSION
from graphlint.tracer.stages import STAGE_ORDER

SAME_FINDING = ("layer", "stage", "kind", "code", "file", "line", "message")


def merge_reports(reports: dict[int, dict[str, Any] | None], world_size: int, lang: str = "en") -> dict[str, Any]:
    """``reports``: rank → its report, or None when it wrote none."""
    views = [RankView(rank, reports.get(rank)) for rank in range(world_size)]
    reported = [v for v in views if v.report is not None]
    if not reported:
        raise ValueError("no rank wrote a report")
    base = reported[0].report
    assert base is not None
    distributed = [_with_ranks(annotate(f, lang)) for f in [*hang_findings(views), *divergence_findings(views)]]
    return {
        "version": REPORT_VERSION,
        "target": base["target"],
        "environment": base.get("environment"),
        "world_size": world_size,
        "stages": _merged_stages(reported),
        "findings": distributed + _merged_rank_findings(reported),
        "verdict": _verdict(distributed, reported, world_size),
        "copies": base.get("copies"),
        "static": base.get("static"),
        "ranks": [_rank_entry(v) for v in views],
    }


def _with_ranks(finding: Finding) -> dict[str, Any]:
    data = finding.to_json()
    data["ranks"] = data.get("details", {}).pop("ranks", [])
    if "details" in data and not data["details"]:
        del data["details"]
    return data


def _merged_rank_findings(views: list[RankView]) -> list[dict[str, Any]]:
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for view in views:
        for finding in view.findings:
            key = tuple(finding.get(k) for k in SAME_FINDING)
            if key in merged:
                merged[key]["ranks"].append(view.rank)
            else:
                merged[key] = {**finding, "ranks": [view.rank]}
    return list(merged.values())


def _merged_stages(views: list[RankView]) -> list[dict[str, Any]]:
    """One row per stage: failed when it failed on any rank (each distinct reason once, with
    its ranks), else inconclusive when it was on any rank, passed when it passed on all, else
    skipped; the largest counts and time."""
    rows = []
    for name in STAGE_ORDER:
        per_rank = {v.rank: row for v in views if (row := v.stage_row(name)) is not None}
        if not per_rank:
            continue
        failed = sorted(r for r, row in per_rank.items() if row["status"] == "failed")
        statuses = {row["status"] for row in per_rank.values()}
        status = (
            "failed" if failed else "inconclusive" if "inconclusive" in statuses
            else "passed" if statuses == {"passed"} else "skipped"
        )
        first = next(row for row in per_rank.values() if status == "passed" or row["status"] == status)
        merged: dict[str, Any] = {
            "name": name, "status": status, "mode": first.get("mode", "real"),
            "seconds": max(row.get("seconds", 0) for row in per_rank.values()),
        }
        if failed:
            by_reason: dict[str, list[int]] = {}
            for rank in failed:
                by_reason.setdefault(per_rank[rank].get("reason") or "failed", []).append(rank)
            merged["reason"] = "; ".join(f"{rank_list(ranks)}: {reason}" for reason, ranks in by_reason.items())
            merged["failed_ranks"] = failed
        elif status in ("skipped", "inconclusive") and first.get("reason"):
            merged["reason"] = first["reason"]
        for key in ("graphs", "graph_breaks", "recompiles"):
            values = [row[key] for row in per_rank.values() if key in row]
            if values:
                merged[key] = max(values)
        rows.append(merged)
    return rows


def _verdict(distributed: list[dict[str, Any]], views: list[RankView], world_size: int) -> dict[str, Any]:
    errors = [f for f in distributed if f["severity"] == "error"]
    if errors:
        first = errors[0]
        return {"layer": "distributed", "stage": first["stage"], "ranks": first["ranks"], "summary": first["message"], "inconclusive": []}
    for stage in STAGE_ORDER:
        failing = [v for v in views if (v.stage_row(stage) or {}).get("status") == "failed"]
        if failing:
            verdict = failing[0].report["verdict"]  # type: ignore[index]
            ranks = [v.rank for v in failing]
            return {**verdict, "ranks": ranks, "summary": f"{rank_list(ranks)}: {verdict['summary']}"}
    unchecked = [s for s in STAGE_ORDER if any((v.stage_row(s) or {}).get("status") == "inconclusive" for v in views)]
    if unchecked:
        return {
            "layer": None, "stage": None, "ranks": [], "inconclusive": unchecked,
            "summary": f"no stage failed on any of the {world_size} ranks, but {', '.join(unchecked)} could not do its check",
        }
    return {
        "layer": None, "stage": None, "ranks": [], "inconclusive": [],
        "summary": f"every stage that ran passed on all {world_size} ranks, and the ranks agree",
    }


def _rank_entry(view: RankView) -> dict[str, Any]:
    if view.report is None:
        return {"rank": view.rank, "reported": False, "stages": [], "verdict": None}
    facts = view.facts
    ending = rank_ending(view)
    return {
        "rank": view.rank,
        "reported": True,
        "host": facts.get("host"),
        "pid": facts.get("pid"),
        "stages": view.report["stages"],
        "verdict": view.report["verdict"],
        "versions": facts.get("versions"),
        "env": facts.get("env"),
        "process_group": facts.get("process_group"),
        "collectives": (view.side.get("collectives") or {}).get("by_stage", {}),
        "collectives_errors": (view.side.get("collectives") or {}).get("errors", {}),
        "progress": view.side.get("progress"),
        "ending": ending.to_json() if ending else None,
    }
