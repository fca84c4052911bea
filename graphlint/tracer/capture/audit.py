"""The capture audit (stage mode ``audit``): what would break graph capture, found on a CPU.

``fake_device`` compiles the target with everything on the stand-in device; ``hazards`` and
``npu_kernels`` judge each aten graph; each hazard becomes a finding at the user's line (from the
node's ``stack_trace``), with the codes the static rules use (GL201–GL203) plus GL204. How the
run ended is judged too: a host tensor meeting device tensors (GL203), or eager code reading a
tensor's value between two graphs (GL202), is a finding at the line that raised.
"""

from __future__ import annotations

import functools
import traceback
from dataclasses import dataclass, field

from graphlint.tracer.capture.codes import HOST_TENSOR, SYNC, CaptureCode
from graphlint.tracer.capture.custom_ops import InsideHazard, audit_custom_ops
from graphlint.tracer.capture.fake_device import Frames, in_graph_code, run_on_audit_device
from graphlint.tracer.capture.hazards import Hazard, find_hazards, find_value_reads
from graphlint.tracer.capture.npu_kernels import find_cpu_fallbacks, read_npu_kernels
from graphlint.tracer.capture.outcome import STAGE, CaptureOutcome, capture_finding
from graphlint.tracer.capture.replay import check_replays
from graphlint.tracer.classify.exception import finding_of_exception
from graphlint.tracer.classify.unwrap import real_cause
from graphlint.tracer.dump import dump_graphs
from graphlint.tracer.findings import Finding
from graphlint.tracer.knowledge import annotate
from graphlint.tracer.locate import (
    display_path,
    frames_of_stack_trace,
    pick_user_frame,
    user_line_of_exception,
    user_line_of_stack_trace,
)
from graphlint.tracer.recording import RecordedGraph
from graphlint.tracer.stages.base import StageContext, TraceTarget
from graphlint.tracer.torchair.locate import TorchNpuSource, locate_torch_npu

# Messages torch raises when a meta tensor's value is read (``.item()``, ``bool(t)``, printing).
_VALUE_READ_ON_META = ("cannot be called on meta tensors", "out of meta tensor", "data-dependent")
_DEVICE_MISMATCH = "found at least two devices"


@dataclass
class AuditResult:
    findings: list[Finding] = field(default_factory=list)
    graphs: list[RecordedGraph] = field(default_factory=list)  # the aten graphs audited
    npu_kernels: str | None = None  # the torch_npu whose kernel list was used
    fallback_check_skipped: str | None = None  # why the CPU-fallback check did not run
    meta_inputs_faked: list[str] = field(default_factory=list)  # ops audited by the per-node fallback
    custom_ops_audited: list[str] = field(default_factory=list)  # custom ops audited from inside
    custom_ops_opaque: dict[str, str] = field(default_factory=dict)  # custom op → why not
    patch_error: str | None = None  # why the stand-in device could not be set up on this torch


def audit_target(target: TraceTarget, torchair: str | None = None, lang: str = "en") -> AuditResult:
    """Audit ``target``; ``torchair`` is ``--torchair PATH`` (where to find torch_npu's kernels)."""
    result = AuditResult()
    run = run_on_audit_device(target)
    result.graphs, result.patch_error = run.graphs, run.patch_error
    result.meta_inputs_faked = run.meta_inputs_faked
    hazards = [h for g in run.dynamo_graphs for h in find_value_reads(g.module)]
    hazards += [h for g in run.graphs for h in find_hazards(g.module)]
    source, result.fallback_check_skipped = _torch_npu_source(torchair)
    kernels = None
    if source is not None:
        result.npu_kernels = source.describe()
        kernels = _npu_kernels(source)
        hazards += [h for g in run.graphs for h in find_cpu_fallbacks(g.module, kernels)]
    findings = [_finding_of_hazard(h, target.user_files) for h in hazards]
    inside = audit_custom_ops([g.module for g in run.graphs], kernels)
    result.custom_ops_audited, result.custom_ops_opaque = inside.audited, inside.unaudited
    findings += [_finding_inside(h, target.user_files) for h in inside.hazards]
    findings += [_finding_of_value_read(frames, target.user_files) for frames in run.value_reads]
    if run.error is not None:
        findings.extend(_findings_of_run_error(run.error, target.user_files))
    result.findings = [annotate(f, lang) for f in merge_duplicates(findings)]
    return result


def capture(ctx: StageContext) -> CaptureOutcome:
    """The stage's ``audit`` mode."""
    result = audit_target(ctx.target, ctx.options.torchair, ctx.options.lang)
    findings = result.findings
    artifacts: dict[str, object] = {}
    if len(ctx.target.inputs) > 1:  # a replay needs a second call
        replays = check_replays(ctx.target, ctx.options.capture_limit)
        findings = findings + [annotate(f, ctx.options.lang) for f in replays.findings]
        artifacts["replay"] = replays.summary
    artifacts |= {
        "npu_kernels": result.npu_kernels,
        "fallback_check_skipped": result.fallback_check_skipped,
        "meta_inputs_faked": result.meta_inputs_faked,
        "custom_ops_audited": result.custom_ops_audited,
        "custom_ops_opaque": result.custom_ops_opaque,
        "graphs_dumped": dump_graphs(ctx, "capture", result.graphs),
    }
    return CaptureOutcome(findings, len(result.graphs), artifacts, inconclusive=unaudited_reason(result))


