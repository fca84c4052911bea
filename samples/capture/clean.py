# expect-check: none
# expect-trace: verdict=none
"""The capture-safe form of the other samples: everything created on the device, fixed shapes.

Positions are made with `device=x.device`, the channel order is a buffer (it moves with the
model), and the mask is applied with `torch.where`, whose output shape does not depend on data.
"""

import torch
from torch import nn


class CaptureSafe(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("order", torch.tensor([2, 0, 3, 1]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.proj(x)[:, self.order]
        positions = torch.arange(x.shape[-1], device=x.device)
        positive = torch.where(hidden > 0, hidden, 0)
        return positive + positions


model = CaptureSafe()
example_inputs = (torch.randn(4, 4),)

if __name__ == "__main__":
    compiled = torch.compile(model, mode="reduce-overhead")
    print(compiled(*example_inputs).shape)
