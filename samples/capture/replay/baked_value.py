# expect-check: none
# expect-trace: verdict=capture GL205@22
"""A host-side value baked in at capture (vllm-ascend #10895, #7460): the softmax temperature is
a Python float passed to forward. Dynamo specialises it at the first call and recompiles when it
changes, so `torch.compile` stays right; a serving engine that captures once per batch shape and
replays without dynamo's guards keeps dividing by the temperature of the capture.

The fix: pass the changing value as a tensor input (`temperature=torch.tensor(0.5)`), which a
captured graph reads anew at every replay, as `replay_clean.py` does.
"""

import torch
from torch import nn


class Sampler(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, temperature: float) -> torch.Tensor:
        return torch.softmax(self.proj(x) / temperature, dim=-1)


def graphlint_target():
    torch.manual_seed(0)
    model = Sampler().eval()
    x = torch.randn(2, 8)
    return {"fn": model, "inputs": [(x, 1.0), (x, 0.5), (x, 0.7)]}
