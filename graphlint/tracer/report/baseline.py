"""``--baseline OLD.json --fail-on-increase``: compare a report with an earlier one so a team
can keep a budget of graphs, graph breaks, recompiles and findings in CI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

BUDGETED = ("graphs", "graph_breaks", "recompiles")


def load_baseline(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read baseline {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("stages"), list):
        raise ValueError(f"baseline {path} is not a graphlint trace report (no stages list)")
    return data


def totals(report: dict[str, Any]) -> dict[str, Any]:
    """The budgeted numbers of a report: per stage counts, and findings per (layer, kind, code)
    weighted by their counts."""
    stages = {row["name"]: {k: row[k] for k in BUDGETED if k in row} for row in report["stages"]}
    findings: Counter[str] = Counter()
    for f in report.get("findings", []):
        findings[f"{f['layer']}/{f['kind']}/{f.get('code') or '-'}"] += int(f.get("count", 1))
    return {"stages": stages, "findings": dict(findings)}


def compare_with_baseline(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``{"old": totals, "new": totals, "increases": ["dynamo graph_breaks 1 → 3", ...]}``."""
    before, after = totals(old), totals(new)
    increases = []
    for stage, counts in after["stages"].items():
        for key, value in counts.items():
            previous = before["stages"].get(stage, {}).get(key, 0)
            if value > previous:
                increases.append(f"{stage} {key} {previous} → {value}")
    for key, value in after["findings"].items():
        previous = before["findings"].get(key, 0)
        if value > previous:
            increases.append(f"findings {key} {previous} → {value}")
    return {"old": before, "new": after, "increases": increases}
