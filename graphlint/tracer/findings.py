"""The data the tracer produces: findings and stage results, as in the design's JSON.

Plain dataclasses with ``to_json()``; writers (text, HTML, JSON) and the supervisor read them.
They cross the worker → supervisor boundary as JSON, so every field is JSON-serialisable.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Layer = Literal["model", "dynamo", "aot", "torchair", "capture", "accuracy", "distributed"]
# ``inconclusive``: the stage ran but could not do its check (it audited no graph, a torch patch
# failed, a stand-in answered); never shown as passed, and ``--strict`` makes it exit 1.
Status = Literal["passed", "failed", "skipped", "inconclusive"]
Mode = Literal["real", "offline", "offline-static", "cuda", "audit"]
Severity = Literal["error", "warning", "info"]


@dataclass
class Finding:
    """One thing the trace found, in the layer where it happened, at the user's line."""

    layer: Layer
    stage: str
    kind: str  # short machine name: "graph-break", "recompile", "crash", "hang", "host-device-copy", …
    message: str
    code: str | None = None  # GL2xx when a static rule shares the vocabulary, GBxxxx for graph breaks
    file: str | None = None  # the user's file (never a torch-internal frame)
    line: int | None = None
    severity: Severity = "error"
    hint: str | None = None  # from the knowledge base, in the language asked for
    refs: list[str] = field(default_factory=list)  # seed references: "torchair#236"
    count: int = 1  # identical (code, file, line) findings are listed once with a count
    details: dict[str, Any] = field(default_factory=dict)  # op, node, exception type, stack dump…

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if not data["details"]:
            del data["details"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Finding":
        return cls(**data)


@dataclass
class StageResult:
    """What one stage of the ladder did."""

    name: str
    status: Status
    mode: Mode = "real"
    seconds: float = 0.0
    # CPU seconds of the worker's process (all its threads) over the stage; None where no worker
    # measured it (a crashed or hung stage, one the target never reached)
    cpu_seconds: float | None = None
    reason: str | None = None  # why skipped or inconclusive, or a one-line cause of failure
    graphs: int | None = None
    graph_breaks: int | None = None
    recompiles: int | None = None
    findings: list[Finding] = field(default_factory=list)
    # JSON-serialisable by-products for later stages and writers: "copies", "ge_graphs", "ops"…
    artifacts: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The stage-table row of the report (findings and artifacts are reported elsewhere)."""
        row: dict[str, Any] = {
            "name": self.name,
            "status": self.status,
            "mode": self.mode,
            "seconds": round(self.seconds, 3),
        }
        if self.cpu_seconds is not None:
            row["cpu_seconds"] = round(self.cpu_seconds, 3)
        if self.reason is not None:
            row["reason"] = self.reason
        for key in ("graphs", "graph_breaks", "recompiles"):
            value = getattr(self, key)
            if value is not None:
                row[key] = value
        return row
