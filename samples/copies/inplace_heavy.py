"""In-place updates of a block's inputs, the pattern behind torchair#231 (TensorMove from 0.02%
to 50% of the run once torchair is on).

Functionalization turns every in-place op into an out-of-place one; an input that was changed is
copied back once, at the end of the graph (`copy_`, an Assign/TensorMove on NPU), however many
times it was changed. `hidden.copy_(...)` also keeps its own functional `copy`.
A trailing `# copies:` comment names the copies each line makes (the copy-back of an input
is reported at the last line that changed it). See inplace_heavy_rewritten.py.
"""
# expect-copies: copy=1 copy_=2
# expect-check: none

import torch
from torch import nn

DIM = 16


class InplaceResidualBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.gate = nn.Linear(DIM, DIM)

    def forward(self, hidden: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        residual.add_(hidden)  # copies: copy_
        hidden.copy_(self.norm(residual))  # copies: copy
        hidden.mul_(torch.sigmoid(self.gate(hidden)))  # copies: copy_
        return hidden


model = InplaceResidualBlock()
example_inputs = (torch.randn(4, DIM), torch.randn(4, DIM))
