"""The static checker's findings for the target's own files, beside the trace's.

It runs through its stable JSON contract (``graphlint check --format json FILES``) in a
subprocess started as soon as the target's files are known, so it costs no time beside the
ladder. A static finding is ``confirmed`` when the trace found something on the same line of
the same file: the trace saw the code the rule points at actually go wrong.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from graphlint.tracer.findings import Finding

CHECK_TIMEOUT_SECONDS = 120


class StaticCheck:
    """``graphlint check`` of the user's files, running in the background."""

    def __init__(self, user_files: list[str]) -> None:
        self.process: subprocess.Popen[str] | None = None
        if user_files:
            command = [sys.executable, "-m", "graphlint", "check", "--format", "json", "--no-cache", *user_files]
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )

    def result(self, trace_findings: list[Finding]) -> dict[str, Any]:
        """``{"findings": [static finding + "confirmed"], "error": str | None}``."""
        if self.process is None:
            return {"findings": [], "error": None}
        try:
            out, err = self.process.communicate(timeout=CHECK_TIMEOUT_SECONDS)
            report = json.loads(out)
        except (subprocess.TimeoutExpired, ValueError) as exc:
            self.process.kill()
            self.process.communicate()
            return {"findings": [], "error": f"graphlint check gave no report: {type(exc).__name__}: {exc}"}
        if not isinstance(report, dict) or not isinstance(report.get("findings"), list):
            return {"findings": [], "error": "graphlint check gave a report without findings"}
        traced = {(os.path.abspath(f.file), f.line) for f in trace_findings if f.file and f.line}
        marked = []
        for finding in report["findings"]:
            path, line = finding.get("path"), finding.get("line")
            confirmed = bool(path) and (os.path.abspath(path), line) in traced
            marked.append({**finding, "confirmed": confirmed})
        return {"findings": marked, "error": None}

    def cancel(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.communicate()
