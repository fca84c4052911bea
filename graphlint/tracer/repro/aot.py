"""aot and accuracy layers: the dynamo graph handed to ``aot_eager`` (AOTAutograd,
functionalization, decompositions), the outputs compared with the same graph run eagerly
(``graphlint.tracer.accuracy``'s tolerances); shrunk with torch's FX minifier to the fewest
nodes that still raise the same exception type (aot) or still differ (accuracy)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from graphlint.tracer.repro.budget import ShrinkBudget
from graphlint.tracer.repro.dump import DumpError, TraceDump
from graphlint.tracer.repro.graphs import as_graph_module, graph_repro, load_graph, shrink_graph
from graphlint.tracer.repro.signature import Signature
from graphlint.tracer.repro.writer import ReproParts


def _cloned(inputs: Sequence[Any]) -> list[Any]:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in inputs]


def aot_signature(module: torch.nn.Module, inputs: Sequence[Any]) -> Signature | None:
    """What ``aot_eager`` does differently from eager on ``module``: raises, or differs."""
    from torch._dynamo.backends.debugging import aot_eager

    from graphlint.tracer.accuracy import compare_outputs
    from graphlint.tracer.classify.unwrap import real_cause

    gm = as_graph_module(module)
    with torch.no_grad():
        torch.manual_seed(0)
        reference = gm(*_cloned(inputs))
        try:
            torch.manual_seed(0)
            outputs = aot_eager(gm, list(_cloned(inputs)))(*_cloned(inputs))
        except Exception as exc:  # noqa: BLE001 - what the repro looks for
            return Signature("aot", type(real_cause(exc)).__name__)
    mismatch = compare_outputs("aot", reference, outputs)
    return None if mismatch is None else Signature("accuracy", "mismatch")


def reproduce(module: torch.nn.Module, inputs: Sequence[Any]) -> Signature | None:
    """The repro's check."""
    return aot_signature(module, inputs)


def make(dump: TraceDump, failure: dict[str, Any] | None, budget: ShrinkBudget) -> ReproParts:
    if failure is not None and failure.get("layer") == "accuracy" and failure.get("stage") not in ("dynamo", "aot"):
        raise DumpError(f"an accuracy repro compares aot_eager with eager; this difference first appears in {failure.get('stage')}")
    names = sorted(p.name.removesuffix(".runnable.py") for p in (dump.folder / "dynamo").glob("*.runnable.py"))
    if not names:
        raise DumpError(f"{dump.folder / 'dynamo'} holds no graph; trace with the dynamo stage and --dump")
    expected = None
    if failure is not None:
        kind = "mismatch" if failure["layer"] == "accuracy" else failure.get("details", {}).get("exception")
        expected = Signature(failure["layer"], kind)
    for name in names:
        module, inputs = load_graph(dump.graph_code("dynamo", name))
        if expected is None or aot_signature(module, inputs) == expected:
            break
    else:
        raise DumpError(f"no dynamo graph of the dump gives {expected} under aot_eager with random inputs")
    if expected is not None:
        module, inputs = shrink_graph(module, inputs, lambda gm, inps: aot_signature(gm, inps) == expected, budget)
    return graph_repro(
        expected.layer if expected else "aot",
        f"{name} (dynamo's FX graph) under aot_eager, compared with eager",
        expected,
        module,
        inputs,
        __name__,
    )
