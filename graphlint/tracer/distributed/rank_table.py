"""The per-rank table of a merged multi-rank report: one row per rank with each stage's status
(graphs/breaks/recompiles where counted), where the rank ended when it hung, died or was
stopped, and the collectives of its dynamo graphs. One set of rows, two renderings: rich for the
terminal, HTML for ``report.html``."""

from __future__ import annotations

from html import escape as html_escape
from typing import Any

from rich.markup import escape as rich_escape
from rich.table import Table

from graphlint.tracer.report.text import _STATUS_STYLE

Cell = tuple[str, str | None]  # text, and the stage status it shows (for styling), if any


def rank_columns(report: dict[str, Any]) -> list[str]:
    return ["rank", "host", *(row["name"] for row in report["stages"]), "ended", "collectives (dynamo)"]


def rank_rows(report: dict[str, Any]) -> list[list[Cell]]:
    stages = [row["name"] for row in report["stages"]]
    rows = []
    for entry in report["ranks"]:
        if not entry["reported"]:
            empty: list[Cell] = [("", None) for _ in stages]
            rows.append([(str(entry["rank"]), None), ("", None), *empty, ("no report", "failed"), ("", None)])
            continue
        by_name = {row["name"]: row for row in entry["stages"]}
        collectives = (entry.get("collectives") or {}).get("dynamo", [])
        rows.append([
            (str(entry["rank"]), None), (str(entry.get("host") or ""), None),
            *(_stage_cell(by_name.get(name)) for name in stages),
            (_ending(entry.get("ending")), None),
            (", ".join(f"{c['op']}@{c['graph']}" for c in collectives) or "-", None),
        ])
    return rows


def rank_table(report: dict[str, Any]) -> Table:
    """For the terminal."""
    table = Table(title=f"{report.get('world_size', len(report['ranks']))} ranks", title_justify="left")
    for column in rank_columns(report):
        table.add_column(column, justify="right" if column == "rank" else "left")
    for row in rank_rows(report):
        table.add_row(*(f"[{_STATUS_STYLE[s]}]{rich_escape(t)}[/]" if s else rich_escape(t) for t, s in row))
    return table


def rank_table_html(report: dict[str, Any]) -> str:
    """For ``report.html`` (its stylesheet colours the ``passed``/``failed``/``skipped`` classes)."""
    head = "".join(f"<th>{html_escape(c)}</th>" for c in rank_columns(report))
    body = "".join(
        "<tr>" + "".join((f"<td class='{html_escape(s)}'>" if s else "<td>") + html_escape(t) + "</td>" for t, s in row)
        + "</tr>"
        for row in rank_rows(report)
    )
    return f"<h2>Ranks</h2><table><tr>{head}</tr>{body}</table>"


def _stage_cell(row: dict[str, Any] | None) -> Cell:
    if row is None:
        return "", None
    counts = "/".join(str(row[k]) for k in ("graphs", "graph_breaks", "recompiles") if k in row)
    return row["status"] + (f" {counts}" if counts else ""), row["status"]


def _ending(ending: dict[str, Any] | None) -> str:
    if not ending:
        return "-"
    where = ending["where"]
    place = f"{where['file']}:{where['line']}" if where.get("file") else "?"
    inside = f" in {where['collective']}" if where.get("collective") else ""
    return f"{ending['kind']} in {ending['stage']} at {place}{inside}"
