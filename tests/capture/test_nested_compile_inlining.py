"""What GL101 (nested-compile) rests on, measured on the installed torch with counting backends:
dynamo inlines a ``@torch.compile`` function it reaches while tracing an outer compile (the inner
backend never runs, whatever the outer's options), while code run eagerly, as an eager graph
capture runs the model, calls the inner compile itself, which then compiles its own graph."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
import torch
import torch._dynamo


def _counting(calls: Counter[str], name: str) -> Callable:
    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        calls[name] += 1
        return gm.forward

    return backend


@pytest.fixture
def calls() -> Counter[str]:
    torch._dynamo.reset()
    yield Counter()
    torch._dynamo.reset()


@pytest.mark.parametrize("outer_options", [{}, {"fullgraph": True}, {"dynamic": False}], ids=["default", "fullgraph", "static"])
def test_an_inner_compile_reached_while_tracing_is_inlined(calls: Counter[str], outer_options: dict) -> None:
    @torch.compile(backend=_counting(calls, "inner"), dynamic=True)
    def inner(x: torch.Tensor, n: int) -> torch.Tensor:
        return x[:n] * 2

    def outer(x: torch.Tensor) -> torch.Tensor:
        return inner(x, x.shape[0] - 1) + 1

    compiled = torch.compile(outer, backend=_counting(calls, "outer"), **outer_options)
    for n in (4, 5):
        torch.testing.assert_close(compiled(torch.ones(n)), torch.ones(n - 1) * 2 + 1)
    assert calls["inner"] == 0 and calls["outer"] >= 1


def test_an_inner_compile_run_eagerly_compiles_its_own_graph(calls: Counter[str]) -> None:
    @torch.compile(backend=_counting(calls, "inner"), dynamic=True)
    def inner(x: torch.Tensor, n: int) -> torch.Tensor:
        return x[:n] * 2

    def decode(x: torch.Tensor) -> torch.Tensor:  # what an eager capture (torch.npu.graph) runs
        return inner(x, x.shape[0] - 1) + 1

    for n in (4, 5, 6):
        decode(torch.ones(n))
    assert calls["inner"] == 1  # its own graph, compiled on the first call
