# expect-check: GL202@24
# expect-trace: verdict=capture GL202@24
"""`.item()` inside the captured forward: the host waits for the device to read a number.

Here the number sizes a slice, so torch keeps it as `aten._local_scalar_dense` (a device→host
read, a stream sync) inside the graph; a captured graph cannot wait on the host (torchair#236).
Fix: keep the value on the device (mask instead of slicing), or compute it before the region.
"""

import torch
from torch import nn


class KeepTopTokens(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = self.score(x).squeeze(-1)
        hidden = self.proj(x)
        # how many tokens scored above zero: a value read back from the device
        keep = int((scores > 0).sum().item())
        return hidden[:keep]


model = KeepTopTokens()
example_inputs = (torch.randn(6, 8),)

if __name__ == "__main__":
    compiled = torch.compile(model, mode="reduce-overhead")
    print(compiled(*example_inputs).shape)
