"""Tiny models for the torchair tests, each written the way users write the pattern it covers."""

from __future__ import annotations

import torch


class Clean(torch.nn.Module):
    """Ops with ordinary converters: matmul, add, transpose + contiguous, mul."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(8, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x @ self.weight + 1.0
        return y.transpose(0, 1).contiguous() * 2.0


def update_in_place(cache: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
    """A KV-cache style update of an input: on GE, an Assign to the input."""
    cache.add_(step)
    return cache.sum()


def scatter_with_index_put(x: torch.Tensor, index: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    return torch.index_put(x, (index,), values)


def histogram(x: torch.Tensor) -> torch.Tensor:
    """``aten.histc`` has no converter at all in torchair 2.13."""
    return torch.histc(x, bins=4) + 1
