"""torchair#236: host-made tensors inside a captured decode step (torch.npu.graph).

torch.tensor / torch.full without device= build the tensor on the host at capture time; the
replayed graph then holds a frozen copy, or needs a host→device copy that capture forbids.
"""
# expect-check: GL203@18 GL203@19 GL203@29

import torch
from torch import nn


class DecodeStep(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x, positions):
        scale = torch.tensor([0.5, 2.0])
        bias = torch.full((x.shape[-1],), 0.1)
        mask = torch.ones_like(x)
        pad = torch.zeros(x.shape, device=x.device)
        return self.proj(x * scale[0] + bias) * mask + pad + positions


def capture_decode(model: DecodeStep, static_x, static_pos):
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph):
        static_out = model(static_x, static_pos)
        steps = torch.arange(static_x.shape[0])
    return graph, static_out, steps
