# expect-check: GL202@22
# expect-trace: verdict=capture GL202@22
"""Boolean-mask indexing inside the captured forward: the output's size depends on the data.

`hidden[hidden > 0]` needs the number of true elements before it can allocate its output, so
the host must wait for the device (a sync); a captured graph has fixed shapes and cannot
(torchair#236). Fix: keep the shape fixed, `torch.where(hidden > 0, hidden, 0)`.
"""

import torch
from torch import nn


class PositiveActivations(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.proj(x)
        # only the positive activations
        positive = hidden[hidden > 0]
        return positive.sum() + hidden.mean()


model = PositiveActivations()
example_inputs = (torch.randn(4, 8),)

if __name__ == "__main__":
    compiled = torch.compile(model, mode="reduce-overhead")
    print(compiled(*example_inputs))
