"""Findings and fixes → LSP objects: diagnostics with the region as related information, edits.

Findings count lines from 1 and columns in characters from 1, over lines broken at ``\\r\\n``,
``\\r`` or ``\\n`` only (Python's own breaks: ``str.splitlines`` also breaks at form feeds);
LSP counts both from 0, and columns in the code units the client and server agreed on (UTF-16
unless the client offers another).
"""

from __future__ import annotations

import re
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace.position_codec import PositionCodec

from graphlint.checks.findings import Finding

SOURCE = "graphlint"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


def lines_of(text: str) -> list[str]:
    return _LINE_BREAK.split(text)


def position(lines: list[str], codec: PositionCodec, line: int, column: int) -> types.Position:
    """A finding's 1-based line and character column → an LSP position in client units."""
    return codec.position_to_client_units(lines, types.Position(line=max(line - 1, 0), character=max(column - 1, 0)))


def finding_range(finding: Finding, lines: list[str], codec: PositionCodec) -> types.Range:
    return types.Range(
        start=position(lines, codec, finding.line, finding.column),
        end=position(lines, codec, finding.end_line, finding.end_column),
    )


def region_text(finding: Finding) -> str | None:
    region = finding.region
    if region is None:
        return None
    return f"{region.kind} at {region.entry_label} via {' → '.join(region.chain)}"


def diagnostic(finding: Finding, lines: list[str], codec: PositionCodec, root: Path) -> types.Diagnostic:
    """``root``: the session's root, which the region's entry label is relative to."""
    related = None
    region = finding.region
    if region is not None:
        entry_path, _, entry_line = region.entry_label.rpartition(":")
        related = [
            _related(root, entry_path, int(entry_line) if entry_line.isdigit() else 0,
                     f"{region.kind} region starts here; reached via {' → '.join(region.chain)}")
        ]
        # One location per step, so the editor walks the chain call by call.
        related += [
            _related(root, step.path, step.line, f"{'runs' if index == 0 else 'calls'} {step.function}")
            for index, step in enumerate(region.steps)
            if step.line > 0
        ]
    message = finding.message
    if region is not None:
        message += f"\n{region_text(finding)}"
    return types.Diagnostic(
        range=finding_range(finding, lines, codec),
        message=message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        source=SOURCE,
        related_information=related,
    )


def _related(root: Path, path: str, line: int, message: str) -> types.DiagnosticRelatedInformation:
    """A whole line of ``path`` (relative to ``root`` unless absolute), 1-based ``line``."""
    start = max(line - 1, 0)
    where = types.Range(start=types.Position(line=start, character=0), end=types.Position(line=start + 1, character=0))
    return types.DiagnosticRelatedInformation(
        location=types.Location(uri=from_fs_path(str(root / path)) or "", range=where), message=message
    )


def replacement(before: str, after: str, codec: PositionCodec) -> types.TextEdit:
    """The one edit that turns ``before`` into ``after``: what lies between their common
    start and their common end (so the editor keeps the cursor and folds outside it)."""
    start = 0
    limit = min(len(before), len(after))
    while start < limit and before[start] == after[start]:
        start += 1
    end = 0
    while end < limit - start and before[len(before) - 1 - end] == after[len(after) - 1 - end]:
        end += 1
    lines = lines_of(before)
    return types.TextEdit(
        range=types.Range(start=_offset_position(before, start, lines, codec),
                          end=_offset_position(before, len(before) - end, lines, codec)),
        new_text=after[start : len(after) - end],
    )


def _offset_position(text: str, offset: int, lines: list[str], codec: PositionCodec) -> types.Position:
    breaks = list(_LINE_BREAK.finditer(text, 0, offset))
    line = len(breaks)
    character = offset - (breaks[-1].end() if breaks else 0)
    return codec.position_to_client_units(lines, types.Position(line=line, character=character))
