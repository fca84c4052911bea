"""What each capture mode hands back to the stage, and how a failed attempt becomes a finding."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from graphlint.tracer.accuracy import compare_outputs
from graphlint.tracer.classify.exception import finding_of_exception
from graphlint.tracer.capture.codes import CaptureCode
from graphlint.tracer.findings import Finding

STAGE = "capture"
T = TypeVar("T")


@dataclass
class CaptureOutcome:
    findings: list[Finding] = field(default_factory=list)
    graphs: int | None = None  # graphs captured (real modes) or audited
    artifacts: dict[str, Any] = field(default_factory=dict)  # JSON-serialisable, mode-specific
    inconclusive: str | None = None  # why the mode could not do its check (the stage is then inconclusive)


def capture_finding(code: CaptureCode, message: str, where: tuple[str, int] | None, **details: Any) -> Finding:
    """A capture-layer finding with one of the capture codes, at ``where`` (file, line)."""
    file, line = where if where else (None, None)
    return Finding(
        layer="capture", stage=STAGE, kind=code.kind, code=code.code, message=message,
        file=file, line=line, details=dict(details),
    )


def attempt(findings: list[Finding], user_files: set[str], run: str, body: Callable[[], T]) -> T | None:
    """``body()``; when it raises, None (nothing to compare) and a capture finding at the user's
    line, its ``details["run"]`` naming the attempt ("cudagraph-trees", "npugraph_ex"…)."""
    try:
        return body()
    except Exception as exc:  # a capture or replay that fails is what the real modes look for
        finding = finding_of_exception(
            exc, stage=STAGE, layer="capture", user_files=user_files, default_kind="capture-error"
        )
        finding.details["run"] = run
        findings.append(finding)
        return None


def compare_replay(findings: list[Finding], run: str, reference: list[Any] | None, replayed: list[Any] | None) -> None:
    """An ``accuracy`` finding when the replayed outputs differ from eager's (one per input)."""
    if reference is None or replayed is None:
        return
    mismatch = compare_outputs(STAGE, reference[: len(replayed)], replayed)
    if mismatch is not None:
        mismatch.details["run"] = run
        findings.append(mismatch)
