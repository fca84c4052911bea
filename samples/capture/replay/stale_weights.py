# expect-check: none
# expect-trace: verdict=capture GL206@29
"""Weights reloaded into new tensors between replays (vllm-ascend #13902): `reload` builds a new
`nn.Parameter`, so the module now holds another tensor. `torch.compile` reads the new one, but a
captured graph reads memory by address: every replay keeps using the weights of the capture.

The fix: update the captured tensor in place, `model.proj.weight.data.copy_(new)` (under
`torch.no_grad()`), as `replay_clean.py` does.
"""

import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(x))


@torch.compiler.disable  # weight sync runs eagerly, between the captured steps
def reload(model: Policy, version: int) -> None:
    if version == 0:
        return
    generator = torch.Generator().manual_seed(version)
    model.proj.weight = nn.Parameter(torch.randn(8, 8, generator=generator))


def graphlint_target():
    torch.manual_seed(0)
    model = Policy().eval()

    def step(x: torch.Tensor, version: int) -> torch.Tensor:
        reload(model, version)
        return model(x)

    x = torch.randn(2, 8)
    return {"fn": step, "inputs": [(x, 0), (x, 1), (x, 2)]}
