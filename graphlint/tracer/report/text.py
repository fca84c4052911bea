"""The terminal report (rich): live progress per stage while the ladder runs, then the stage
table, the verdict, the findings with a frame of the user's code, and the static cross-check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table

_STATUS_STYLE = {"passed": "green", "failed": "bold red", "skipped": "yellow", "inconclusive": "bold magenta"}
_SEVERITY_STYLE = {"error": "red", "warning": "yellow", "info": "cyan"}
FRAME_LINES = 2  # lines of context above and below the user's line
NOTE_WIDTH = 60  # the stage table's note: the start of the reason (the full one is in the JSON)


class LiveProgress:
    """Called by the supervisor as stages start and end; writes to stderr."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.status = None

    def __call__(self, event: str, stage: str, result: dict[str, Any] | None) -> None:
        if event == "start":
            self._stop()
            if self.console.is_terminal:  # live on a terminal; a line per step in a log
                self.status = self.console.status(f"running the [bold]{stage}[/] stage…")
                self.status.start()
            else:
                self.console.print(f"running the {stage} stage…", soft_wrap=True)
            return
        self._stop()
        assert result is not None
        style = _STATUS_STYLE.get(result["status"], "")
        counts = ", ".join(f"{result[k]} {k.replace('_', ' ')}" for k in ("graphs", "graph_breaks", "recompiles") if k in result)
        extra = f" ({counts})" if counts else ""
        reason = f" — {escape(result['reason'].splitlines()[0])}" if result.get("reason") else ""
        self.console.print(
            f"[{style}]{result['status']:>7}[/] {stage} {result.get('seconds', 0):.1f} s{extra}{reason}",
            highlight=False, soft_wrap=not self.console.is_terminal,
        )

    def _stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def close(self) -> None:
        self._stop()


def verdict_label(verdict: dict[str, Any]) -> str:
    """The verdict's first word, in rich markup: the failing layer, or whether every stage that
    ran did its check (an ``inconclusive`` stage never reads as passed)."""
    if verdict["layer"]:
        return f"[red]{verdict['layer']}[/]"
    if verdict.get("inconclusive"):
        return "[bold magenta]inconclusive[/]"
    return "[green]all stages passed[/]"


def print_report(report: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    env = report.get("environment") or {}
    facts = ", ".join(f"{k} {env[k]}" for k in ("python", "torch", "torch_npu", "torchair", "device") if env.get(k))
    console.print(f"[bold]graphlint trace[/] {escape(report['target'])}  [dim]{escape(facts)}[/]")
    for warning in env.get("warnings", []):
        console.print(f"[yellow]environment:[/] {escape(warning)}")
    # A terminal is as wide as it is; a CI log is read in a browser: there the notes go below the
    # table, whole, instead of a note column squeezed to a word per line at 80 columns.
    notes_inline = console.is_terminal
    console.print(stage_table(report, notes_inline))
    if not notes_inline:
        for row in report["stages"]:
            if row.get("reason"):
                console.print(f"[bold]{row['name']}[/] {row['status']}: {escape(row['reason'])}")
    if report.get("ranks"):  # a merged multi-rank report
        from graphlint.tracer.distributed.rank_table import rank_table

        console.print(rank_table(report))
    verdict = report["verdict"]
    layer = verdict["layer"]
    console.print(f"[bold]verdict:[/] {verdict_label(verdict)} — {escape(verdict['summary'])}")
    for finding in report["findings"]:
        console.print(finding_panel(finding))
    copies = report.get("copies")
    if copies and copies.get("aten") is not None:
        ops = ", ".join(f"{op} {n}" for op, n in sorted(copies["aten"].items(), key=lambda kv: -kv[1])) or "none"
        console.print(f"[bold]copies (aten):[/] {escape(ops)}")
    static = report.get("static") or {}
    for finding in static.get("findings", []):
        mark = "[green]confirmed[/]" if finding.get("confirmed") else "[dim]not seen by the trace[/]"
        console.print(
            f"[bold]static[/] {finding['code']} {escape(str(finding['path']))}:{finding['line']} "
            f"{escape(finding['message'])} — {mark}"
        )
    if static.get("error"):
        console.print(f"[dim]static cross-check: {escape(static['error'])}[/]")
    baseline = report.get("baseline")
    if baseline:
        for item in baseline["increases"]:
            console.print(f"[red]increase:[/] {escape(item)}")
        if not baseline["increases"]:
            console.print("[green]no increase against the baseline[/]")


def stage_table(report: dict[str, Any], notes: bool = True) -> Table:
    """The stages, one row each; ``notes``: with the start of each reason in a last column."""
    table = Table(title=None, show_lines=False)
    columns = ("stage", "status", "mode", "time", "graphs", "breaks", "recompiles") + (("note",) if notes else ())
    for column in columns:
        numeric = column in ("time", "graphs", "breaks", "recompiles")
        table.add_column(column, justify="right" if numeric else "left", no_wrap=column != "note")
    for row in report["stages"]:
        table.add_row(
            row["name"],
            f"[{_STATUS_STYLE.get(row['status'], '')}]{row['status']}[/]",
            row.get("mode", ""),
            f"{row.get('seconds', 0):.1f} s",
            *(str(row[k]) if k in row else "" for k in ("graphs", "graph_breaks", "recompiles")),
            *((escape(_first_line(row.get("reason"), NOTE_WIDTH)),) if notes else ()),
        )
    return table


def _first_line(text: str | None, width: int) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def finding_panel(finding: dict[str, Any]) -> Panel:
    where = f"{finding['file']}:{finding['line']}" if finding.get("file") else "(no user line)"
    count = f" ×{finding['count']}" if finding.get("count", 1) > 1 else ""
    if finding.get("ranks"):  # a merged multi-rank report names the ranks of each finding
        count += " on rank" + ("s " if len(finding["ranks"]) > 1 else " ") + ", ".join(map(str, finding["ranks"]))
    title = (
        f"[{_SEVERITY_STYLE.get(finding.get('severity', 'error'), '')}]{finding['layer']}[/] "
        f"{finding.get('code') or ''} {finding['kind']}{count}"
    )
    # The place is the body's first line, not the title's end: rich cuts a title to the panel's
    # width, and at 80 columns "converter_gap.py:22" became ":2", a wrong line in every CI log.
    parts: list[Any] = [f"[bold]{escape(where)}[/]", escape(finding["message"])]
    frame = code_frame(finding.get("file"), finding.get("line"))
    if frame is not None:
        parts.append(frame)
    if finding.get("hint"):
        parts.append(f"[bold]hint:[/] {escape(finding['hint'])}")
    if finding.get("refs"):
        parts.append(f"[dim]refs: {escape(', '.join(finding['refs']))}[/]")
    return Panel(Group(*parts), title=title, title_align="left", expand=True)


def code_frame(file: str | None, line: int | None) -> Syntax | None:
    if not file or not line:
        return None
    path = Path(file)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return Syntax(
        source, "python", line_numbers=True, line_range=(max(1, line - FRAME_LINES), line + FRAME_LINES),
        highlight_lines={line}, word_wrap=True,
    )
