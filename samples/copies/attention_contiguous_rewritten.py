"""attention_contiguous.py rewritten: heads stay strided views (permute, no `.contiguous()`) and
the fused `scaled_dot_product_attention` reads them as they are, so no layout copy is left.
(Dropping `.contiguous()` alone is not enough: `torch.matmul` on 4-d strided views reshapes,
and that reshape copies.)
"""
# expect-copies: none
# expect-check: none

import torch
from torch import nn
from torch.nn import functional as F

DIM = 32
HEADS = 4


class FusedAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.out = nn.Linear(DIM, DIM)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        qkv = self.qkv(x).view(batch, seq, 3, HEADS, dim // HEADS).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        heads = F.scaled_dot_product_attention(q, k, v)
        return self.out(heads.transpose(1, 2).reshape(batch, seq, dim))


model = FusedAttention()
example_inputs = (torch.randn(2, 8, DIM),)
