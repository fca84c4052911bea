"""Multi-head attention that makes every transposed head layout contiguous.

`.contiguous()` of a transpose is a layout change: a `clone(memory_format=contiguous)` in the
aten graph, a copy on NPU too. A trailing `# copies:` comment names the copies each line
makes. See attention_contiguous_rewritten.py.
"""
# expect-copies: clone=4
# expect-check: none

import torch
from torch import nn

DIM = 32
HEADS = 4


class ContiguousAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.out = nn.Linear(DIM, DIM)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        head_dim = dim // HEADS
        q = q.reshape(batch, seq, HEADS, head_dim).transpose(1, 2).contiguous()  # copies: clone
        k = k.reshape(batch, seq, HEADS, head_dim).transpose(1, 2).contiguous()  # copies: clone
        v = v.reshape(batch, seq, HEADS, head_dim).transpose(1, 2).contiguous()  # copies: clone
        weights = torch.matmul(q, k.transpose(-2, -1)).softmax(dim=-1)
        heads = torch.matmul(weights, v).transpose(1, 2).contiguous()  # copies: clone
        return self.out(heads.view(batch, seq, dim))


model = ContiguousAttention()
example_inputs = (torch.randn(2, 8, DIM),)
