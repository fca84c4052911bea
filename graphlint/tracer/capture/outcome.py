"""What each capture mode hands back to the stage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphlint.tracer.findings import Finding


@dataclass
class CaptureOutcome:
    findings: list[Finding] = field(default_factory=list)
    graphs: int | None = None  # graphs captured (real modes) or audited
    artifacts: dict[str, Any] = field(default_factory=dict)  # JSON-serialisable, mode-specific
