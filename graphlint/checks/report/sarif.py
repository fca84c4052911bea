"""``--format sarif``: SARIF 2.1.0, for code-scanning dashboards."""

from __future__ import annotations

import json
from typing import Any, TextIO

from graphlint import __version__
from graphlint.checks.engine import PARSE_ERROR, PARSE_ERROR_SLUG, CheckResult
from graphlint.checks.rules import all_rules

_LEVEL = {"info": "note"}  # SARIF's levels: error, warning, note, none
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def to_sarif(result: CheckResult) -> dict[str, Any]:
    rules = [
        {
            "id": PARSE_ERROR,
            "name": PARSE_ERROR_SLUG,
            "shortDescription": {"text": "the file cannot be read or parsed"},
            "defaultConfiguration": {"level": "error"},
        }
    ] + [
        {
            "id": rule.code,
            "name": rule.slug,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.documentation()},
            "defaultConfiguration": {"level": _LEVEL.get(rule.severity(None), rule.severity(None))},
            "properties": {"references": list(rule.refs)},
        }
        for rule in all_rules()
    ]
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = []
    for f in result.findings:
        entry: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _LEVEL.get(f.severity, f.severity),
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.path},
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.column,
                            "endLine": f.end_line,
                            "endColumn": f.end_column,
                        },
                    }
                }
            ],
        }
        if f.region is not None:
            entry["properties"] = {
                "region": {"kind": f.region.kind, "entry": f.region.entry_label, "chain": list(f.region.chain)}
            }
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
                        "informationUri": "https://github.com/graphlint/graphlint",
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }


def write(result: CheckResult, out: TextIO) -> None:
    json.dump(to_sarif(result), out, ensure_ascii=False, indent=1)
    out.write("\n")
