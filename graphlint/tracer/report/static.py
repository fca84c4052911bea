"""The static checker's findings for the target's own files, beside the trace's.

It runs through its stable JSON contract (``graphlint check --format json FILES``) in a
subprocess started as soon as the target's files are known, so it costs no time beside the
ladder. A static finding is ``confirmed`` when the trace found something on its lines (its
``line`` to ``end_line``) of the same file that agrees with it: the same code, or a graph break
with a GBxxxx code the finding ``predicts``, in any torch release's code for that break's meaning
(``confirmed_by: "code"``); or, where one side names
no code to compare (a rule that predicts no break, a break dynamo gave no code), anything on the
same line (``confirmed_by: "line"``). A break with another code on that line is something else
going wrong there, and confirms nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

from graphlint.tracer.classify.graph_break import codes_of_meaning
from graphlint.tracer.findings import Finding

CHECK_TIMEOUT_SECONDS = 120


class StaticCheck:
    """``graphlint check`` of the user's files, running in the background."""

    def __init__(self, user_files: list[str]) -> None:
        self.files = list(user_files)
        self.process: subprocess.Popen[str] | None = None
        if user_files:
            command = [sys.executable, "-m", "graphlint", "check", "--format", "json", "--no-cache", *user_files]
            # A session of its own, so that stopping it stops its parse workers too: they hold its
            # output pipes, and waiting for those to close would wait for every file they parse.
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                start_new_session=True,
            )

    def result(self, trace_findings: list[Finding]) -> dict[str, Any]:
        """``{"findings": [static finding + "confirmed"], "error": str | None}``."""
        if self.process is None:
            return {"findings": [], "error": None}
        try:
            out, err = self.process.communicate(timeout=CHECK_TIMEOUT_SECONDS)
            report = json.loads(out)
        except (subprocess.TimeoutExpired, ValueError) as exc:
            self._stop()
            return {"findings": [], "error": f"graphlint check gave no report: {type(exc).__name__}: {exc}"}
        if not isinstance(report, dict) or not isinstance(report.get("findings"), list):
            return {"findings": [], "error": "graphlint check gave a report without findings"}
        traced = traced_sites(trace_findings)
        marked = []
        for finding in report["findings"]:
            how = confirmation(finding, traced)
            marked.append({**finding, "confirmed": how is not None, "confirmed_by": how})
        return {"findings": marked, "error": None}

    def cancel(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self._stop()

    def _stop(self) -> None:
        """Kill the check and every process of its session, then collect what it wrote."""
        assert self.process is not None
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            self.process.kill()
        self.process.communicate()


def traced_sites(trace_findings: list[Finding]) -> dict[tuple[str, int], list[str | None]]:
    """The codes the trace found at each (absolute file, line). A graph break whose meaning
    graphlint knows stands for every code torch releases give that meaning (str() of a SymInt:
    GB0059 up to 2.13, GB6053 in 2.14), since a rule predicts one release's code."""
    traced: dict[tuple[str, int], list[str | None]] = {}
    for f in trace_findings:
        if f.file and f.line:
            codes = traced.setdefault((os.path.abspath(f.file), f.line), [])
            codes.append(f.code)
            codes.extend(code for code in codes_of_meaning(f.details.get("meaning")) if code != f.code)
    return traced


def confirmation(finding: dict[str, Any], traced: dict[tuple[str, int], list[str | None]]) -> str | None:
    """``"code"``, ``"line"`` or None: how the trace's findings (by absolute file and line, with
    their codes) confirm one static finding of ``graphlint check``'s JSON."""
    path, line = finding.get("path"), finding.get("line")
    if not path or not isinstance(line, int):
        return None
    path = os.path.abspath(path)
    end = finding.get("end_line") if isinstance(finding.get("end_line"), int) else line
    agreeing = {finding.get("code"), *(finding.get("predicts") or ())}
    for at in range(line, max(end, line) + 1):
        if any(code in agreeing for code in traced.get((path, at), ())):
            return "code"
    codes = traced.get((path, line))
    if codes is None:
        return None
    if not finding.get("predicts") or None in codes:
        return "line"
    return None
