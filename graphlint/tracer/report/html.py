"""The trace report as HTML: one self-contained page (``--format html``, ``report.html``) and,
with ``--dump DIR``, a small site (``index.html``, a page per graph, the decompiled code).

No scripts and no external files; one stylesheet (the copies report's, plus the classes only
this page uses). Every string that comes from the user's code, exceptions or torch is escaped.
The pages are laid out to fit 1280 px: long text wraps, wide tables scroll inside themselves.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from graphlint.tracer.copies.html import COPIES_CSS
from graphlint.tracer.report.dump_index import DumpIndex, graph_number

FRAME_LINES = 2  # lines of the user's code above and below a finding's line
STATUS_COLOURS = {"passed": "#16794a", "failed": "#b3261e", "skipped": "#8a6d00", "inconclusive": "#8e24aa"}
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

REPORT_CSS = COPIES_CSS + """
main { max-width: 1180px; }
nav a { margin-right: 1em; }
.passed { color: #16794a; } .failed { color: #b3261e; font-weight: bold; }
.skipped { color: #8a6d00; } .inconclusive { color: #8e24aa; font-weight: bold; }
.scroll { overflow-x: auto; max-width: 100%; }
td { overflow-wrap: anywhere; } .nowrap { white-space: nowrap; }
pre { background: #f6f8fa; padding: .6em; white-space: pre-wrap; overflow-wrap: anywhere; margin: .4em 0; }
pre.frame { white-space: pre; overflow-x: auto; }
pre.frame mark { background: #fff3b0; display: inline-block; min-width: 100%; }
.finding { border: 1px solid #ddd; border-radius: 6px; padding: .6em 1em; margin: 1em 0; }
.finding.error { border-left: 6px solid #b3261e; } .finding.warning { border-left: 6px solid #d99b00; }
.finding.info { border-left: 6px solid #3a7bd5; }
.advice { background: #eef6ee; padding: .4em .6em; }
svg { max-width: 100%; height: auto; }
"""


def render_html(report: dict[str, Any], dump: DumpIndex | None = None, pages: bool = False) -> str:
    """The whole report on one page. ``dump`` links each graph's files (relative to the dump
    folder, where the page is written); ``pages``: link the graph pages of the site too."""
    target = str(report["target"])
    sections = [
        _nav(),
        f"<h1>graphlint trace <code>{escape(target)}</code></h1>",
        _verdict(report["verdict"]),
        "<h2 id=stages>Stages</h2>",
        ladder_svg(report["stages"]),
        _stage_table(report["stages"]),
        _ranks(report),
        "<h2 id=failures>Failures</h2>",
        _failures_table(report["findings"]),
        "<h2 id=findings>Findings</h2>",
        "".join(_finding(i, f) for i, f in enumerate(report["findings"])) or "<p>none</p>",
        "<h2 id=graphs>Graphs</h2>",
        _graphs(report, dump, pages),
        "<h2 id=environment>Environment</h2>",
        _environment(report.get("environment") or {}),
        _copies(report.get("copies")),
        _static(report.get("static") or {}),
    ]
    return _page(f"graphlint trace {target}", "".join(s for s in sections if s))


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{escape(title)}</title><style>{REPORT_CSS}</style></head><body><main>{body}</main></body></html>\n"
    )


def _nav() -> str:
    links = ("stages", "failures", "findings", "graphs", "environment", "copies")
    return "<nav>" + "".join(f"<a href='#{name}'>{name}</a>" for name in links) + "</nav>"


def _verdict(verdict: dict[str, Any]) -> str:
    layer = verdict.get("layer")
    if layer:
        mark = f"<span class=failed>{escape(layer)}</span>"
    elif verdict.get("inconclusive"):  # a stage that could not do its check never reads as passed
        mark = "<span class=inconclusive>inconclusive</span>"
    else:
        mark = "<span class=passed>all stages passed</span>"
    return f"<p><b>verdict:</b> {mark} — {escape(str(verdict.get('summary') or ''))}</p>"


def ladder_svg(stages: list[dict[str, Any]]) -> str:
    """The stage ladder as a picture: one box per stage, coloured by its status, in order."""
    box, gap, height = 150, 34, 74
    width = max(1, len(stages)) * (box + gap) - gap + 4
    shapes = []
    for i, row in enumerate(stages):
        x = 2 + i * (box + gap)
        colour = STATUS_COLOURS.get(row["status"], "#666")
        label = f"{row['status']} · {row.get('seconds', 0):.1f} s"
        counts = ", ".join(f"{row[k]} {k.replace('graph_breaks', 'breaks')}" for k in ("graphs", "graph_breaks") if k in row)
        shapes.append(
            f"<rect x='{x}' y='2' width='{box}' height='{height - 4}' rx='8' fill='{colour}' fill-opacity='0.12' "
            f"stroke='{colour}' stroke-width='2'><title>{escape(str(row.get('reason') or row['status']))}</title></rect>"
            f"<text x='{x + box / 2}' y='24' text-anchor='middle' font-weight='bold'>{escape(row['name'])}</text>"
            f"<text x='{x + box / 2}' y='44' text-anchor='middle' fill='{colour}'>{escape(label)}</text>"
            f"<text x='{x + box / 2}' y='62' text-anchor='middle'>{escape(counts or row.get('mode', ''))}</text>"
        )
        if i + 1 < len(stages):
            ax = x + box + 4
            shapes.append(
                f"<path d='M{ax} {height / 2} h{gap - 12} m-6 -5 l6 5 l-6 5' fill='none' stroke='#888' stroke-width='2'/>"
            )
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' class=ladder width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' role='img' aria-label='stage ladder'>{''.join(shapes)}</svg>"
    )


def _stage_table(stages: list[dict[str, Any]]) -> str:
    head = "".join(f"<th class=nowrap>{c}</th>" for c in ("stage", "status", "mode", "time", "graphs", "breaks", "recompiles", "note"))
    rows = []
    for row in stages:
        cells = [
            f"<td class=nowrap>{escape(row['name'])}</td>",
            f"<td class='nowrap {escape(row['status'])}'>{escape(row['status'])}</td>",
            f"<td class=nowrap>{escape(row.get('mode', ''))}</td>",
            f"<td class='n nowrap'>{row.get('seconds', 0):.2f} s</td>",
            *(f"<td class=n>{escape(str(row.get(k, '')))}</td>" for k in ("graphs", "graph_breaks", "recompiles")),
            f"<td>{escape(row.get('reason') or '')}</td>",
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<div class=scroll><table><tr>{head}</tr>{''.join(rows)}</table></div>"


def _ranks(report: dict[str, Any]) -> str:
    if not report.get("ranks"):
        return ""
    from graphlint.tracer.distributed.rank_table import rank_table_html

    return f"<div class=scroll>{rank_table_html(report)}</div>"


def _code_link(code: str | None) -> str:
    """A finding's code, linked to the graph-break site for torch's GBxxxx codes."""
    if not code:
        return ""
    if code.upper().startswith("GB"):
        from graphlint.codes.explain import graph_break_link

        return f"<a href='{escape(graph_break_link(code))}'>{escape(code)}</a>"
    return f"<span title='graphlint explain {escape(code)}'>{escape(code)}</span>"


def _where(finding: dict[str, Any]) -> str:
    return f"{finding['file']}:{finding['line']}" if finding.get("file") else "(no user line)"


def _failures_table(findings: list[dict[str, Any]]) -> str:
    if not findings:
        return "<p>none</p>"
    ordered = sorted(enumerate(findings), key=lambda item: _SEVERITY_ORDER.get(item[1].get("severity", "error"), 3))
    rows = "".join(
        f"<tr><td class='nowrap {escape(f.get('severity', 'error'))}'>{escape(f.get('severity', 'error'))}</td>"
        f"<td class=nowrap>{escape(f['layer'])}</td><td class=nowrap>{_code_link(f.get('code'))}</td>"
        f"<td class=nowrap>{escape(f['kind'])}</td><td class=nowrap><a href='#finding-{i}'>{escape(_where(f))}</a></td>"
        f"<td class=n>{int(f.get('count', 1))}</td><td>{escape(f['message'])}</td></tr>"
        for i, f in ordered
    )
    return (
        "<div class=scroll><table><tr><th>severity</th><th>layer</th><th>code</th><th>kind</th><th>where</th>"
        f"<th>count</th><th>message</th></tr>{rows}</table></div>"
    )


def _finding(index: int, f: dict[str, Any]) -> str:
    ranks = f" on ranks {', '.join(map(str, f['ranks']))}" if f.get("ranks") else ""
    parts = [
        f"<div class='finding {escape(f.get('severity', 'error'))}' id='finding-{index}'>",
        f"<b>{escape(f['layer'])}</b> {_code_link(f.get('code'))} {escape(f['kind'])} ×{int(f.get('count', 1))}{escape(ranks)}"
        f" — <code>{escape(_where(f))}</code>",
        f"<pre>{escape(f['message'])}</pre>",
        code_frame_html(f.get("file"), f.get("line")),
        _chain(f),
    ]
    if f.get("hint"):
        parts.append(f"<p class=advice>{escape(f['hint'])}</p>")
    if f.get("refs"):
        parts.append(f"<p>refs: {escape(', '.join(f['refs']))}</p>")
    details = f.get("details") or {}
    long_text = {k: v for k, v in details.items() if isinstance(v, str) and "\n" in v}
    for key, text in long_text.items():
        parts.append(f"<details><summary>{escape(key)}</summary><pre>{escape(text)}</pre></details>")
    parts.append("</div>")
    return "".join(parts)


def code_frame_html(file: str | None, line: int | None) -> str:
    """The user's lines around ``line``, numbered, the line itself marked."""
    if not file or not line:
        return ""
    try:
        lines = Path(file).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    first, last = max(1, line - FRAME_LINES), min(len(lines), line + FRAME_LINES)
    rendered = []
    for number in range(first, last + 1):
        text = f"{'❱' if number == line else ' '} {number:>4}  {lines[number - 1]}"
        rendered.append(f"<mark>{escape(text)}</mark>" if number == line else escape(text))
    return "<pre class=frame>" + "\n".join(rendered) + "</pre>" if rendered else ""


def _chain(finding: dict[str, Any]) -> str:
    """The user's frames that lead to the finding, outermost first, from its stack texts."""
    from graphlint.tracer.locate import display_path, frames_of_stack_trace

    texts = [v for v in (finding.get("details") or {}).values() if isinstance(v, str)]
    chain: list[str] = []
    for file, line in frames_of_stack_trace("\n".join(texts)):
        shown = display_path(file)
        if shown.startswith(("/", "<")) or "site-packages" in shown:
            continue  # torch's and the standard library's frames: the user's code is what matters
        step = f"{shown}:{line}"
        if step not in chain:
            chain.append(step)
    if len(chain) < 2:
        return ""
    return "<p><b>chain:</b> " + " → ".join(f"<code>{escape(step)}</code>" for step in chain) + "</p>"


def _graphs(report: dict[str, Any], dump: DumpIndex | None, pages: bool) -> str:
    """One section per graph, numbered as dynamo numbers them (the GE graph of dynamo graph N is
    graph_N too), with its dumped files and its copies."""
    copies = (report.get("copies") or {}).get("graphs", [])
    numbers = sorted({*(dump.graphs if dump else {}), *(n for n in map(graph_number, (g["name"] for g in copies)) if n is not None)})
    if not numbers:
        return "<p>no graph was recorded" + ("" if dump else " (run with --dump DIR for the graphs' files)") + "</p>"
    sections = []
    for number in numbers:
        name = f"graph_{number}"
        title = f"<a href='graphs/{name}.html'>{name}</a>" if pages else name
        items = []
        for label, relative in (dump.graphs.get(number, []) if dump else []):
            items.append(f"<li>{escape(label)}: <a href='{escape(relative)}'><code>{escape(relative)}</code></a></li>")
        for graph in copies:
            if graph_number(graph["name"]) == number:
                counted = ", ".join(f"{op} {n}" for op, n in graph["copies"].items() if n) or "no copies"
                items.append(f"<li>{escape(graph['level'])} {escape(graph['name'])}: {graph['ops']} ops, {escape(counted)}</li>")
        sections.append(f"<section id='{name}'><h3>{title}</h3><ul>{''.join(items)}</ul></section>")
    if dump and dump.decompiled:
        target = "graphs/decompiled.html" if pages else dump.decompiled[0]
        sections.append(f"<p>decompiled code (depyf): <a href='{escape(target)}'>{len(dump.decompiled)} file(s)</a></p>")
    return "".join(sections)


def _environment(env: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><th class=nowrap>{escape(str(key))}</th><td>{escape('—' if value is None else str(value))}</td></tr>"
        for key, value in env.items()
        if key != "warnings"
    )
    warnings = "".join(f"<li>{escape(str(w))}</li>" for w in env.get("warnings") or [])
    return f"<table>{rows}</table>" + (f"<p><b>warnings</b></p><ul>{warnings}</ul>" if warnings else "")


def _copies(copies: dict[str, Any] | None) -> str:
    if not copies:
        return ""
    from graphlint.tracer.copies.html import copies_sections

    return "<h2 id=copies>Copies</h2>" + copies_sections(copies)


def _static(static: dict[str, Any]) -> str:
    if not static.get("findings"):
        return ""
    items = []
    for s in static["findings"]:
        mark = "confirmed by the trace" if s.get("confirmed") else "not seen by the trace"
        region = s.get("region") or {}
        chain = " → ".join(region.get("chain") or [])
        via = f" ({escape(str(region.get('kind')))} at {escape(str(region.get('entry')))} via {escape(chain)})" if region else ""
        items.append(
            f"<li>{escape(str(s.get('code')))} <code>{escape(str(s.get('path')))}:{escape(str(s.get('line')))}</code> "
            f"{escape(str(s.get('message')))}{via} — {mark}</li>"
        )
    return "<h2 id=static>Static findings</h2><ul>" + "".join(items) + "</ul>"


def write_site(report: dict[str, Any], folder: Path) -> list[Path]:
    """``index.html`` (linking a page per graph), ``graphs/graph_N.html`` with each dumped file
    of the graph inline, ``graphs/decompiled.html``, and the self-contained ``report.html``."""
    dump = DumpIndex.of(folder)
    written = [folder / "index.html", folder / "report.html"]
    written[0].write_text(render_html(report, dump, pages=True), encoding="utf-8")
    written[1].write_text(render_html(report, dump), encoding="utf-8")
    (folder / "graphs").mkdir(exist_ok=True)
    for number, files in dump.graphs.items():
        page = folder / "graphs" / f"graph_{number}.html"
        page.write_text(_files_page(f"graph_{number}", files, folder), encoding="utf-8")
        written.append(page)
    if dump.decompiled:
        page = folder / "graphs" / "decompiled.html"
        files = [(Path(relative).name, relative) for relative in dump.decompiled]
        page.write_text(_files_page("decompiled code (depyf)", files, folder), encoding="utf-8")
        written.append(page)
    return written


def _files_page(title: str, files: list[tuple[str, str]], folder: Path) -> str:
    body = [f"<nav><a href='../index.html'>← report</a></nav><h1>{escape(title)}</h1>"]
    for label, relative in files:
        text = DumpIndex.read(folder / relative)
        body.append(
            f"<h2>{escape(label)}</h2><p><a href='../{escape(relative)}'><code>{escape(relative)}</code></a></p>"
            f"<pre>{escape(text)}</pre>"
        )
    return _page(title, "".join(body))
