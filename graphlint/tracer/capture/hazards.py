"""What in an aten graph breaks graph capture: device crossings, syncs, host tensors.

The graph is one that ``fake_device`` traced with the accelerator's tensors on ``meta``, so a
tensor's device in ``node.meta["val"]`` says where it would live: ``cpu`` is the host, anything
else the accelerator. Judged per node:

- GL201 a copy (``_to_copy``, ``copy_``, ``to``…) whose source and destination devices differ,
  in either direction (``.to(x.device)`` of a host tensor, ``.cpu()``).
- GL202 a sync: an op that reads a tensor's value on the host (``_local_scalar_dense``, from
  ``.item()``) or whose output shape depends on tensor values (``nonzero``, ``masked_select``,
  ``unique``, boolean-mask indexing): torch marks those by binding new unbacked sizes
  (``node.meta["unbacked_bindings"]``), which covers every such op, not a list of names.
- GL203 a tensor created on the host inside the region: a factory op with no tensor inputs that
  returns a host tensor (``torch.arange(n)`` without ``device=``), or a lifted host constant
  (``torch.tensor([...])`` becomes a ``get_attr`` constant; a plain tensor attribute that is not
  a buffer, a graph input left on the host).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
from torch.utils._pytree import tree_leaves

from graphlint.tracer.capture.codes import HOST_DEVICE_COPY, HOST_TENSOR, SYNC, CaptureCode

# Ops that copy their input to another device when asked to (aten names, without overload).
DEVICE_COPY_OPS = frozenset({"_to_copy", "to", "copy", "copy_", "_copy_from", "_copy_from_and_resize"})
# Ops that read a tensor's value on the host whatever their output shape.
HOST_READ_OPS = frozenset({"_local_scalar_dense", "item", "_assert_async", "equal", "is_nonzero"})
# Tensor methods that read values on the host, as dynamo records them (``call_method``).
VALUE_READ_METHODS = frozenset({"item", "tolist"})


@dataclass
class Hazard:
    """One node that breaks capture, before it is placed at the user's line."""

    code: CaptureCode
    op: str  # "aten._to_copy"
    node: str  # the node's name in its graph
    message: str
    stack_trace: str | None
    details: dict[str, Any] = field(default_factory=dict)  # more facts for the finding: direction…


def is_host(device: torch.device | None) -> bool:
    return device is not None and device.type == "cpu"


def is_empty(tensor: torch.Tensor) -> bool:
    """Known to hold no elements: copying or keeping it moves no data (an empty KV cache)."""
    numel = tensor.numel()
    return isinstance(numel, int) and numel == 0


def tensors_in(value: Any) -> list[torch.Tensor]:
    return [leaf for leaf in tree_leaves(value) if isinstance(leaf, torch.Tensor)]


def node_tensors(node: torch.fx.Node) -> list[torch.Tensor]:
    """The tensors a node produces, from the fake values AOT recorded."""
    return tensors_in(node.meta.get("val"))


def input_tensors(node: torch.fx.Node) -> list[torch.Tensor]:
    """The tensors a node consumes, in argument order."""
    values = [arg.meta.get("val") for arg in node.all_input_nodes]
    return tensors_in(values)


