"""torchair#402: dist.broadcast(group_src=...) in graph mode.

group_src is a PyTorch 2.6 argument; torchair's broadcast converter predates it and rejects
it (fixed by torchair PR#3029). Pass src= (a global rank) instead.
"""
# expect-check: GL301@21

import torch
import torch.distributed as dist
from torch import nn


class TensorParallelHead(nn.Module):
    def __init__(self, hidden: int, vocab: int, group=None):
        super().__init__()
        self.linear = nn.Linear(hidden, vocab)
        self.group = group

    def forward(self, x):
        logits = self.linear(x)
        dist.broadcast(logits, group_src=0, group=self.group)
        return logits


def sync_weights(module, group):
    for p in module.parameters():
        dist.broadcast(p.data, group_src=0, group=group)  # eager: fine


head = torch.compile(TensorParallelHead(8, 32))
