"""``--fix`` / ``--diff``: apply the rules' fixes with libcst, keeping every other byte as it was.

Each fixable finding names its node by anchor (kind, ordinal in source order), the same way the
walk that found it counted; the fixer parses the file again, counts the same way, and hands the
node to the rule's ``apply_fix``. A fixed file must parse again, or it is left untouched.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from graphlint.checks.findings import Finding
from graphlint.checks.positions import ANCHOR_KINDS
from graphlint.checks.rules import rule_by_code
from graphlint.checks.rules.base import Rule


@dataclass
class FileFix:
    path: Path
    display: str
    before: str
    after: str
    encoding: str = "utf-8"  # the file's own (PEP 263 declaration, or utf-8-sig with a BOM)

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                fromfile=f"a/{self.display}",
                tofile=f"b/{self.display}",
            )
        )


def plan_fixes(findings: Iterable[Finding], *, unsafe: bool) -> list[FileFix]:
    """The fixed text of every file with applicable fixes (nothing is written)."""
    by_file: dict[Path, list[Finding]] = {}
    for finding in findings:
        if finding.fix == "safe" or (finding.fix == "unsafe" and unsafe):
            by_file.setdefault(finding.file, []).append(finding)
    fixes = []
    for path, found in by_file.items():
        try:
            source = path.read_bytes()
        except OSError:
            continue
        fix = fix_source(source, found)
        if fix is not None:
            fixes.append(FileFix(path, found[0].path, *fix))
    return fixes


def fix_source(source: bytes | str, findings: Iterable[Finding]) -> tuple[str, str, str] | None:
    """One file's text with the fixes of ``findings`` applied (the caller chose them: safe, or
    unsafe too), as (before, after, encoding); None when nothing changes, or when
    the text or its fixed form does not parse. ``source`` is the text that was checked: the
    file's bytes, or an editor's unsaved buffer."""
    try:
        # From bytes, so that the declared encoding, a BOM and CRLF line endings survive.
        module = cst.parse_module(source)
    except (UnicodeDecodeError, cst.ParserSyntaxError):
        return None
    before = module.code
    wanted = {f.anchor: rule_by_code(f.code) for f in findings if f.anchor is not None}
    fixer = _Fixer(wanted)  # type: ignore[arg-type]
    after = module.visit(fixer).code
    try:
        cst.parse_module(after)
    except cst.ParserSyntaxError:
        return None
    if after == before:
        return None
    return before, after, module.encoding


def write_fixes(fixes: Iterable[FileFix]) -> None:
    for fix in fixes:
        fix.path.write_bytes(fix.after.encode(fix.encoding))


class _Fixer(cst.CSTTransformer):
    def __init__(self, wanted: dict[tuple[str, int], Rule]) -> None:
        super().__init__()
        self.wanted = wanted
        self.counts: dict[str, int] = {}
        self.pending: dict[int, Rule] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = ANCHOR_KINDS.get(type(node))
        if kind is not None:
            ordinal = self.counts.get(kind, 0)
            self.counts[kind] = ordinal + 1
            rule = self.wanted.get((kind, ordinal))
            if rule is not None:
                self.pending[id(node)] = rule
        return True

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        rule = self.pending.pop(id(original_node), None)
        if rule is None:
            return updated_node
        return rule.apply_fix(updated_node)
