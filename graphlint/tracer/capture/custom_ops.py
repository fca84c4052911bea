"""Custom ops audited from inside: what their Python implementation does when the graph runs.

A custom op (``torch.library.custom_op``) is one opaque node of the aten graph, yet on every call
its Python implementation runs, and whatever it does the captured region does: transformers'
``grouped_mm_fallback`` reads its offsets on the host (``offs.tolist()``) every call. Each custom
op of an audited graph that has a Python implementation is traced once per call line with
``make_fx`` on empty tensors of the node's metadata on the audit device (``meta``), with stand-ins
for the values it reads (``.item()`` and ``.tolist()`` give ones, and each read is noted at its
line); the traced graph is judged like any other (syncs, device copies, host tensors, CPU
fallbacks). A hazard found inside is reported at the user's line of the call, with the line
inside the op.

Ops given a Python kernel with ``torch.library.Library.impl`` are audited through the kernel
``library_kernels`` kept when the target was imported; ops with C++ kernels stay opaque and are
listed as such.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._pytree import tree_map

from graphlint.tracer.capture.codes import SYNC
from graphlint.tracer.capture.fake_device import Frames, meta_value_reads
from graphlint.tracer.capture.hazards import Hazard, find_hazards
from graphlint.tracer.capture.library_kernels import library_kernel
from graphlint.tracer.capture.npu_kernels import find_cpu_fallbacks

# make_fx records each node's stack (the line inside the op) where it can (torch 2.6 cannot:
# there a hazard inside the op is still found, at the call's line, without the inner line)
_STACK_TRACES = {"record_stack_traces": True} if "record_stack_traces" in inspect.signature(make_fx).parameters else {}
# Namespaces of torch's own operators: never a user's custom op.
_TORCH_NAMESPACES = frozenset({"aten", "prims", "prim", "_c10d_functional", "c10d", "_dynamo", "higher_order"})


@dataclass
class InsideHazard:
    """A hazard found inside a custom op, with the graph node that calls the op."""

    hazard: Hazard
    op: str  # "transformers::grouped_mm_fallback"
    call_stack_trace: str | None  # the calling node's stack_trace (the user's line of the call)
    inside_file: str  # the file of the op's implementation


@dataclass
class CustomOpAudit:
    hazards: list[InsideHazard] = field(default_factory=list)
    audited: list[str] = field(default_factory=list)  # custom ops traced from inside
    unaudited: dict[str, str] = field(default_factory=dict)  # op → why it stayed opaque


def python_implementation(op: Any) -> Callable[..., Any] | None:
    """The Python function a ``torch.library.custom_op`` runs, or the device kernel
    ``Library.impl`` gave the op (kept by ``library_kernels``), or None (not a custom op, a C++
    kernel, or one registered before graphlint could keep it)."""
    if not isinstance(op, torch._ops.OpOverload) or op.namespace in _TORCH_NAMESPACES:
        return None
    definitions = getattr(getattr(torch._library, "custom_ops", None), "OPDEFS", {})
    definition = definitions.get(op._schema.name)
    return getattr(definition, "_init_fn", None) or library_kernel(op)


def audit_custom_ops(graphs: list[torch.fx.GraphModule], kernels: frozenset[str] | None) -> CustomOpAudit:
    """Every custom op called in ``graphs``, traced from inside once per calling line."""
    audit = CustomOpAudit()
    seen: set[tuple[str, str | None]] = set()
    for graph in graphs:
        for node in graph.graph.nodes:
            if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
                continue
            if node.target.namespace in _TORCH_NAMESPACES:
                continue
            name = node.target._schema.name
            key = (name, node.meta.get("stack_trace"))
            if key in seen:
                continue
            seen.add(key)
            implementation = python_implementation(node.target)
            if implementation is None:
                audit.unaudited[name] = "no Python implementation known (a C++ kernel, or a Library.impl kernel registered before the target was imported)"
                continue
            try:
                inside, reads = _trace_inside(implementation, node)
            except Exception as exc:  # noqa: BLE001 - an op that cannot be traced stays opaque, said so
                why = f"its implementation could not be traced on the audit device: {type(exc).__name__}: {exc}"
                audit.unaudited[name] = why[:300]
                continue
            if name not in audit.audited:
                audit.audited.append(name)
            file = implementation.__code__.co_filename
            found = find_hazards(inside) + (find_cpu_fallbacks(inside, kernels) if kernels is not None else [])
            found += [_value_read(frames, file) for frames in reads]
            audit.hazards += [InsideHazard(h, name, node.meta.get("stack_trace"), file) for h in found]
    return audit


def _trace_inside(
    implementation: Callable[..., Any], node: torch.fx.Node
) -> tuple[torch.fx.GraphModule, list[Frames]]:
    """``implementation`` traced on empty tensors with the metadata of the node's arguments."""
    args, kwargs = tree_map(_empty_like_value, (node.args, node.kwargs))
    item_reads: list[Frames] = []  # ``.item()`` is in the traced graph (``_local_scalar_dense``)
    tolist_reads: list[Frames] = []  # ``.tolist()`` is not: the stand-in answers it in Python

    def call(*positional: Any) -> Any:
        return implementation(*positional, **kwargs)

    with meta_value_reads(item_reads), _tolist_stand_in(tolist_reads), _stack_traces_kept_for(implementation):
        traced = make_fx(call, tracing_mode="real", **_STACK_TRACES)(*args)
        _ValueRecorder(traced).run(*args)
    return traced, tolist_reads


