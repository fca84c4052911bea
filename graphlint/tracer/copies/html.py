"""The copies report as one self-contained HTML page: inline CSS and inline SVG bars (per op,
per source line), no scripts, no external assets, so it can be attached to a CI run or mailed.
Every string that comes from the report (file names, ops, messages) is escaped."""

from __future__ import annotations

from html import escape
from typing import Any

from graphlint.tracer.copies.report import share
from graphlint.tracer.copies.text import change_mark, human_bytes, percent, top_lines, where

BAR_ROW = 22  # px per bar
LABEL_WIDTH = 360  # px of the label column
BAR_WIDTH = 420  # px of the longest bar
MAX_LINES = 40  # bars in the per-line chart
LABEL_CHARS = 46  # what fits in LABEL_WIDTH at 12px monospace; longer labels keep their end

COPIES_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border-bottom: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.grew { color: #b00020; font-weight: bold; } .shrank { color: #1b7f3b; }
.hint { color: #555; } .refs { color: #777; font-size: .9em; }
svg text { font: 12px monospace; fill: #222; }
"""


def render_html(copies: dict[str, Any]) -> str:
    target = copies.get("target") or "graph"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>graphlint copies: {escape(str(target))}</title>",
            f"<style>{COPIES_CSS}</style></head><body>",
            f"<h1>Copies in {escape(str(target))}</h1>",
            copies_sections(copies),
            "</body></html>\n",
        ]
    )


def copies_sections(copies: dict[str, Any]) -> str:
    """The body of the copies report: totals, bars per op and per line, the per-graph table,
    suggestions and the baseline change. The trace report's page embeds it too."""
    parts = [_totals(copies)]
    for level in ("aten", "ge"):
        counts = copies.get(level)
        if counts:
            total = (copies["totals"].get(level) or {}).get("ops", 0)
            parts.append(f"<h2>{level}: copies per op</h2>")
            parts.append(_bars([(op, n, percent(share(n, total))) for op, n in counts.items() if n]))
    lines = [ln for ln in copies["by_line"] if ln["count"]][:MAX_LINES]
    if lines:
        parts.append("<h2>Copies per source line</h2>")
        parts.append(_bars([(f"{where(ln)} {ln['op']}", ln["count"], ln["level"]) for ln in lines]))
    parts.append(_graph_table(copies["graphs"]))
    parts.append(_suggestions(copies.get("suggestions", [])))
    if copies.get("baseline"):
        parts.append(_baseline(copies["baseline"]))
    return "\n".join(p for p in parts if p)


def _totals(copies: dict[str, Any]) -> str:
    items = []
    for level in ("aten", "ge"):
        totals = copies["totals"].get(level)
        if totals is None:
            items.append(f"<li>{level}: not counted</li>")
        else:
            written = f", writing {human_bytes(totals['bytes'])}" if "bytes" in totals else ""
            items.append(
                f"<li>{level}: <b>{totals['copies']}</b> copies in {totals['ops']} ops "
                f"({percent(totals['share'])}){written}</li>"
            )
    return f"<ul>{''.join(items)}</ul>"


def _bars(items: list[tuple[str, int, str]]) -> str:
    """A horizontal bar chart: label, bar scaled to the largest value, value and a note."""
    if not items:
        return ""
    largest = max(value for _, value, _ in items) or 1
    width = LABEL_WIDTH + BAR_WIDTH + 120
    height = BAR_ROW * len(items) + 4
    rows = []
    for i, (label, value, note) in enumerate(items):
        y = i * BAR_ROW + 2
        bar = max(1, round(BAR_WIDTH * value / largest))
        rows.append(
            f'<text x="{LABEL_WIDTH - 6}" y="{y + 15}" text-anchor="end">{escape(_fit(label))}</text>'
            f'<rect x="{LABEL_WIDTH}" y="{y + 3}" width="{bar}" height="{BAR_ROW - 6}" fill="#4e79a7">'
            f"<title>{escape(label)}: {value}</title></rect>"
            f'<text x="{LABEL_WIDTH + bar + 6}" y="{y + 15}">{value} {escape(note)}</text>'
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">{"".join(rows)}</svg>'
    )


def _fit(label: str) -> str:
    """The end of a long label (the file name and line matter most); the bar's tooltip has it all."""
    return label if len(label) <= LABEL_CHARS else "…" + label[-(LABEL_CHARS - 1) :]


def _graph_table(graphs: list[dict[str, Any]]) -> str:
    if not graphs:
        return ""
    rows = []
    for graph in graphs:
        for row in graph["rows"] or [{"op": "—", "why": "no copies", "count": 0, "share": 0.0, "top_lines": []}]:
            top = escape(top_lines(row))
            written = human_bytes(row["bytes"]) if "bytes" in row else ""
            rows.append(
                f"<tr><td>{escape(graph['level'])} {escape(graph['name'])}</td><td>{escape(row['op'])}</td>"
                f"<td>{escape(row['why'])}</td><td class=n>{row['count']}</td><td class=n>{written}</td>"
                f"<td class=n>{percent(row['share'])}</td><td>{top}</td></tr>"
            )
    return (
        "<h2>Copies per graph</h2><table><tr><th>graph</th><th>op</th><th>why</th><th>count</th>"
        f"<th>bytes</th><th>share</th><th>top lines</th></tr>{''.join(rows)}</table>"
    )


def _suggestions(findings: list[dict[str, Any]]) -> str:
    if not findings:
        return ""
    items = []
    for finding in findings:
        place = where(finding) if finding.get("file") else "graph"
        refs = ", ".join(finding.get("refs", []))
        items.append(
            f"<li><b>{escape(place)}</b>: {escape(finding['message'])}"
            f"<div class=hint>{escape(finding.get('hint') or '')}</div>"
            f"<div class=refs>{escape(refs)}</div></li>"
        )
    return f"<h2>Suggestions</h2><ul>{''.join(items)}</ul>"


def _baseline(diff: dict[str, Any]) -> str:
    rows = [(t["level"], "all copies", "all lines", t["old"], t["new"], t["change"]) for t in diff["totals"]]
    rows += [(o["level"], o["op"], "all lines", o["old"], o["new"], o["change"]) for o in diff["ops"]]
    rows += [(ln["level"], ln["op"], where(ln), ln["old"], ln["new"], ln["change"]) for ln in diff["lines"]]
    body = "".join(
        f"<tr><td>{escape(level)}</td><td>{escape(op)}</td><td>{escape(place)}</td><td class=n>{old}</td>"
        f"<td class=n>{new}</td><td class='n {_change_class(change)}'>{change_mark(change)}</td></tr>"
        for level, op, place, old, new, change in rows
    )
    verdict = "copies grew" if diff["grew"] else "copies did not grow"
    return (
        f"<h2>Change against the baseline: {verdict}</h2><table><tr><th>level</th><th>op</th>"
        f"<th>where</th><th>before</th><th>now</th><th>change</th></tr>{body}</table>"
    )


def _change_class(change: int) -> str:
    return "grew" if change > 0 else "shrank" if change < 0 else ""
