"""A target dynamo never traces (its forward is ``@torch.compiler.disable``): the capture audit
has no graph to audit, so it cannot vouch for capture and must say ``inconclusive``."""

import torch


class EagerOnly(torch.nn.Module):
    @torch.compiler.disable
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + 1


model = EagerOnly()
example_inputs = (torch.randn(4, 8),)