def _empty_like_value(value: Any) -> Any:
    """An FX argument as a real value: a tensor node becomes an empty tensor of its metadata."""
    if not isinstance(value, torch.fx.Node):
        return value
    fake = value.meta.get("val")
    if not isinstance(fake, torch.Tensor):
        return fake
    size = [_concrete(s) for s in fake.shape]
    stride = [_concrete(s) for s in fake.stride()]
    return torch.empty_strided(size, stride, dtype=fake.dtype, device=fake.device)


def _concrete(size: Any) -> int:
    """A size as an int: a symbolic one by the value it was traced with."""
    if isinstance(size, torch.SymInt):
        hint = size.node.hint
        if hint is None:
            raise ValueError(f"the size {size} has no known value")
        return int(hint)
    return int(size)


class _ValueRecorder(torch.fx.Interpreter):
    """Runs the traced graph once more to give each node the ``meta["val"]`` the hazard checks
    read (where its tensors live): ``make_fx`` in real mode records only their metadata."""

    def run_node(self, n: torch.fx.Node) -> Any:
        value = super().run_node(n)
        n.meta["val"] = value
        return value


def _value_read(frames: Frames, inside_file: str) -> Hazard:
    inside = [frame for frame in frames if frame[0] == inside_file] or frames[-1:]
    trace = "".join(f'  File "{file}", line {line}, in <op>\n' for file, line in inside)
    message = "Tensor.tolist() reads a tensor's values on the host (a device sync) on every call"
    return Hazard(SYNC, "Tensor.tolist", "tolist", message, trace)


@contextmanager
def _tolist_stand_in(reads: list[Frames]) -> Iterator[None]:
    """``.tolist()`` of a meta tensor gives ones of its shape and notes the reader's stack (the
    ``_local_scalar_dense`` stand-in of ``meta_value_reads`` covers ``.item()``)."""
    original = torch.Tensor.tolist

    def tolist(tensor: torch.Tensor) -> Any:
        if tensor.device.type != "meta":
            return original(tensor)
        reads.append([(f.filename, f.lineno or 0) for f in traceback.extract_stack()[:-1]])
        value: Any = True if tensor.dtype == torch.bool else 1.0 if tensor.dtype.is_floating_point else 1
        for size in reversed(tensor.shape):
            value = [value if not isinstance(value, list) else list(value) for _ in range(int(size))]
        return value

    torch.Tensor.tolist = tolist  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.Tensor.tolist = original  # type: ignore[method-assign]


@contextmanager
def _stack_traces_kept_for(implementation: Callable[..., Any]) -> Iterator[None]:
    """``make_fx`` keeps only the frames of functions named ``forward`` or registered as
    anchors (``torch.fx.proxy._STACK_TRACE_ANCHORS``); the op's implementation is made one for
    the trace. Where torch has no anchors the hazards lack the line inside the op."""
    anchors = getattr(torch.fx.proxy, "_STACK_TRACE_ANCHORS", None)
    code = getattr(implementation, "__code__", None)
    if not isinstance(anchors, set) or code is None:
        yield
        return
    key = (code.co_filename, code.co_name)
    added = key not in anchors
    anchors.add(key)
    try:
        yield
    finally:
        if added:
            anchors.discard(key)
