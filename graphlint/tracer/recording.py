"""Compile a target with backends that record what dynamo and AOTAutograd hand them.

The dynamo, aot, capture and copies stages all need the graphs torch builds for the target;
this is the one place that builds them. ``GraphRecorder.eager`` is dynamo's ``eager`` backend
that keeps each graph; ``GraphRecorder.aot_eager`` is torch's ``aot_eager`` with compilers that
keep the functionalized forward (inference) and backward graphs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch._dynamo.backends.debugging import aot_eager, boxed_nop

from graphlint.tracer.calls import call_each

GraphKind = Literal["dynamo", "forward", "backward"]


@dataclass
class RecordedGraph:
    index: int  # which dynamo graph (0, 1, … in compile order); AOT graphs share their parent's
    kind: GraphKind
    module: torch.fx.GraphModule
    example_inputs: list[Any]  # as the backend received them (fake tensors under AOT)

    @property
    def name(self) -> str:
        return f"graph_{self.index}" if self.kind == "dynamo" else f"graph_{self.index}_{self.kind}"


@dataclass
class GraphRecorder:
    graphs: list[RecordedGraph] = field(default_factory=list)

    def of_kind(self, kind: GraphKind) -> list[RecordedGraph]:
        return [g for g in self.graphs if g.kind == kind]

    def _record_dynamo(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> int:
        index = len(self.of_kind("dynamo"))
        self.graphs.append(RecordedGraph(index, "dynamo", gm, list(example_inputs)))
        return index

    def eager(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self._record_dynamo(gm, example_inputs)
        return gm.forward

    def aot_eager(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        index = self._record_dynamo(gm, example_inputs)

        def compiler(kind: GraphKind) -> Callable[..., Any]:
            def record(fx_g: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
                self.graphs.append(RecordedGraph(index, kind, fx_g, list(inputs)))
                return boxed_nop(fx_g, inputs)

            return record

        return aot_eager(gm, example_inputs, fw_compiler=compiler("forward"), bw_compiler=compiler("backward"))


def run_compiled(
    fn: Callable[..., Any],
    inputs: Sequence[tuple[Any, ...]],
    kwargs: Sequence[dict[str, Any]],
    backend: Callable[..., Any] | str,
    *,
    train: bool = False,
    fresh: bool = True,
    **compile_options: Any,
) -> list[Any]:
    """``torch.compile(fn, backend=backend)`` called once per input, from a clean dynamo state
    (unless not ``fresh``: then through what dynamo has cached).

    Exceptions propagate: the calling stage classifies them."""
    if fresh:
        torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, **compile_options)
    return call_each(compiled, inputs, kwargs, train)
