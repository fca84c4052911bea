"""shared_buffer_views.py rewritten as torchair#241 advises: `.clone()` each view of the shared
buffer before updating it in place. Each clone copies only its slice, instead of two scatters
of the whole buffer and a copy back of it.
"""
# expect-copies: clone=2
# expect-check: none

import torch
from torch import nn

DIM = 16


class GatheredProjection(nn.Module):
    """q and k projections whose weights are slices of one all-gathered buffer."""

    def forward(self, gathered: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # `gathered` stands for the output of dist.all_gather_into_tensor: [wq; wk].
        wq = gathered[:DIM].clone()  # copies: clone
        wk = gathered[DIM:].clone()  # copies: clone
        # Dequantisation scales applied in place, now on tensors of their own.
        wq.mul_(0.5)
        wk.add_(1.0)
        return x @ wq.t(), x @ wk.t()


model = GatheredProjection()
example_inputs = (torch.randn(2 * DIM, DIM), torch.randn(4, DIM))
