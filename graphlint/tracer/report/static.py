"""The static checker's findings for the target's own files, beside the trace's.

It runs through its stable JSON contract (``graphlint check --format json FILES``, in a
subprocess, so the trace does not depend on the checker's internals). A static finding is
``confirmed`` when the trace found something on the same line of the same file: the trace saw
the code the rule points at actually break.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from graphlint.tracer.findings import Finding

CHECK_TIMEOUT_SECONDS = 120


def static_cross_check(user_files: list[str], trace_findings: list[Finding]) -> dict[str, Any]:
    """``{"findings": [static finding + "confirmed"], "error": str | None}``."""
    if not user_files:
        return {"findings": [], "error": None}
    command = [sys.executable, "-m", "graphlint", "check", "--format", "json", "--no-cache", *user_files]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CHECK_TIMEOUT_SECONDS)
        report = json.loads(done.stdout)
    except (subprocess.TimeoutExpired, ValueError, OSError) as exc:
        return {"findings": [], "error": f"graphlint check did not give a report: {type(exc).__name__}: {exc}"}
    if not isinstance(report, dict) or not isinstance(report.get("findings"), list):
        return {"findings": [], "error": "graphlint check gave a report without findings"}
    traced = {(os.path.abspath(f.file), f.line) for f in trace_findings if f.file and f.line}
    marked = []
    for finding in report["findings"]:
        path, line = finding.get("path"), finding.get("line")
        confirmed = bool(path) and (os.path.abspath(path), line) in traced
        marked.append({**finding, "confirmed": confirmed})
    return {"findings": marked, "error": None}
