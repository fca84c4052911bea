"""inplace_heavy.py rewritten without in-place ops on the inputs (torchair#231): the new values
are returned instead of written back, so the graph has no copy-back and no copy at all.
"""
# expect-copies: none
# expect-check: none

import torch
from torch import nn

DIM = 16


class ResidualBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.gate = nn.Linear(DIM, DIM)

    def forward(self, hidden: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        residual = residual + hidden
        hidden = self.norm(residual)
        hidden = hidden * torch.sigmoid(self.gate(hidden))
        return hidden, residual


model = ResidualBlock()
example_inputs = (torch.randn(4, DIM), torch.randn(4, DIM))
