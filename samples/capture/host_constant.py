# expect-check: GL203@23
# expect-trace: verdict=capture GL203@23
"""A constant tensor created on the host inside the captured forward.

`torch.tensor([...])` without `device=` is a CPU tensor; compiled, it is lifted into the graph as
a host constant that every replay must copy to the device (torchair#236: host↔device traffic in
the captured stream). Fix: register it once as a buffer (it then moves with `model.to(device)`),
or create it with `device=x.device`.
"""

import torch
from torch import nn


class ChannelShuffle(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.proj(x)
        # a fixed channel order, rebuilt on the host at every call
        order = torch.tensor([2, 0, 3, 1])
        return hidden[:, order]


model = ChannelShuffle()
example_inputs = (torch.randn(4, 4),)

if __name__ == "__main__":
    compiled = torch.compile(model, mode="reduce-overhead")
    print(compiled(*example_inputs).shape)
