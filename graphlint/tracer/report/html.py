"""A self-contained HTML page of the trace report (no scripts, no external files). Every string
that comes from the user's code, exceptions or torch is escaped."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from graphlint.tracer.copies.html import COPIES_CSS

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}
.passed{color:#16794a}.failed{color:#b3261e;font-weight:bold}.skipped{color:#8a6d00}.inconclusive{color:#8e24aa;font-weight:bold}
.finding{border:1px solid #ddd;border-radius:6px;padding:.6em 1em;margin:1em 0}
.error{border-left:6px solid #b3261e}.warning{border-left:6px solid #d99b00}.info{border-left:6px solid #3a7bd5}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto}.hint{background:#eef6ee;padding:.4em .6em}
"""


def render_html(report: dict[str, Any]) -> str:
    verdict = report["verdict"]
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>graphlint trace {escape(report['target'])}</title><style>{COPIES_CSS}{_STYLE}</style></head><body>",
        f"<h1>graphlint trace <code>{escape(report['target'])}</code></h1>",
        f"<p><b>verdict:</b> {escape(str(verdict['layer'] or ('inconclusive' if verdict.get('inconclusive') else 'all stages passed')))} — {escape(verdict['summary'])}</p>",
        "<h2>Stages</h2><table><tr><th>stage</th><th>status</th><th>mode</th><th>time</th><th>graphs</th>"
        "<th>breaks</th><th>recompiles</th><th>note</th></tr>",
    ]
    for row in report["stages"]:
        cells = [row["name"], row["status"], row.get("mode", ""), f"{row.get('seconds', 0):.2f} s"]
        cells += [str(row.get(k, "")) for k in ("graphs", "graph_breaks", "recompiles")] + [row.get("reason") or ""]
        parts.append(
            "<tr>" + "".join(
                f"<td class='{escape(row['status'])}'>{escape(c)}</td>" if i == 1 else f"<td>{escape(c)}</td>"
                for i, c in enumerate(cells)
            ) + "</tr>"
        )
    parts.append("</table>")
    if report.get("ranks"):  # a merged multi-rank report
        from graphlint.tracer.distributed.rank_table import rank_table_html

        parts.append(rank_table_html(report))
    parts.append("<h2>Findings</h2>")
    for f in report["findings"]:
        where = f"{f['file']}:{f['line']}" if f.get("file") else "(no user line)"
        parts.append(
            f"<div class='finding {escape(f.get('severity', 'error'))}'><b>{escape(f['layer'])}</b> "
            f"{escape(f.get('code') or '')} {escape(f['kind'])} ×{int(f.get('count', 1))} — <code>{escape(where)}</code>"
            f"<pre>{escape(f['message'])}</pre>"
        )
        if f.get("hint"):
            parts.append(f"<p class='hint'>{escape(f['hint'])}</p>")
        if f.get("refs"):
            parts.append(f"<p>refs: {escape(', '.join(f['refs']))}</p>")
        parts.append("</div>")
    if not report["findings"]:
        parts.append("<p>none</p>")
    parts.append("<h2>Environment</h2><pre>" + escape(json.dumps(report.get("environment"), indent=2)) + "</pre>")
    if report.get("copies"):
        from graphlint.tracer.copies.html import copies_sections

        parts.append("<h2>Copies</h2>" + copies_sections(report["copies"]))
    static = report.get("static") or {}
    if static.get("findings"):
        parts.append("<h2>Static findings</h2><ul>")
        for s in static["findings"]:
            mark = "confirmed by the trace" if s.get("confirmed") else "not seen by the trace"
            parts.append(
                f"<li>{escape(str(s.get('code')))} <code>{escape(str(s.get('path')))}:{escape(str(s.get('line')))}</code> "
                f"{escape(str(s.get('message')))} — {mark}</li>"
            )
        parts.append("</ul>")
    parts.append("</body></html>\n")
    return "".join(parts)


def write_html(report: dict[str, Any], path: Path) -> None:
    path.write_text(render_html(report), encoding="utf-8")
