"""An MoE router that logs how many tokens each expert got (a debugging line left in, as in
many ported models).

Under torch.compile, dynamo does not trace a `logging.Logger` method: "logging.Logger method not
supported for non-export cases" (GB0291) breaks the graph on every call, whether or not the
message is printed at the configured level; with `fullgraph=True` the compile fails.
Fix: log outside the compiled forward, or guard it with `if not torch.compiler.is_compiling():`.
"""
# expect-check: GL106@30
# expect-trace: verdict=dynamo GB0291@30

import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class TopKRouter(nn.Module):
    def __init__(self, hidden: int = 64, experts: int = 8, top_k: int = 2) -> None:
        super().__init__()
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.top_k = top_k

    def forward(self, hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.gate(hidden_states)
        weights, experts = torch.topk(logits.softmax(dim=-1), self.top_k, dim=-1)
        # the debugging line: dynamo breaks the graph here
        logger.debug("routed %d tokens to %d experts", hidden_states.shape[0], self.top_k)
        return weights, experts


router = torch.compile(TopKRouter())


def graphlint_target():
    torch.manual_seed(0)
    return {"fn": TopKRouter().eval(), "inputs": [(torch.randn(6, 64),)]}
