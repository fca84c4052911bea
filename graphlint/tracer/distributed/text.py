"""The per-rank table of a merged multi-rank report, for the terminal (rich): one row per rank
with each stage's status (graphs / breaks / recompiles where counted), where the rank ended
when it hung, died or was stopped, and its collectives."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from graphlint.tracer.report.text import _STATUS_STYLE


def rank_table(report: dict[str, Any]) -> Table:
    stages = [row["name"] for row in report["stages"]]
    table = Table(title=f"{report.get('world_size', len(report['ranks']))} ranks", title_justify="left")
    for column in ("rank", "host", *stages, "ended", "collectives (dynamo)"):
        table.add_column(column, justify="right" if column == "rank" else "left")
    for entry in report["ranks"]:
        if not entry["reported"]:
            table.add_row(str(entry["rank"]), "", *("" for _ in stages), "[red]no report[/]", "")
            continue
        rows = {row["name"]: row for row in entry["stages"]}
        table.add_row(
            str(entry["rank"]), escape(str(entry.get("host") or "")),
            *(_stage_cell(rows.get(name)) for name in stages),
            escape(_ending(entry.get("ending"))),
            escape(", ".join(f"{c['op']}@{c['graph']}" for c in (entry.get("collectives") or {}).get("dynamo", [])) or "-"),
        )
    return table


def _stage_cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return ""
    counts = "/".join(str(row[k]) for k in ("graphs", "graph_breaks", "recompiles") if k in row)
    style = _STATUS_STYLE.get(row["status"], "")
    return f"[{style}]{row['status']}[/]" + (f" {counts}" if counts else "")


def _ending(ending: dict[str, Any] | None) -> str:
    if not ending:
        return "-"
    where = ending["where"]
    place = f"{where['file']}:{where['line']}" if where.get("file") else "?"
    inside = f" in {where['collective']}" if where.get("collective") else ""
    return f"{ending['kind']} in {ending['stage']} at {place}{inside}"
