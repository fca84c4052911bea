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

import functools
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.nn.utils.stateless import _reparametrize_module
from torch.utils._pytree import tree_map_only

from graphlint.tracer.locate import is_library_file
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


def in_graph_code(frames: Frames) -> bool:
    """Whether a stack runs a compiled FX graph (its code lives in ``<eval_with_key>.N``)."""
    return any(file.startswith("<eval_with_key>") for file, _ in frames)


def to_audit_device(value: Any) -> Any:
    """``value`` (any pytree: tuple, list, dict of tensors…) with every tensor moved to meta."""
    return tree_map_only(torch.Tensor, _moved_tensor, value)


def _moved_tensor(tensor: torch.Tensor) -> torch.Tensor:
    moved = tensor.detach().to(AUDIT_DEVICE)
    if isinstance(tensor, torch.nn.Parameter):
        return torch.nn.Parameter(moved, requires_grad=tensor.requires_grad)
    return moved


def modules_reached_by(fn: Callable[..., Any]) -> list[torch.nn.Module]:
    """The modules ``fn`` runs: itself, the instance of a bound method, what a ``partial`` wraps,
    and modules in its closure or among the globals its code names."""
    found: dict[int, torch.nn.Module] = {}
    pending: list[Any] = [fn]
    seen: set[int] = set()
    while pending:
        obj = pending.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.nn.Module):
            found[id(obj)] = obj
            continue
        if isinstance(obj, functools.partial):
            pending.extend([obj.func, *obj.args, *obj.keywords.values()])
            continue
        pending.extend(_referenced_objects(obj))
    return list(found.values())


def _referenced_objects(fn: Any) -> list[Any]:
    self_obj = getattr(fn, "__self__", None)
    code = getattr(fn, "__code__", None)
    referenced = [self_obj] if self_obj is not None else []
    if code is None or is_library_file(code.co_filename):  # the user's modules live in user code
        return referenced
    referenced.extend(cell.cell_contents for cell in fn.__closure__ or () if _cell_is_set(cell))
    fn_globals = getattr(fn, "__globals__", {})
    referenced.extend(fn_globals[name] for name in code.co_names if name in fn_globals)
    return referenced


def _cell_is_set(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a closure variable not assigned yet
        return False
    return True


@contextmanager
def modules_on_audit_device(modules: list[torch.nn.Module]) -> Iterator[None]:
    """Swap the parameters and buffers of ``modules`` for meta copies, restoring them after."""
    with ExitStack() as stack:
        for module in modules:
            state = {**dict(module.named_parameters()), **dict(module.named_buffers())}
            moved = {name: _moved_tensor(t) for name, t in state.items()}
            stack.enter_context(_reparametrize_module(module, moved, tie_weights=True))
        yield


@contextmanager
def meta_value_reads(reads: list[Frames]) -> Iterator[None]:
    """While active, reading a meta tensor's value gives a stand-in and appends the reader's
    stack to ``reads`` (reads made by a compiled graph are its own ``_local_scalar_dense`` node,
    already in the graph, and are left out)."""
    library = torch.library.Library("aten", "IMPL")

    def stand_in_value(tensor: torch.Tensor) -> bool | float | int:
        frames = [(f.filename, f.lineno or 0) for f in traceback.extract_stack()[:-1]]
        if not in_graph_code(frames):
            reads.append(frames)
        if tensor.dtype == torch.bool:
            return True
        return 1.0 if tensor.dtype.is_floating_point or tensor.dtype.is_complex else 1

    library.impl("_local_scalar_dense", stand_in_value, "Meta")
    try:
        yield
    finally:
        library._destroy()


def run_on_audit_device(target: TraceTarget) -> AuditRun:
    """Compile and call ``target`` once per input with everything on meta; never raises for
    what the target does (the error is kept in the result)."""
    recorder = GraphRecorder()
    run = AuditRun()
    inputs = [to_audit_device(args) for args in target.inputs]
    kwargs = [to_audit_device(kw) for kw in target.kwargs]
    keep_data_dependent_ops = torch._dynamo.config.patch(
        capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True
    )
    # Lets a meta ``nonzero`` return a shape so the run goes on to later graphs.
    assume_nonzero = torch.fx.experimental._config.patch(meta_nonzero_assume_all_nonzero=True)
    try:
        with (
            modules_on_audit_device(modules_reached_by(target.fn)),
            keep_data_dependent_ops,
            assume_nonzero,
            meta_value_reads(run.value_reads),
        ):
            run_compiled(target.fn, inputs, kwargs, recorder.aot_eager)
    except Exception as exc:  # the target's own failure, judged by the caller
        run.error = exc
    finally:
        torch._dynamo.reset()
    run.graphs = recorder.of_kind("forward")
    run.dynamo_graphs = recorder.of_kind("dynamo")
    return run
