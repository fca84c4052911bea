"""A graph traced on the capture audit's stand-in device holds meta tensor constants: its
runnable code must still load and run (torch writes a small meta tensor as its repr)."""

from __future__ import annotations

import torch

from graphlint.tracer.dump import runnable_graph_code
from graphlint.tracer.repro.graphs import load_graph


class _WithMetaConstants(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scale", torch.tensor(2.0, device="meta"))  # inlined by torch's writer
        self.register_buffer("index", torch.zeros(4, dtype=torch.int64, device="meta"))
        self.register_buffer("table", torch.zeros(6, 3, device="meta"))  # random by torch's writer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + self.table[self.index].sum()


def test_meta_constants_are_written_as_code_that_runs() -> None:
    gm = torch.fx.symbolic_trace(_WithMetaConstants())
    code = runnable_graph_code(gm, [torch.ones(3, device="meta")])
    assert "tensor(..." not in code
    module, inputs = load_graph(code)
    out = module(*inputs)
    assert out.device.type == "meta" and out.shape == (3,)
    assert {name: (b.shape, b.dtype) for name, b in module.named_buffers()} == {
        name: (b.shape, b.dtype) for name, b in gm.named_buffers()
    }


def test_a_graph_without_inputs_is_written_as_code_that_runs() -> None:
    """A hazard cut to a constant and what feeds it (none) leaves a graph with no inputs."""
    gm = torch.fx.symbolic_trace(lambda: torch.tensor([2, 0, 3, 1]) * 1)
    module, inputs = load_graph(runnable_graph_code(gm, []))
    assert inputs == [] and torch.equal(module(), torch.tensor([2, 0, 3, 1]))


def test_a_graph_of_symbolic_sizes_is_written_with_the_sizes_it_had() -> None:
    """dynamo's graph of a dynamic batch takes the size as an input and tensors of size s0:
    torch's writer names the symbol, which the code binds to the value traced."""
    captured = []

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> torch.fx.GraphModule:
        captured.append((gm, example_inputs))
        return gm

    torch._dynamo.reset()
    torch.compile(lambda x: x.sum(0) * x.shape[0], backend=backend, dynamic=True, fullgraph=True)(torch.ones(5, 3))
    torch._dynamo.reset()
    gm, example_inputs = captured[0]
    assert any(isinstance(v, torch.SymInt) for v in example_inputs)  # what this test is about
    module, inputs = load_graph(runnable_graph_code(gm, example_inputs))
    tensors = [v for v in inputs if isinstance(v, torch.Tensor)]
    assert [tuple(t.shape) for t in tensors] == [(5, 3)] and 5 in inputs
    assert module(*inputs)[0].shape == (3,)


def test_the_capture_check_judges_a_graph_with_meta_constants() -> None:
    """Written and loaded again, such a graph is judged by the capture repro's check: no hazard in
    it (a clean graph, exit 0), where it raised that the constants were not fake tensors."""
    from graphlint.tracer.repro.capture import reproduce

    gm = torch.fx.symbolic_trace(_WithMetaConstants())
    module, inputs = load_graph(runnable_graph_code(gm, [torch.ones(3, device="meta")]))
    assert reproduce(module, inputs, None) is None