def unaudited_reason(result: AuditResult) -> str | None:
    """Why the audit could not vouch for the target: it audited no graph at all, or it stopped
    before the end (graphs compiled after that point were never seen), or this torch refused its
    stand-in device. None when it could."""
    if result.patch_error is not None:
        return f"the audit could not run on this torch: {result.patch_error}"
    stopped = next((f for f in result.findings if f.kind == "audit-incomplete"), None)
    if not result.graphs and not any(f.severity == "error" for f in result.findings):
        cause = f": {stopped.message.split(': ', 1)[-1].splitlines()[0]}" if stopped else ""
        return f"no graph was audited{cause}"
    if stopped is not None:
        return stopped.message.splitlines()[0]
    return None


def _torch_npu_source(torchair: str | None) -> tuple[TorchNpuSource | None, str | None]:
    try:
        source = locate_torch_npu(torchair)
    except FileNotFoundError as exc:
        return None, f"CPU-fallback check skipped: {exc}"
    if source is None:
        return None, (
            "CPU-fallback check skipped: no torch_npu found (install it, pass --torchair PATH, "
            "or run `graphlint torchair fetch`)"
        )
    return source, None


@functools.cache
def _npu_kernels(source: TorchNpuSource) -> frozenset[str]:
    return read_npu_kernels(source)


def _finding_of_hazard(hazard: Hazard, user_files: set[str]) -> Finding:
    where = user_line_of_stack_trace(hazard.stack_trace, user_files)
    details = {"op": hazard.op, "node": hazard.node, **hazard.details}
    frames = frames_of_stack_trace(hazard.stack_trace)
    if where is None and frames:  # all in libraries (a transformers model): say where, at least
        details["library_frame"] = "{}:{}".format(*frames[-1])
    return capture_finding(hazard.code, hazard.message, where, **details)


def _finding_inside(inside: InsideHazard, user_files: set[str]) -> Finding:
    """A hazard inside a custom op: at the user's line of the call, with the line inside the op."""
    hazard = inside.hazard
    call = user_line_of_stack_trace(inside.call_stack_trace, user_files)
    line = user_line_of_stack_trace(hazard.stack_trace, {*user_files, inside.inside_file})
    details: dict[str, object] = {"op": hazard.op, "node": hazard.node, "custom_op": inside.op, **hazard.details}
    where = ""
    if line is not None:
        details["inside_op"] = f"{display_path(line[0])}:{line[1]}"
        where = f" at {details['inside_op']}"
    message = f"inside custom op {inside.op}{where}: {hazard.message}"
    return capture_finding(hazard.code, message, call or line, **details)


def _finding_of_value_read(frames: Frames, user_files: set[str]) -> Finding:
    return capture_finding(
        SYNC,
        "eager code reads a tensor's value here, between two compiled graphs (a device sync that "
        "splits the captured region)",
        pick_user_frame(frames, user_files),
    )


def _findings_of_run_error(error: BaseException, user_files: set[str]) -> list[Finding]:
    cause = real_cause(error)
    text = str(cause)
    where = user_line_of_exception(error, user_files)
    if _DEVICE_MISMATCH in text:
        return [
            capture_finding(
                HOST_TENSOR,
                "a host tensor is combined with device tensors here: created without device= (or a plain "
                "tensor attribute, not a buffer), it stays on the host when the model runs on the device",
                where,
                exception=type(cause).__name__,
            )
        ]
    if in_graph_code([(f.filename, f.lineno or 0) for f in traceback.extract_tb(error.__traceback__)]):
        return []  # a traced graph ran on data-less meta tensors; the graph itself was audited
    if any(marker in text for marker in _VALUE_READ_ON_META):
        return [
            capture_finding(
                SYNC,
                "eager code reads a tensor's value here (a device sync that splits the captured region); "
                "graphs compiled after this point were not audited",
                where,
                exception=type(cause).__name__,
            )
        ]
    incomplete = finding_of_exception(
        error, stage=STAGE, layer="capture", user_files=user_files, default_kind="audit-incomplete"
    )
    incomplete.severity = "warning"
    incomplete.message = (
        f"the audit stopped early; graphs compiled after this point were not audited: {incomplete.message}"
    )
    return [incomplete]


def merge_duplicates(findings: list[Finding]) -> list[Finding]:
    """One finding per (code, kind, file, line); ``count`` says how many distinct ops it covers
    (``.item()`` is seen twice, as dynamo's ``Tensor.item`` and AOT's ``_local_scalar_dense``,
    and counts once)."""
    merged: dict[tuple[object, ...], Finding] = {}
    ops: dict[tuple[object, ...], set[str]] = {}
    for finding in findings:
        key = (finding.code, finding.kind, finding.file, finding.line)
        merged.setdefault(key, finding)
        ops.setdefault(key, set()).add(_counted_op(finding))
    for key, finding in merged.items():
        finding.count = len(ops[key])
    return list(merged.values())


def _counted_op(finding: Finding) -> str:
    """The op a finding counts as: one ``.item()`` is both ``Tensor.item`` and ``_local_scalar_dense``."""
    op = str(finding.details.get("op", finding.message))
    return "value read" if op in ("Tensor.item", "aten._local_scalar_dense") else op
