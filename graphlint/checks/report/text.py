"""``--format text``: one block per finding with a code frame and the region chain (rich)."""

from __future__ import annotations

from collections import Counter
from typing import TextIO

from rich.console import Console
from rich.markup import escape

from graphlint.checks.coverage import coverage_line
from graphlint.checks.engine import CheckResult
from graphlint.checks.findings import Finding
from graphlint.codes import code_entry, rule_summary_zh
from graphlint.options import console as make_console

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def write(result: CheckResult, out: TextIO, color: str = "auto", lang: str = "en") -> None:
    console = make_console(color, file=out, soft_wrap=True)
    sources: dict[str, list[str]] = {}
    for finding in result.findings:
        _finding(console, finding, sources, lang)
    counts = Counter(f.code for f in result.findings)
    if result.findings:
        by_code = ", ".join(f"{code} ×{n}" for code, n in sorted(counts.items()))
        console.print(f"[bold]{len(result.findings)} finding(s)[/] in {result.files} file(s) ({by_code}) in {result.seconds:.2f}s")
        safe = sum(f.fix == "safe" for f in result.findings)
        unsafe = sum(f.fix == "unsafe" for f in result.findings)
        offers = [f"{safe} fixable with --fix"] if safe else []
        if unsafe:
            offers.append(f"{unsafe} {'more ' if safe else ''}with --fix --unsafe-fixes")
        if offers:
            console.print(f"{', '.join(offers)} (preview: --diff)")
    else:
        console.print(f"[green]No findings[/] in {result.files} file(s) ({result.seconds:.2f}s)")
    if result.presets:
        console.print(
            f"presets: {', '.join(result.presets)} (framework knowledge, read for the {result.platform} platform;"
            " [tool.graphlint] presets = [...] and platform = ... to choose)"
        )
    if result.held_presets:
        console.print(
            f"held (opt-in) presets: {', '.join(result.held_presets)}: only what they know of where code never runs on"
            f" the {result.platform} platform applies, their captures are not walked (presets = [...] to choose)"
        )
    if result.coverage is not None:
        console.print(escape(coverage_line(result.coverage)))


def _finding(console: Console, f: Finding, sources: dict[str, list[str]], lang: str) -> None:
    style = _STYLE.get(f.severity, "")
    console.print(
        f"[bold]{escape(f.path)}:{f.line}:{f.column}[/]: [{style}]{f.code}[/] "
        f"[dim]{f.slug}[/] [{style}]{f.severity}[/]: {escape(f.message)}"
    )
    if lang == "zh":
        entry = code_entry(f.code)
        summary = rule_summary_zh(f.code) or (entry.summary.get("zh") if entry else None)
        if summary:
            console.print(f"  [dim]说明：[/]{escape(summary)}")
    if f.region is not None:
        chain = " → ".join(f.region.chain)
        console.print(f"  [cyan]{f.region.kind}[/] at {escape(f.region.entry_label)} via {escape(chain)}")
    lines = sources.get(f.path)
    if lines is None:
        try:
            lines = sources[f.path] = f.file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            lines = sources[f.path] = []
    if 0 < f.line <= len(lines):
        text = lines[f.line - 1]
        width = (f.end_column - f.column) if f.end_line == f.line else len(text) - f.column + 1
        console.print(f"  [dim]{f.line:>5} |[/] {escape(text)}")
        console.print(f"  [dim]      |[/] {' ' * (f.column - 1)}[{style}]{'^' * max(width, 1)}[/]")
    console.print()
