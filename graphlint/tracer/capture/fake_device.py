"""Compile the target as if it ran on an accelerator, on a machine that has none.

With CPU inputs, ``x.to(x.device)`` and ``x.cpu()`` are no-ops that vanish from the graph, so a
graph traced on the CPU cannot show the copies a device would make. Here every input, parameter
and buffer is moved to the ``meta`` device, which stands in for the accelerator: traced with meta
inputs, ``torch.arange(n).to(x.device)`` becomes ``aten.arange(device=cpu)`` followed by
``aten._to_copy(device=meta)``, a host→device copy. Tensors the target creates without a device,
and plain tensor attributes that are neither parameters nor buffers, stay on the CPU: they are
the host tensors a real run would have too.

Dynamo is told to keep ``.item()`` and data-dependent shapes (``nonzero``, boolean masks) in the
graph, so they show up as aten ops (``_local_scalar_dense``, ops binding unbacked sizes) rather
than as graph breaks. Meta tensors hold no data, so a value read on one (``.item()``, ``bool(t)``)
returns a stand-in (1, 1.0, True) for the duration of the run, and each read made by eager code
between two graphs is recorded with its stack: it is a sync that splits the captured region. A
read that cannot be stood in for (``.tolist()``) stops the run; ``run_on_audit_device`` keeps the
graphs recorded up to that point and returns the error for the caller to judge.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

from graphlint.tracer.capture.meta_kernels import AuditPatchError, meta_kernels, nonzero_all_true
from graphlint.tracer.capture.patched_tensor_factories import tensor_factories_copying_to_device
from graphlint.tracer.capture.placement import modules_moved_to, modules_reached_by, moved_to
from graphlint.tracer.recording import GraphRecorder, RecordedGraph, run_compiled
from graphlint.tracer.stages.base import TraceTarget

AUDIT_DEVICE = torch.device("meta")
Frames = list[tuple[str, int]]  # (file, line), outermost first


@dataclass
class AuditRun:
    """The aten graphs of the target compiled on the audit device, and how the run ended."""

    graphs: list[RecordedGraph] = field(default_factory=list)  # AOT forward graphs, compile order
    dynamo_graphs: list[RecordedGraph] = field(default_factory=list)  # what AOT traced them from
    error: BaseException | None = None  # what stopped the run early, if anything
    value_reads: list[Frames] = field(default_factory=list)  # eager reads of a tensor's value
    meta_inputs_faked: list[str] = field(default_factory=list)  # ops given a plain meta tensor, faked
    patch_error: str | None = None  # why the stand-in device could not be set up on this torch


# Where a compiled FX graph runs: its generated code (``<eval_with_key>.N``), or torch's FX
# interpreter, which runs the graphs of the ``aot_eager`` backend in torch 2.6 and 2.7.
_FX_INTERPRETER = str(Path(torch.fx.interpreter.__file__))


def in_graph_code(frames: Frames) -> bool:
    """Whether a stack runs a compiled FX graph."""
    return any(file.startswith("<eval_with_key>") or file == _FX_INTERPRETER for file, _ in frames)


@contextmanager
def meta_value_reads(reads: list[Frames]) -> Iterator[None]:
    """While active, reading a meta tensor's value gives a stand-in and appends the reader's
    stack to ``reads`` (reads made by a compiled graph are its own ``_local_scalar_dense`` node,
    already in the graph, and are left out); a meta ``nonzero`` returns a shape so that the run
    goes on to later graphs. ``AuditPatchError`` when this torch refuses the stand-ins."""

    @torch.compiler.disable  # called from the target's frames, which dynamo is compiling
    def stand_in_value(tensor: torch.Tensor) -> bool | float | int:
        frames = [(f.filename, f.lineno or 0) for f in traceback.extract_stack()[:-1]]
        if not in_graph_code(frames):
            reads.append(frames)
        if tensor.dtype == torch.bool:
            return True
        return 1.0 if tensor.dtype.is_floating_point or tensor.dtype.is_complex else 1

    with meta_kernels({"_local_scalar_dense": stand_in_value, "nonzero": nonzero_all_true}):
        yield


@contextmanager
def plain_meta_tensors_faked(ops: list[str]) -> Iterator[None]:
    """Per-node fallback for a tensor that torch creates on the audit device in the middle of a
    fake-tensor trace (a list index ``qkv[..., [-2], :]`` becomes an index tensor on ``x``'s
    device): on ``meta`` it is a plain meta tensor, not a fake one, and fake tensor mode refuses
    it. A meta tensor holds no data, so it is made fake exactly as a tensor created on a real
    device would be; each op this happens to is noted in ``ops``. Other non-fake inputs are
    still refused."""
    try:
        from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode, fake_tensor_tls
    except ImportError:  # torch 2.6 has no such switch: the tensor stays refused (audit-incomplete)
        yield
        return

    original = FakeTensorMode.validate_and_convert_non_fake_tensors

    def validate(mode: FakeTensorMode, func: object, converter: object, flat_args: list[object], spec: object) -> object:
        plain_meta = [a for a in flat_args if type(a) is torch.Tensor and a.device.type == AUDIT_DEVICE.type]
        if not plain_meta or any(isinstance(a, FakeTensor) and a.fake_mode is not mode for a in flat_args):
            return original(mode, func, converter, flat_args, spec)
        saved, fake_tensor_tls.allow_non_fake_inputs_override = fake_tensor_tls.allow_non_fake_inputs_override, True
        try:
            return original(mode, func, converter, flat_args, spec)
        finally:
            fake_tensor_tls.allow_non_fake_inputs_override = saved
            if str(func) not in ops:
                ops.append(str(func))

    FakeTensorMode.validate_and_convert_non_fake_tensors = validate  # type: ignore[method-assign]
    try:
        yield
    finally:
        FakeTensorMode.validate_and_convert_non_fake_tensors = original  # type: ignore[method-assign]


def run_on_audit_device(target: TraceTarget) -> AuditRun:
    """Compile and call ``target`` once per input with everything on meta; never raises for
    what the target does (the error is kept in the result)."""
    recorder = GraphRecorder()
    run = AuditRun()
    inputs = [moved_to(args, AUDIT_DEVICE) for args in target.inputs]
    kwargs = [moved_to(kw, AUDIT_DEVICE) for kw in target.kwargs]
    keep_data_dependent_ops = torch._dynamo.config.patch(
        capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True
    )
    try:
        with (
            modules_moved_to(modules_reached_by(target.fn), AUDIT_DEVICE),
            keep_data_dependent_ops,
            meta_value_reads(run.value_reads),
            plain_meta_tensors_faked(run.meta_inputs_faked),
            tensor_factories_copying_to_device(),
        ):
            run_compiled(target.fn, inputs, kwargs, recorder.aot_eager)
    except AuditPatchError as exc:  # this torch refused a stand-in: nothing was audited
        run.patch_error = str(exc)
    except Exception as exc:  # the target's own failure, judged by the caller
        run.error = exc
    finally:
        torch._dynamo.reset()
    run.graphs = recorder.of_kind("forward")
    run.dynamo_graphs = recorder.of_kind("dynamo")
    return run
