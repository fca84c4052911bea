"""``--format github``: GitHub Actions workflow commands, one annotation per finding."""

from __future__ import annotations

from typing import TextIO

from graphlint.checks.engine import CheckResult


def _escape(value: str, *, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return value.replace(":", "%3A").replace(",", "%2C") if prop else value


def write(result: CheckResult, out: TextIO) -> None:
    for f in result.findings:
        where = f"in {f.region.kind} region (entry {f.region.entry_label}) via {' → '.join(f.region.chain)}" if f.region else ""
        message = f"{f.message} {where}".strip()
        props = ",".join(
            [
                f"file={_escape(f.path, prop=True)}",
                f"line={f.line}",
                f"col={f.column}",
                f"endLine={f.end_line}",
                f"endColumn={f.end_column}",
                f"title={_escape(f'{f.code} {f.slug}', prop=True)}",
            ]
        )
        command = "notice" if f.severity == "info" else f.severity  # workflow commands: error, warning, notice
        out.write(f"::{command} {props}::{_escape(message)}\n")
