"""Weights that are views of one communication buffer, updated in place: torchair#241
(all-gather + matmul adds stride/view copies).

An in-place op through a view rebuilds the whole base buffer (`slice_scatter`, ViewCopy on NPU)
and, the buffer being a graph input, copies it back at the end (`copy_`, reported at the last
line that changed it). A trailing `# copies:` comment names the copies each line makes.
See shared_buffer_views_rewritten.py.
"""
# expect-copies: slice_scatter=2 copy_=1
# expect-check: none

import torch
from torch import nn

DIM = 16


class GatheredProjection(nn.Module):
    """q and k projections whose weights are slices of one all-gathered buffer."""

    def forward(self, gathered: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # `gathered` stands for the output of dist.all_gather_into_tensor: [wq; wk].
        wq = gathered[:DIM]
        wk = gathered[DIM:]
        # Dequantisation scales applied in place, through the views.
        wq.mul_(0.5)  # copies: slice_scatter
        wk.add_(1.0)  # copies: slice_scatter copy_
        return x @ wq.t(), x @ wk.t()


model = GatheredProjection()
example_inputs = (torch.randn(2 * DIM, DIM), torch.randn(4, DIM))
