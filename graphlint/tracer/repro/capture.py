"""capture layer: the audited aten graph cut to the hazard node and what feeds it, with inputs
on the audit's stand-in device (``meta`` for the accelerator, ``cpu`` for the host), judged by
the capture audit's own hazard checks (``graphlint.tracer.capture.hazards``). The CPU-fallback
check (GL204) needs torch_npu's kernel list and is not part of a repro."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from graphlint.tracer.repro.budget import ShrinkBudget
from graphlint.tracer.repro.dump import DumpError, TraceDump
from graphlint.tracer.repro.graphs import graph_repro, load_graph
from graphlint.tracer.repro.signature import Signature
from graphlint.tracer.repro.writer import ReproParts


def hazard_signatures(
    module: torch.nn.Module, inputs: Sequence[Any]
) -> tuple[torch.fx.GraphModule, list[tuple[Signature, str]]]:
    """``module`` traced on ``inputs``' devices (aten ops, each node's value recorded) and each
    hazard the audit finds in it: (signature, node name)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from graphlint.tracer.capture.hazards import find_hazards

    # The module's own tensors (constants of the audited graph, on the stand-in device) are not
    # fake: allowed, as they are in the audit's trace (meta ones have no data to protect anyway).
    traced = make_fx(module, tracing_mode="fake", _allow_non_fake_inputs=True)(*inputs)
    return traced, [(Signature("capture", h.code.code, h.op), h.node) for h in find_hazards(traced)]


def reproduce(module: torch.nn.Module, inputs: Sequence[Any], expected: dict[str, Any] | None) -> Signature | None:
    """The repro's check: the expected hazard when it is there, else the first one, else None."""
    found = [signature for signature, _ in hazard_signatures(module, inputs)[1]]
    wanted = Signature(**expected) if expected else None
    return wanted if wanted in found else (found[0] if found else None)


def feeding(gm: torch.fx.GraphModule, node_name: str) -> torch.fx.GraphModule:
    """The graph cut to ``node_name`` and the nodes it is computed from; it returns that node."""
    import copy

    gm = copy.deepcopy(gm)
    graph = gm.graph
    node = next(n for n in graph.nodes if n.name == node_name)
    output = next(n for n in graph.nodes if n.op == "output")
    output.args = ((node,),)
    graph.eliminate_dead_code()
    for placeholder in [n for n in graph.nodes if n.op == "placeholder" and not n.users]:
        graph.erase_node(placeholder)
    gm.recompile()
    return gm


def make(dump: TraceDump, failure: dict[str, Any] | None, budget: ShrinkBudget) -> ReproParts:
    del budget  # the cut to the hazard node and what feeds it is exact: nothing to shrink
    folder = dump.folder / "capture"
    names = sorted(p.name.removesuffix(".runnable.py") for p in folder.glob("*.runnable.py")) if folder.is_dir() else []
    if not names:
        raise DumpError(f"{folder} holds no audited graph; trace with the capture stage and --dump")
    wanted = Signature("capture", failure.get("code"), failure.get("details", {}).get("op")) if failure else None
    for name in names:
        module, inputs = load_graph(dump.graph_code("capture", name))
        traced, hazards = hazard_signatures(module, inputs)
        node = next((n for s, n in hazards if s == wanted), None)
        if wanted is None or node is not None:
            break
    else:
        raise DumpError(f"no audited graph in {folder} has the hazard {wanted}")
    if node is not None:
        placeholders = [n.name for n in traced.graph.nodes if n.op == "placeholder"]
        cut = feeding(traced, node)
        kept = {n.name for n in cut.graph.nodes if n.op == "placeholder"}
        module, inputs = cut, [value for p, value in zip(placeholders, inputs) if p in kept]
    return graph_repro(
        "capture",
        f"the audited {name}" + (f", cut to the hazard node {node} and what feeds it" if node else ""),
        wanted,
        module,
        inputs,
        __name__,
        check_args=", EXPECTED",
        note="Device meta stands for the accelerator, cpu for the host (the capture audit's stand-ins).",
    )
