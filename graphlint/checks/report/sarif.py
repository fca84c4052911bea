"""``--format sarif``: SARIF 2.1.0, for code-scanning dashboards.

Each rule carries its documentation (``help.text`` / ``help.markdown``, ``helpUri`` to its
section of docs/rules.md); each result its region chain as a ``codeFlow`` (the entry point, the
functions of the chain, the finding), its safe fix as a ``fix`` (one replacement, computed by
the same libcst fixer as ``--fix``), percent-encoded relative URIs, and a ``partialFingerprint``
that survives lines moving (the code, the path and the text of the line, counted per file).
Columns are code points (``columnKind``), as the other formats count them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Any, TextIO
from urllib.parse import quote

from graphlint import __version__
from graphlint.checks.engine import CheckResult
from graphlint.checks.findings import Finding
from graphlint.checks.rules import all_rules
from graphlint.checks.rules.base import Rule
from graphlint.codes import CodeEntry, check_codes, code_entries, doc_url

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT = "graphlint/v1"
_ENTRY = re.compile(r"^(?P<path>.+):(?P<line>\d+)$")


def _level(severity: str) -> str:
    """graphlint's severities as SARIF's levels (``info`` is SARIF's ``note``)."""
    return {"info": "note"}.get(severity, severity)


def _anchor(rule: Rule) -> str:
    """docs/rules.md's heading ``## GL201 `host-device-copy-in-capture``` as GitHub anchors it."""
    return f"{rule.code}-{rule.slug}".lower()


def _rule_descriptor(rule: Rule) -> dict[str, Any]:
    documentation = rule.documentation()
    return {
        "id": rule.code,
        "name": rule.slug,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": documentation},
        "help": {"text": documentation, "markdown": f"**{rule.code} `{rule.slug}`**: {rule.summary}\n\n{documentation}"},
        "helpUri": doc_url(f"docs/rules.md#{_anchor(rule)}"),
        "defaultConfiguration": {"level": _level(rule.severity(None))},
        "properties": {"references": list(rule.refs)},
    }


def _code_descriptor(entry: CodeEntry) -> dict[str, Any]:
    return {
        "id": entry.code,
        "name": entry.slug,
        "shortDescription": {"text": entry.summary["en"]},
        "fullDescription": {"text": entry.text["en"]},
        "help": {"text": entry.text["en"], "markdown": f"**{entry.code} `{entry.slug}`**: {entry.summary['en']}\n\n{entry.text['en']}"},
        "helpUri": doc_url(entry.doc),
        "defaultConfiguration": {"level": _level(entry.severity)},
    }


def uri(path: str) -> str:
    """A relative path as a URI reference: percent-encoded, ``/``-separated."""
    return quote(path.replace("\\", "/"), safe="/")


def _location(path: str, region: dict[str, int], message: str | None = None) -> dict[str, Any]:
    location: dict[str, Any] = {"physicalLocation": {"artifactLocation": {"uri": uri(path)}, "region": region}}
    if message:
        location["message"] = {"text": message}
    return location


def _region(f: Finding) -> dict[str, int]:
    return {"startLine": f.line, "startColumn": f.column, "endLine": f.end_line, "endColumn": f.end_column}


def _code_flow(f: Finding) -> dict[str, Any] | None:
    """The entry point, then each function of the chain, then the finding."""
    if f.region is None:
        return None
    steps: list[dict[str, Any]] = []
    entry = _ENTRY.match(f.region.entry_label)
    message = f"{f.region.kind} region entry"
    if entry:
        steps.append({"location": _location(entry["path"], {"startLine": int(entry["line"])}, message)})
    else:
        steps.append({"location": {"message": {"text": f"{message}: {f.region.entry_label}"}}})
    for index, step in enumerate(f.region.steps):
        # The first function is where the entry starts (its target's ``def``, or the capture
        # block's ``with``); each later one is entered by a call in the function before it.
        text = f"{'runs' if index == 0 else 'calls'} {step.function}"
        if step.line > 0:
            steps.append({"location": _location(step.path, {"startLine": step.line}, text)})
        else:
            steps.append({"location": {"message": {"text": text}}})
    steps.append({"location": _location(f.path, _region(f), f.message)})
    return {"threadFlows": [{"locations": steps}]}


def _fix(f: Finding) -> dict[str, Any] | None:
    """The safe fix of one finding as a single replacement of the span that changes."""
    if f.fix != "safe":
        return None
    from graphlint.checks.fix import plan_fixes

    planned = plan_fixes([f], unsafe=False)
    if not planned:
        return None
    before, after = planned[0].before, planned[0].after
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    end_before, end_after = len(before), len(after)
    while end_before > start and end_after > start and before[end_before - 1] == after[end_after - 1]:
        end_before, end_after = end_before - 1, end_after - 1
    rule = next((r for r in all_rules() if r.code == f.code), None)
    return {
        "description": {"text": (rule.fix_title if rule and rule.fix_title else "graphlint --fix")},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": uri(f.path)},
                "replacements": [
                    {
                        "deletedRegion": {**_position(before, start, "start"), **_position(before, end_before, "end")},
                        "insertedContent": {"text": after[start:end_after]},
                    }
                ],
            }
        ],
    }


def _position(text: str, offset: int, which: str) -> dict[str, int]:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return {f"{which}Line": line, f"{which}Column": column}


def _fingerprints(findings: list[Finding]) -> list[str]:
    """Per finding: a hash of its code, path, the stripped text of its line, and how many such
    came before it in the file — stable when lines above are added or removed."""
    seen: Counter[tuple[str, str, str]] = Counter()
    texts: dict[str, list[str]] = {}
    prints = []
    for f in findings:
        if f.path not in texts:
            try:
                texts[f.path] = f.file.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                texts[f.path] = []
        lines = texts[f.path]
        line_text = lines[f.line - 1].strip() if 0 < f.line <= len(lines) else ""
        key = (f.code, f.path, line_text)
        seen[key] += 1
        prints.append(hashlib.sha256("\0".join((*key, str(seen[key]))).encode()).hexdigest()[:32])
    return prints


def to_sarif(result: CheckResult) -> dict[str, Any]:
    entries = code_entries()
    rules = [_code_descriptor(entries[code]) for code in sorted(check_codes())]
    rules += [_rule_descriptor(rule) for rule in all_rules()]
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = []
    for f, fingerprint in zip(result.findings, _fingerprints(result.findings)):
        entry: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _level(f.severity),
            "message": {"text": f.message},
            "locations": [_location(f.path, _region(f))],
            "partialFingerprints": {FINGERPRINT: fingerprint},
        }
        flow = _code_flow(f)
        if flow is not None:
            entry["codeFlows"] = [flow]
            entry["properties"] = {"region": f.to_json()["region"]}
        fix = _fix(f)
        if fix is not None:
            entry["fixes"] = [fix]
        results.append(entry)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "graphlint",
                        "version": __version__,
                        "informationUri": doc_url("README.md"),
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def write(result: CheckResult, out: TextIO) -> None:
    json.dump(to_sarif(result), out, ensure_ascii=False, indent=1)
    out.write("\n")
