"""torchair layer: the post-AOT FX graph of the graph that failed translation, shrunk to the
fewest nodes that still fail the same way (exception type and op), run through torchair with
the config the trace used: the real backend when torch_npu is importable, else graphlint's
offline torchair (the torch_npu wheel in graphlint's cache or ``$GRAPHLINT_TORCHAIR``)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from graphlint.tracer.repro.budget import ShrinkBudget
from graphlint.tracer.repro.dump import DumpError, TraceDump
from graphlint.tracer.repro.graphs import graph_repro, load_graph, shrink_graph
from graphlint.tracer.repro.signature import Signature
from graphlint.tracer.repro.writer import ReproParts


@contextmanager
def torchair_backend() -> Iterator[tuple[Any, str]]:
    """torchair and where it runs: ``npu`` (torch_npu imports) or ``cpu`` (offline)."""
    if importlib.util.find_spec("torch_npu") is not None:
        importlib.import_module("torch_npu")
        yield importlib.import_module("torchair"), "npu"
        return
    from graphlint.tracer.torchair.locate import locate_torch_npu
    from graphlint.tracer.torchair.offline import offline_torchair

    source = locate_torch_npu(None)
    if source is None:
        print("no torchair: install torch_npu, or run `graphlint torchair fetch` for the offline one", file=sys.stderr)
        raise SystemExit(2)  # the repro cannot tell, which is not "the failure is there" (1)
    with warnings.catch_warnings():
        # offline, torchair warns once per converter of an NPU-only op it cannot register
        warnings.filterwarnings("ignore", message="Failed to import torchair")
        with offline_torchair(source) as torchair:
            yield torchair, "cpu"


def translation_signature(
    torchair: Any, device: str, module: torch.nn.Module, inputs: Sequence[Any], settings: dict[str, Any]
) -> Signature | None:
    """What torchair's translation of ``module`` raised (None when it translated)."""
    from graphlint.tracer.classify.unwrap import real_cause
    from graphlint.tracer.stages.base import TraceTarget
    from graphlint.tracer.torchair.runner import compiler_config, translate

    args = tuple(a.to(device) if isinstance(a, torch.Tensor) else a for a in inputs)
    target = TraceTarget(fn=module.to(device), inputs=[args], kwargs=[{}], name="repro")
    # The offline settings exist for the offline run; on an NPU torchair runs as users run it.
    config = compiler_config(torchair, settings if device == "cpu" else {})
    result = translate(torchair, target, config=config)
    if result.failures:
        failure = result.failures[0]
        return Signature("torchair", type(real_cause(failure.error)).__name__, failure.op)
    if result.error is not None:
        return Signature("torchair", type(real_cause(result.error)).__name__)
    return None


def reproduce(module: torch.nn.Module, inputs: Sequence[Any], settings: dict[str, Any]) -> Signature | None:
    """The repro's check."""
    with torchair_backend() as (torchair, device):
        return translation_signature(torchair, device, module, inputs, settings)


def make(dump: TraceDump, failure: dict[str, Any] | None, budget: ShrinkBudget) -> ReproParts:
    details = (failure or {}).get("details", {})
    graph = details.get("graph", "graph_0_forward")  # the post-AOT graph's name, as the aot dump has it
    module, inputs = load_graph(dump.graph_code("aot", graph))
    settings = dump.json("torchair/config.json")["settings"]
    expected = None
    if failure is not None:
        expected = Signature("torchair", details.get("exception"), details.get("op"))
    with torchair_backend() as (torchair, device):
        observed = translation_signature(torchair, device, module, inputs, settings)
        if expected is not None and observed != expected:
            raise DumpError(f"the dumped {graph} gives {observed or 'no failure'} in torchair, not {expected}")
        if expected is not None:
            module, inputs = shrink_graph(
                module, inputs, lambda gm, inps: translation_signature(torchair, device, gm, inps, settings) == expected, budget
            )
    return graph_repro(
        "torchair",
        f"torchair translation of {graph} (post-AOT FX graph)",
        expected,
        module,
        inputs,
        __name__,
        check_args=", TORCHAIR_SETTINGS",
        body_suffix=f"\nTORCHAIR_SETTINGS = {settings!r}  # changed in CompilerConfig()",
    )
