"""Assemble the design's report object from what the supervisor collected.

Findings get their knowledge-base hint (in ``--lang``) and portable paths; the verdict names the
layer of the first failing stage; ``copies`` is built from the aot and torchair artifacts; the
static checker's findings for the target's own files are added with ``confirmed`` marks.
"""

from __future__ import annotations

from typing import Any

from graphlint.tracer.findings import Finding
from graphlint.tracer.knowledge import annotate
from graphlint.tracer.ladder import LadderOutcome
from graphlint.tracer.locate import display_path
from graphlint.tracer.stages.base import TraceOptions

REPORT_VERSION = 1


def build_report(outcome: LadderOutcome, options: TraceOptions) -> dict[str, Any]:
    from graphlint.tracer.copies.report import build_copies_report
    from graphlint.tracer.env import environment_facts

    stage_names = list(outcome.results)  # in ladder order
    findings: list[Finding] = []
    for name in stage_names:
        for data in outcome.results[name].get("findings", []):
            finding = annotate(Finding.from_json(data), options.lang)
            if finding.file:
                finding.file = display_path(finding.file)
            findings.append(finding)
    artifacts = {name: outcome.results[name].get("artifacts", {}) for name in stage_names}
    aten = artifacts.get("aot", {}).get("copies_aten")
    ge = artifacts.get("torchair", {}).get("copies_ge")
    report: dict[str, Any] = {
        "version": REPORT_VERSION,
        "target": outcome.target_name,
        "environment": outcome.environment or environment_facts(),
        "stages": [_stage_row(outcome.results[name]) for name in stage_names],
        "findings": [f.to_json() for f in findings],
        "verdict": verdict(stage_names, outcome, findings),
        "copies": build_copies_report(aten, ge, options.lang) if aten is not None or ge is not None else None,
        "static": outcome.static.result(findings) if outcome.static else {"findings": [], "error": None},
    }
    return report


def unloaded_report(target_spec: str, finding_json: dict[str, Any], options: TraceOptions) -> dict[str, Any]:
    """The report of a target whose own code raised while it was loaded: that finding (layer
    ``model``, at the user's line) and every stage asked for skipped."""
    from graphlint.tracer.env import environment_facts
    from graphlint.tracer.stages import STAGE_ORDER

    finding = annotate(Finding.from_json(finding_json), options.lang)
    if finding.file:
        finding.file = display_path(finding.file)
    where = f" at {finding.file}:{finding.line}" if finding.file else ""
    return {
        "version": REPORT_VERSION,
        "target": target_spec,
        "environment": environment_facts(options.torchair),
        "stages": [
            {"name": name, "status": "skipped", "mode": "real", "seconds": 0.0, "reason": "the target did not load"}
            for name in STAGE_ORDER
            if name in options.stages
        ],
        "findings": [finding.to_json()],
        "verdict": {
            "layer": "model",
            "stage": None,
            "inconclusive": [],
            "summary": f"loading the target failed{where}: {finding.message.splitlines()[0]}",
        },
        "copies": None,
        "static": {"findings": [], "error": None},
    }


def _stage_row(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in ("findings", "artifacts")}


def verdict(stage_names: list[str], outcome: LadderOutcome, findings: list[Finding]) -> dict[str, Any]:
    """The layer of the first failing stage: of its first error finding (an accuracy mismatch
    is layer ``accuracy``), else the stage's own layer. Null when no stage failed; ``inconclusive``
    lists the stages that ran but could not do their check, and the summary names them."""
    unchecked = [n for n in stage_names if outcome.results[n]["status"] == "inconclusive"]
    for name in stage_names:
        if outcome.results[name]["status"] != "failed":
            continue
        errors = [f for f in findings if f.stage == name and f.severity == "error"]
        first = errors[0] if errors else None
        layer = first.layer if first else outcome.layers.get(name, name)
        where = f" at {first.file}:{first.line}" if first and first.file else ""
        what = first.message.splitlines()[0] if first else outcome.results[name].get("reason") or "failed"
        return {"layer": layer, "stage": name, "summary": f"{name} failed{where}: {what}", "inconclusive": unchecked}
    if unchecked:
        why = "; ".join(f"{n}: {outcome.results[n].get('reason') or 'not checked'}" for n in unchecked)
        return {
            "layer": None, "stage": None, "inconclusive": unchecked,
            "summary": f"no stage failed, but {', '.join(unchecked)} could not do its check ({why})",
        }
    ran = [n for n in stage_names if outcome.results[n]["status"] == "passed"]
    return {"layer": None, "stage": None, "inconclusive": [],
            "summary": f"every stage that ran passed ({', '.join(ran) or 'none'})"}


def exit_status(report: dict[str, Any], strict: bool = False) -> int:
    """0 when no stage that ran failed (and, in a merged multi-rank report, the ranks agree: no
    verdict), 1 otherwise; with ``strict`` (``--strict``) an inconclusive stage is 1 as well."""
    failed = any(stage["status"] == "failed" for stage in report["stages"])
    unchecked = strict and any(stage["status"] == "inconclusive" for stage in report["stages"])
    return 1 if failed or unchecked or report["verdict"]["layer"] is not None else 0


def encodable(value: Any) -> Any:
    """``value`` with every string made encodable. Strings from user code may hold lone
    surrogates (bytes that are not UTF-8, decoded with surrogateescape as ``os.fsdecode`` does
    for file names); no writer can encode them, so they are spelled out (``\\udce9``)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {encodable(k): encodable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [encodable(v) for v in value]
    return value
