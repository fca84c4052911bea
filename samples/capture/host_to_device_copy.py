# expect-check: GL201@23 GL203@23
# expect-trace: verdict=capture GL201@23 GL203@23
"""Position ids built on the host, then copied to the device inside the captured forward.

torchair#236: under reduce-overhead (aclgraph) `torch.arange(n).to(x.device)` is an aclrtMemcpy
in the captured stream and fails with "Not allow to sync captured-stream". The arange runs on
the host (GL203) and `.to(x.device)` copies it host→device (GL201). Fix: create it on the device,
`torch.arange(n, device=x.device)` (see clean.py).
"""

import torch
from torch import nn


class PositionMix(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.proj(x)
        positions = torch.arange(x.shape[-1]).to(x.device)
        return hidden * self.scale + positions


model = PositionMix()
example_inputs = (torch.randn(4, 8),)

if __name__ == "__main__":
    compiled = torch.compile(model, mode="reduce-overhead")
    print(compiled(*example_inputs).shape)
