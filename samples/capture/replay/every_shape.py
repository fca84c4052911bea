# expect-check: none
# expect-trace: verdict=capture GL207@22
"""Every new shape is a new capture (npugraph_ex falls back to eager after `capture_limit`, 64 by
default): a serving loop that calls the model with the exact number of tokens of each request
sees 70 sizes, and a guarded engine captures a graph for each. Dynamo itself is fine (it makes
the size dynamic after the second one), so only the capture budget shows it.

The fix: pad the batch to a few bucketed sizes before the call (vLLM's capture sizes), or mark
the dimension dynamic and capture at the buckets only, as `replay_clean.py` does.
"""

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden = self.proj(tokens)
        return hidden.softmax(dim=-1)


def graphlint_target():
    torch.manual_seed(0)
    model = Encoder().eval()
    return {"fn": model, "inputs": [(torch.randn(n, 8),) for n in range(1, 71)]}
