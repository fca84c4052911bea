"""Dynamo graph breaks: Python branches on tensor values inside a compiled forward.

torchair#212's triage (aot_eager first, then the NPU backend) finds them as dynamo-layer
breaks; in graph mode each one splits the graph and syncs the host.
"""
# expect-check: GL105@21 GL105@30 GL105@35

import torch
from torch import nn


class EarlyExitDecoder(nn.Module):
    def __init__(self, layers: int, hidden: int):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(layers)])
        self.threshold = 0.9

    def forward(self, x, eos_mask):
        for layer in self.layers:
            x = layer(x)
            if (x.softmax(-1).max(-1).values > self.threshold).all():
                break
        if not torch.compiler.is_compiling():
            while eos_mask.any():  # eager-only branch: dynamo never sees it
                eos_mask = eos_mask[1:]
        return x


def clip(x):
    return x.clamp(-1, 1) if torch.isnan(x).any() else x


@torch.compile
def postprocess(x):
    assert x.isfinite().all()
    return clip(x)


decoder = torch.compile(EarlyExitDecoder(2, 8))
