# expect-trace: verdict=torchair TA002@27
"""A tiny mixture-of-experts layer whose router counts the tokens sent to each expert with
``torch.histc`` (a common load-balancing statistic). Eager, dynamo and AOTAutograd are fine, but
torchair has no GE converter for ``aten.histc``, so translation fails.
Fix: count with a comparison instead, ``load = (chosen.flatten()[:, None] == torch.arange(EXPERTS)).sum(0).float()``.
"""

import torch
from torch import nn

EXPERTS, TOP_K, HIDDEN = 4, 2, 16


class TinyMoE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.router = nn.Linear(HIDDEN, EXPERTS, bias=False)
        self.experts = nn.ModuleList(nn.Linear(HIDDEN, HIDDEN) for _ in range(EXPERTS))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        weights, chosen = self.router(x).softmax(-1).topk(TOP_K, dim=-1)
        out = torch.zeros_like(x)
        for k in range(TOP_K):
            for e, expert in enumerate(self.experts):
                mask = (chosen[:, k] == e).unsqueeze(-1)
                out = out + mask * weights[:, k : k + 1] * expert(x)
        load = torch.histc(chosen.float(), bins=EXPERTS, min=0, max=EXPERTS - 1)
        return out, load


torch.manual_seed(0)
model = TinyMoE().eval()
example_inputs = (torch.randn(8, HIDDEN),)
