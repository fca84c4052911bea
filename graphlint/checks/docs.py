"""Rule documentation, generated from the rule classes: `graphlint rules`, `explain`, docs/rules.md."""

from __future__ import annotations

import json

from graphlint.checks.rules import all_rules, rule_by_code
from graphlint.checks.rules.base import Rule


def _severity(rule: Rule) -> str:
    capture, compiled = rule.severity("capture"), rule.severity("compiled")
    text = capture if capture == compiled else f"{capture} in capture, {compiled} in compiled"
    fullgraph = rule.severity("compiled", fullgraph=True)
    return text if fullgraph == compiled else f"{text}, {fullgraph} with fullgraph=True"


def _where(rule: Rule) -> str:
    if not rule.regions:
        return "anywhere"
    return "capture and compiled regions" if rule.regions == {"capture", "compiled"} else ", ".join(sorted(rule.regions))


def rules_table() -> str:
    rows = [(r.code, r.slug, _severity(r), r.summary) for r in all_rules()]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "".join(
        f"{code:<{widths[0]}}  {slug:<{widths[1]}}  {severity:<{widths[2]}}  {summary}\n"
        for code, slug, severity, summary in rows
    )


def rules_json() -> str:
    data = [
        {
            "code": r.code,
            "slug": r.slug,
            "severity": _severity(r),
            "summary": r.summary,
            "fix": r.fix_safety,
            "refs": list(r.refs),
            "predicts": list(r.predicts),
        }
        for r in all_rules()
    ]
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def explain(code: str) -> str | None:
    rule = rule_by_code(code)
    if rule is None:
        return None
    return f"{rule.code} ({rule.slug})\n\n{_header(rule)}\n\n{rule.documentation()}\n"


def _header(rule: Rule) -> str:
    fix = f"fix: {rule.fix_safety} — {rule.fix_title}" if rule.fix_title else "fix: none"
    predicts = f"; dynamo: {', '.join(rule.predicts)}" if rule.predicts else ""
    return f"severity: {_severity(rule)}; applies in: {_where(rule)}; {fix}{predicts}"


def rules_markdown() -> str:
    lines = [
        "# graphlint rules",
        "",
        "<!-- Generated from the rule classes: `graphlint rules --format markdown > docs/rules.md`. Do not edit. -->",
        "",
        "| code | slug | severity | summary |",
        "|---|---|---|---|",
    ]
    lines += [f"| {r.code} | `{r.slug}` | {_severity(r)} | {r.summary} |" for r in all_rules()]
    for rule in all_rules():
        doc = rule.documentation().replace("\n## ", "\n### ")
        if doc.startswith("## "):
            doc = "#" + doc
        lines += ["", f"## {rule.code} `{rule.slug}`", "", _header(rule), "", doc]
    return "\n".join(lines) + "\n"
