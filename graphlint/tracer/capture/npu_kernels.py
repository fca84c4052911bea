"""Which aten ops have an NPU kernel, and which in a graph would fall back to the CPU (GL204).

torch_npu lists the aten ops it implements in ``csrc/aten/npu_native_functions_by_codegen.yaml``
(sections ``supported``, ``symint``, ``autograd``, ``quant``, ``custom``; each entry a name such
as ``gelu.out`` or a mapping whose ``func`` is a schema). It is read from the same torch_npu the
torchair stage uses (``locate_torch_npu``: installed, ``--torchair``, or the wheel cache). An aten
op missing from it runs through torch_npu's CPU fallback: a device→host copy, the CPU kernel and
a copy back, which a captured graph cannot contain (torchair#236: ``gelu.out``).

An op without its own NPU kernel is not a fallback when it decomposes: it has a
CompositeImplicitAutograd or CompositeExplicitAutograd kernel (``t``, ``expand``, views), or it is
the functional form of a structured op whose ``.out`` kernel the NPU has (``gelu`` → ``gelu.out``),
or the functional form functionalization makes of an in-place op the NPU has (``copy`` → ``copy_``),
or a non-functional composite (``slice_scatter``) that is not a structured op's functional form.
"""

from __future__ import annotations

import torch
import yaml

from graphlint.tracer.capture.codes import CPU_FALLBACK
from graphlint.tracer.capture.hazards import Hazard, aten_name, input_tensors, is_host, node_tensors
from graphlint.tracer.torchair.locate import NATIVE_FUNCTIONS_YAML, TorchNpuSource

_DECOMPOSING_KEYS = ("CompositeImplicitAutograd", "CompositeExplicitAutograd")
# libyaml's parser where PyYAML was built with it (the same safe constructors; the pure-Python
# parser took 0.4–0.9 CPU-s of every capture stage on this 250 kB file, libyaml 0.05)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_npu_kernels(source: TorchNpuSource) -> frozenset[str]:
    """The aten op names (``name`` or ``name.overload``) torch_npu has NPU kernels for."""
    return parse_npu_kernels(source.read_text(NATIVE_FUNCTIONS_YAML))


def parse_npu_kernels(text: str) -> frozenset[str]:
    data = yaml.load(text, Loader=_YAML_LOADER) or {}
    names: set[str] = set()
    for entries in data.values():
        if not isinstance(entries, list):
            continue  # "backend: NPU", "cpp_namespace: …"
        for entry in entries:
            schema = entry.get("func", "") if isinstance(entry, dict) else str(entry)
            names.add(schema.split("(", 1)[0].strip())
    names.discard("")
    return frozenset(names)


def has_npu_kernel(op: torch._ops.OpOverload, kernels: frozenset[str]) -> bool:
    base, overload = op._opname, op._overloadname
    if (base if overload == "default" else f"{base}.{overload}") in kernels:
        return True
    if overload == "default" and f"{base}.out" in kernels:
        return True  # a structured op's functional form runs its .out kernel
    if f"{base}_" in kernels:
        return True  # functionalization's form of an in-place op (copy_ → copy) runs the in-place kernel
    if any(_has_kernel(op.name(), key) for key in _DECOMPOSING_KEYS):
        return True
    # A non-functional composite (slice_scatter = slice + copy_) decomposes too, unless it is the
    # functional form of a structured op, whose .out kernel is backend code (gelu → gelu.out).
    return _has_kernel(op.name(), "CompositeExplicitAutogradNonFunctional") and not _has_kernel(
        f"aten::{base}.out", "CPU"
    )


def _has_kernel(name: str, key: str) -> bool:
    return torch._C._dispatch_has_kernel(name) and torch._C._dispatch_has_kernel_for_dispatch_key(name, key)


def find_cpu_fallbacks(graph_module: torch.fx.GraphModule, kernels: frozenset[str]) -> list[Hazard]:
    """Aten ops on device tensors that have no NPU kernel, one hazard per node."""
    hazards = []
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or aten_name(node) is None:
            continue
        on_device = [t for t in node_tensors(node) + input_tensors(node) if not is_host(t.device)]
        if not on_device or has_npu_kernel(node.target, kernels):
            continue
        op = f"aten.{node.target._opname}.{node.target._overloadname}"
        hazards.append(
            Hazard(
                CPU_FALLBACK,
                op,
                node.name,
                f"{op} has no NPU kernel in torch_npu: it would fall back to the CPU (device→host "
                "copy, CPU kernel, copy back) inside the captured region",
                node.meta.get("stack_trace"),
            )
        )
    return hazards
