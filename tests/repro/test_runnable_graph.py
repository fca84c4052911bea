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
