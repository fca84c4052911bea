"""The copies report as rich tables: one row per graph, op and reason with count, share of the
graph's ops and top source lines; then the suggestions and the change against a baseline."""

from __future__ import annotations

from typing import Any, TextIO

from rich.table import Table
from rich.text import Text

from graphlint.options import console as make_console


def write_text(copies: dict[str, Any], stream: TextIO, color: str = "auto") -> None:
    """``color`` as ``--color``: auto colours only a terminal without NO_COLOR."""
    # A file or pipe gets a fixed, wide layout; a terminal its own width.
    width = None if stream.isatty() else 140
    console = make_console(color, file=stream, width=width)
    stages = {stage["name"]: stage for stage in copies.get("stages", [])}
    if copies.get("target"):
        console.print(Text(f"Copies in {copies['target']}", style="bold"))
    for level in ("aten", "ge"):
        console.print(_totals_line(level, copies["totals"].get(level), stages))
    if copies.get("ge_optimized") is not None:
        console.print(Text(f"ge after torchair's graph passes: {_nonzero(copies['ge_optimized'])}", style="dim"))
    if copies["graphs"]:
        console.print(_graph_table(copies["graphs"]))
    for group in copies["groups"]:
        console.print(Text.assemble((f"{group['group']} ×{group['count']}", "bold"), f": {group['why']}"))
    for op_type, why in _ge_types_shown(copies["graphs"]).items():
        console.print(Text.assemble((f"GE {op_type}", "bold"), f": {why}"))
    for findings in _by_kind(copies.get("suggestions", [])):
        console.print(_suggestion(findings))
    if copies.get("baseline"):
        console.print(_baseline_table(copies["baseline"]))


def _totals_line(level: str, totals: dict[str, Any] | None, stages: dict[str, Any]) -> Text:
    if totals is None:
        stage = stages.get("aot" if level == "aten" else "torchair") or {}
        why = stage.get("reason") or stage.get("status") or "did not run"
        return Text(f"{level}: not counted ({why})", style="dim")
    written = f", writing {human_bytes(totals['bytes'])}" if "bytes" in totals else ""
    return Text(
        f"{level}: {totals['copies']} copies in {totals['ops']} ops ({percent(totals['share'])}){written}",
        style="bold" if totals["copies"] else "green",
    )


def _graph_table(graphs: list[dict[str, Any]]) -> Table:
    table = Table(title="Copies per graph", title_justify="left")
    for column, justify in (("graph", "left"), ("op", "left"), ("group", "left"), ("count", "right"),
                            ("bytes", "right"), ("share", "right"), ("top lines", "left")):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for graph in graphs:
        name = f"{graph['level']} {graph['name']}"
        if not graph["rows"]:
            _add_row(table, name, "—", "no copies", "0", "", percent(0.0), "", end_section=True)
            continue
        for i, row in enumerate(graph["rows"]):
            _add_row(
                table,
                name if i == 0 else "",
                row["op"],
                row.get("group") or "",
                str(row["count"]),
                human_bytes(row["bytes"]) if "bytes" in row else "",
                percent(row["share"]),
                top_lines(row),
                end_section=i == len(graph["rows"]) - 1,
            )
    return table


def top_lines(row: dict[str, Any]) -> str:
    """``a.py:25 ×1, :26 ×2, 1 more line``: a file named once for its consecutive lines."""
    parts, previous = [], object()
    for line in row["top_lines"]:
        place = where(line) if line.get("file") != previous else f":{line['line']}"
        parts.append(f"{place} ×{line['count']}")
        previous = line.get("file")
    others = row.get("other_lines", 0)
    if others:
        parts.append(f"{others} more line{'s' if others > 1 else ''}")
    return ", ".join(parts)


def _ge_types_shown(graphs: list[dict[str, Any]]) -> dict[str, str]:
    return {row["op"]: row["why"] for graph in graphs if graph["level"] == "ge" for row in graph["rows"]}


def _by_kind(findings: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Findings of one kind share one hint: print it once, after all their lines."""
    kinds: dict[str, list[dict[str, Any]]] = {}
    for finding in findings:
        kinds.setdefault(finding["kind"], []).append(finding)
    return list(kinds.values())


def _suggestion(findings: list[dict[str, Any]]) -> Text:
    text = Text()
    for finding in findings:
        place = where(finding) if finding.get("file") else "graph"
        style = "yellow" if finding.get("severity") == "warning" else "cyan"
        text.append(f"{place}: ", style="bold")
        text.append(f"{finding['message']}\n", style=style)
    first = findings[0]
    if first.get("hint"):
        text.append(f"  {first['hint']}")
    if first.get("refs"):
        text.append(f" [{', '.join(first['refs'])}]", style="dim")
    return text


def _nonzero(counts: dict[str, int]) -> str:
    shown = [f"{op} {n}" for op, n in counts.items() if n]
    return ", ".join(shown) or "no copies"


def _baseline_table(diff: dict[str, Any]) -> Table:
    verdict = "copies grew" if diff["grew"] else "copies did not grow"
    table = Table(title=f"Change against the baseline: {verdict}", title_justify="left")
    for column in ("level", "op", "line", "before", "now", "change"):
        table.add_column(column, justify="right" if column in ("before", "now", "change") else "left")
    for total in diff["totals"]:
        _add_row(table, total["level"], "all copies", "all", str(total["old"]), str(total["new"]),
                 change_text(total["change"]))
    for op in diff["ops"]:
        _add_row(table, op["level"], op["op"], "all", str(op["old"]), str(op["new"]), change_text(op["change"]))
    for line in diff["lines"]:
        _add_row(table, line["level"], line["op"], where(line), str(line["old"]), str(line["new"]),
                 change_text(line["change"]))
    return table


def _add_row(table: Table, *cells: str | Text, end_section: bool = False) -> None:
    """Plain strings become ``Text``: file names and ops are shown as they are, never read as
    rich markup (a ``[bold]`` in a path stays in the path)."""
    table.add_row(*(Text(c) if isinstance(c, str) else c for c in cells), end_section=end_section)


def change_text(change: int) -> Text:
    style = "bold red" if change > 0 else "green" if change < 0 else "dim"
    return Text(change_mark(change), style=style)


def change_mark(change: int) -> str:
    return f"▲ +{change}" if change > 0 else f"▼ {change}" if change < 0 else "="


def where(entry: dict[str, Any]) -> str:
    if entry.get("file") is None:
        return "(no source line)"
    return f"{entry['file']}:{entry['line']}"


def human_bytes(size: int | None) -> str:
    """``6.0 KiB``; ``?`` when the size is symbolic."""
    if size is None:
        return "?"
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def percent(share: float) -> str:
    return f"{share * 100:.1f}%"
