"""Findings for the copies the seeds know a remedy for; the remedies themselves (hints in
English and Chinese, with refs) are signatures in the knowledge base
(``graphlint/tracer/knowledge/signatures.toml``, ids ``copies-*``):

- in-place ops on graph inputs → copies back (torchair#231: TensorMove from 0.02% to 50%);
- in-place ops through views of a shared buffer, fixed-stride views → scatters and ViewCopy
  (torchair#241: clone the view first);
- concat of mixed dtypes → Casts; concat itself never promotes on NPU (torchair#514, not a bug).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from graphlint.tracer.copies.aten import GROUPS
from graphlint.tracer.findings import Finding
from graphlint.tracer.knowledge import annotate

REMEDIED_GROUPS: tuple[str, ...] = ("input-mutation", "view-mutation", "strided-view")


def suggestions(aten: dict[str, Any] | None, ge: dict[str, Any] | None, lang: str = "en") -> list[dict[str, Any]]:
    """The copy findings as JSON, each with the knowledge base's hint in ``lang``."""
    return [annotate(finding, lang).to_json() for finding in copy_findings(aten, ge)]


def copy_findings(aten: dict[str, Any] | None, ge: dict[str, Any] | None) -> list[Finding]:
    """One finding per source line and remedied group, one per concat of mixed dtypes, and one
    for GE TensorMoves when the aten graphs show no input mutation to explain them."""
    by_place: dict[tuple[str, Any, Any], Counter[str]] = defaultdict(Counter)
    for graph in (aten or {}).get("graphs", []):
        for line in graph["lines"]:
            if line["group"] in REMEDIED_GROUPS:
                by_place[(line["group"], line["file"], line["line"])][line["op"]] += line["count"]
    findings = [
        _finding(f"copies-{group}", f"{_copies(ops)}: {GROUPS[group]}", file, line, sum(ops.values()))
        for (group, file, line), ops in by_place.items()
    ]
    for cat in (aten or {}).get("mixed_dtype_cats", []):
        message = (
            f"torch.cat of {' and '.join(sorted(set(cat['dtypes'])))} inputs in {cat['graph']}: "
            "each input is cast to the promoted dtype before the concat"
        )
        findings.append(_finding("copies-mixed-dtype-cat", message, cat["file"], cat["line"], 1, "info"))
    tensor_moves = (ge or {}).get("ops", {}).get("TensorMove", 0)
    if tensor_moves and not any(group == "input-mutation" for group, _, _ in by_place):
        message = f"{tensor_moves} TensorMove in the GE graphs"
        findings.append(_finding("copies-input-mutation", message, None, None, tensor_moves))
    return findings


def _copies(ops: Counter[str]) -> str:
    total = sum(ops.values())
    listed = ", ".join(f"{op} ×{n}" for op, n in ops.most_common())
    return f"{total} cop{'y' if total == 1 else 'ies'} ({listed})"


def _finding(
    kind: str, message: str, file: str | None, line: int | None, count: int, severity: str = "warning"
) -> Finding:
    return Finding(
        layer="torchair", stage="copies", kind=kind, message=message, file=file, line=line,
        severity=severity, count=count,  # type: ignore[arg-type]
    )
