"""What torchair's translation said, as findings of layer ``torchair`` (codes TAxxx).

| code  | kind                      | severity | meaning                                             |
|-------|---------------------------|----------|-----------------------------------------------------|
| TA001 | converter-not-implemented | error    | the converter exists and raises NotImplementedError |
| TA002 | converter-missing         | error    | no converter is registered for the aten op          |
| TA003 | converter-raised          | error    | a converter (or torchair's translation) raised      |
| TA004 | inconclusive              | info     | the op exists only because the trace ran on CPU     |
| TA005 | version-mismatch          | warning  | torchair's torch_npu does not pair with this torch  |

The same codes serve the static fallback (``offline-static``), where the findings are
predictions from torchair's converter registry rather than what its converters did.
"""

from __future__ import annotations

from typing import Any

from graphlint.tracer.findings import Finding, Severity
from graphlint.tracer.locate import display_path, user_line_of_stack_trace
from graphlint.tracer.recording import RecordedGraph
from graphlint.tracer.torchair.registry import Registry, op_name
from graphlint.tracer.torchair.runner import TranslationFailure, is_cpu_only_op

TORCHAIR_CODES: dict[str, tuple[str, Severity]] = {
    "converter-not-implemented": ("TA001", "error"),
    "converter-missing": ("TA002", "error"),
    "converter-raised": ("TA003", "error"),
    "inconclusive": ("TA004", "info"),
    "version-mismatch": ("TA005", "warning"),
}
_MESSAGE_LIMIT = 400


def torchair_finding(kind: str, message: str, **fields: Any) -> Finding:
    code, severity = TORCHAIR_CODES[kind]
    return Finding(layer="torchair", stage="torchair", kind=kind, code=code, severity=severity, message=message, **fields)


def finding_of_failure(failure: TranslationFailure) -> Finding:
    """Judge one failed translation by the op being converted and what was raised."""
    error = failure.error
    said = _first_line(str(error)) or type(error).__name__
    details: dict[str, Any] = {
        "op": failure.op,
        "node": failure.node,
        "graph": failure.graph,
        "exception": type(error).__name__,
        "torchair_message": str(error)[:4000],
    }
    where = {"file": failure.file, "line": failure.line, "details": details}
    op = failure.op
    if failure.stand_in is not None:
        details["stand_in"] = failure.stand_in
        subject = f"the translation of {op}" if op else "torchair's FX → GE translation"
        return torchair_finding(
            "inconclusive",
            _limited(
                f"{subject} went through graphlint's stand-in for {failure.stand_in}, which could not "
                f"answer as the native module would: not a verdict of torchair's ({type(error).__name__}: {said})"
            ),
            **where,
        )
    if op is not None and is_cpu_only_op(op):
        return torchair_finding(
            "inconclusive",
            f"{op} exists only because the trace ran on CPU (on an NPU, torch_npu dispatches "
            f"this op's composite to its own kernel); torchair said: {said}",
            **where,
        )
    if op is not None and failure.has_converter is False:
        return torchair_finding("converter-missing", f"torchair has no GE converter for {op}: {said}", **where)
    if isinstance(error, NotImplementedError):
        return torchair_finding("converter-not-implemented", _limited(said), **where)
    subject = f"torchair's converter for {op}" if op else "torchair's FX → GE translation"
    return torchair_finding("converter-raised", _limited(f"{subject} raised {type(error).__name__}: {said}"), **where)


def findings_of_failures(failures: list[TranslationFailure]) -> list[Finding]:
    """One finding per op and verdict, however many nodes of however many graphs failed the same
    way: its ``count`` is the number of nodes, ``details["lines"]`` every user line (first line
    first) and ``details["graphs"]`` the graphs they are in."""
    grouped: dict[tuple[object, ...], Finding] = {}
    for failure in failures:
        finding = finding_of_failure(failure)
        key = (finding.code, failure.op or finding.message, failure.stand_in)
        first = grouped.setdefault(key, finding)
        details = first.details
        if first is not finding:
            first.count += 1
        line = f"{display_path(failure.file)}:{failure.line}" if failure.file else None
        details.setdefault("lines", [])
        details.setdefault("graphs", [])
        if line and line not in details["lines"]:
            details["lines"].append(line)
        if failure.graph not in details["graphs"]:
            details["graphs"].append(failure.graph)
    return list(grouped.values())


def findings_of_registry(registry: Registry, graphs: list[RecordedGraph], user_files: set[str]) -> list[Finding]:
    """Predictions for the ops of ``graphs`` (AOT forward graphs) from the registry alone: what
    the converters would most likely do. One finding per op and user line."""
    findings: dict[tuple[str, str | None, int | None], Finding] = {}
    for graph in graphs:
        for node in graph.module.graph.nodes:
            if node.op != "call_function":
                continue
            op = op_name(node.target)
            status = registry.status_of(op)
            kind = _PREDICTED_KIND.get(status)
            if is_cpu_only_op(op):
                kind = "inconclusive"
            if kind is None:
                continue
            file, line = user_line_of_stack_trace(node.meta.get("stack_trace"), user_files) or (None, None)
            key = (op, file, line)
            if key in findings:
                findings[key].count += 1
                continue
            converter = registry.get(op)
            findings[key] = torchair_finding(
                kind,
                f"predicted from torchair's converter registry: {op} is {status}"
                + (f" ({converter.file}:{converter.line})" if converter else ""),
                file=file,
                line=line,
                details={"op": op, "node": node.name, "graph": graph.name, "prediction": True, "status": status},
            )
            if status == "partly":
                findings[key].severity = "warning"
    return list(findings.values())


# registry status → the finding a graph op with that status predicts ("partly" is a warning)
_PREDICTED_KIND = {
    "missing": "converter-missing",
    "not implemented": "converter-not-implemented",
    "partly": "converter-not-implemented",
}


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _limited(message: str) -> str:
    return message if len(message) <= _MESSAGE_LIMIT else message[:_MESSAGE_LIMIT] + " …"
