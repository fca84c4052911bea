"""A model written for graph mode: compiled once, tensors made on the device, no host syncs.

graphlint check finds nothing here.
"""
# expect-check: none

import torch
import torchair
from torch import nn

config = torchair.CompilerConfig()
config.mode = "reduce-overhead"


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.heads = heads

    def forward(self, x):
        bsz, seqlen, hidden = x.shape
        positions = torch.arange(seqlen, device=x.device)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        k = k.repeat_interleave(1, dim=1)
        scores = q @ k.transpose(-1, -2) + positions.to(q.dtype)
        return torch.where(scores > 0, scores, torch.zeros_like(scores)).softmax(-1) @ v


model = torch.compile(Attention(16, 2), backend=torchair.get_npu_backend(compiler_config=config))