def aten_name(node: torch.fx.Node) -> str | None:
    """``"_to_copy"`` for ``aten._to_copy.default``; None for anything not an aten op."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload) or target.namespace != "aten":
        return None
    return target._opname


def find_hazards(graph_module: torch.fx.GraphModule) -> list[Hazard]:
    """Every capture hazard of one traced graph, in graph order."""
    hazards: list[Hazard] = []
    for node in graph_module.graph.nodes:
        if node.op in ("get_attr", "placeholder"):
            hazards.extend(_lifted_host_constant(node))
        elif node.op == "call_function":
            hazards.extend(_device_copy(node) + _sync(node) + _host_factory(node))
    return hazards


def find_value_reads(dynamo_graph: torch.fx.GraphModule) -> list[Hazard]:
    """``.item()`` / ``.tolist()`` in a dynamo graph. Needed beside the aten graph: when the value
    only feeds tensor arithmetic, AOT folds it back into tensor ops and no ``_local_scalar_dense``
    is left, yet with dynamo's default settings (``capture_scalar_outputs=False``) the read is a
    graph break and a sync in the middle of the captured region."""
    return [
        Hazard(
            SYNC,
            f"Tensor.{node.target}",
            node.name,
            f"Tensor.{node.target}() reads a tensor value on the host (a device sync) inside the captured region",
            node.meta.get("stack_trace"),
        )
        for node in dynamo_graph.graph.nodes
        if node.op == "call_method" and node.target in VALUE_READ_METHODS
    ]


def _hazard(code: CaptureCode, node: torch.fx.Node, message: str, **details: Any) -> Hazard:
    op = f"aten.{aten_name(node)}" if aten_name(node) else str(node.target)
    return Hazard(code, op, node.name, message, node.meta.get("stack_trace"), details)


def _device_copy(node: torch.fx.Node) -> list[Hazard]:
    name = aten_name(node)
    if name not in DEVICE_COPY_OPS:
        return []
    sources, results = input_tensors(node), node_tensors(node)
    if not sources or not results:
        return []
    if name.startswith("copy"):  # copy_(dst, src): the data goes from src to dst
        copied, source, destination = sources[-1], sources[-1].device, sources[0].device
    else:
        copied, source, destination = sources[0], sources[0].device, results[0].device
    if is_host(source) == is_host(destination) or is_empty(copied):
        return []
    direction = "host→device" if is_host(source) else "device→host"
    return [
        _hazard(
            HOST_DEVICE_COPY,
            node,
            f"aten.{name} copies a tensor {direction} inside the captured region",
            direction=direction,
        )
    ]


def _sync(node: torch.fx.Node) -> list[Hazard]:
    name = aten_name(node)
    if name in HOST_READ_OPS:
        message = f"aten.{name} reads a tensor value on the host (a device sync) inside the captured region"
        return [_hazard(SYNC, node, message)]
    if name is not None and node.meta.get("unbacked_bindings") and not _uses_unbacked_scalar(node):
        return [
            _hazard(
                SYNC,
                node,
                f"aten.{name} has an output shape that depends on tensor values (the host must wait "
                "for the device to know it) inside the captured region",
                data_dependent_shape=True,
            )
        ]
    return []


def _uses_unbacked_scalar(node: torch.fx.Node) -> bool:
    """``y[:n]`` with ``n = t.item()``: the new size comes from a value read earlier, and that
    read (``_local_scalar_dense``) is the sync already reported."""
    return any(
        isinstance(value, torch.SymInt | torch.SymBool | torch.SymFloat) and free_unbacked_symbols(value)
        for value in (arg.meta.get("val") for arg in node.all_input_nodes)
    )


def _host_factory(node: torch.fx.Node) -> list[Hazard]:
    name = aten_name(node)
    results = node_tensors(node)
    if name is None or name in DEVICE_COPY_OPS or not _only_host_data(results):
        return []
    if input_tensors(node) or _uses_unbacked_scalar(node):
        return []  # derived from another tensor or a read value: the source is reported
    message = f"aten.{name} creates a tensor on the host inside the captured region (no device=)"
    return [_hazard(HOST_TENSOR, node, message)]


def _lifted_host_constant(node: torch.fx.Node) -> list[Hazard]:
    """A ``get_attr`` constant, or a graph input, on the host: the target's inputs, parameters
    and buffers were all moved to the device, so a host input is a lifted plain attribute."""
    value = node.meta.get("val")
    if value is None:
        value = _attribute(node)
    if not _only_host_data(tensors_in(value)):
        return []
    return [
        _hazard(
            HOST_TENSOR,
            node,
            f"a host tensor ({node.target}) is lifted into the captured region as a constant: "
            "it was created without a device or is a plain tensor attribute, not a buffer",
        )
    ]


def _only_host_data(tensors: list[torch.Tensor]) -> bool:
    """Some tensors, all on the host, and not all empty."""
    return bool(tensors) and all(is_host(t.device) for t in tensors) and not all(is_empty(t) for t in tensors)


def _attribute(node: torch.fx.Node) -> Any:
    obj: Any = node.graph.owning_module
    for part in str(node.target).split("."):
        obj = getattr(obj, part, None)
    return obj
