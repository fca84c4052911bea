"""``--format json``: the design's object (its summary also names the presets the run used and the
platform their knowledge was read for)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, TextIO

from graphlint.checks.engine import CheckResult


def to_json(result: CheckResult) -> dict[str, Any]:
    by_code = Counter(f.code for f in result.findings)
    document: dict[str, Any] = {
        "version": 1,
        "findings": [f.to_json() for f in result.findings],
        "summary": {
            "files": result.files,
            "findings": len(result.findings),
            "by_code": dict(sorted(by_code.items())),
            "seconds": round(result.seconds, 3),
            "presets": result.presets,
            "platform": result.platform,
            "held_presets": result.held_presets,
        },
    }
    if result.coverage is not None and result.coverage.notice is not None:
        document["summary"]["notice"] = result.coverage.notice  # the value flow was cut short
    if result.coverage is not None and result.coverage.unnumbered:
        document["summary"]["unnumbered_files"] = result.coverage.unnumbered  # calls not followed
    return document


def write(result: CheckResult, out: TextIO) -> None:
    json.dump(to_json(result), out, ensure_ascii=False, indent=1)
    out.write("\n")
