"""A model whose graph breaks are in the project's other files, reached through each import
form; traced as ``layers.model:by_module`` and ``layers.model:by_name`` from this folder."""

import torch
from torch import nn

import layers.checks as checks
from layers import shapes

from .shapes import batch_tag


class ClampedHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(checks.clamp_if_large(self.fc(x)))


class TaggedHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * len(batch_tag(x))


class CountedHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * len(shapes.batch_tag(x))


def by_module():
    torch.manual_seed(0)
    return {"fn": ClampedHead().eval(), "inputs": [(torch.randn(4, 8),), (torch.randn(4, 8) * 100,)]}


def by_name():
    torch.manual_seed(0)
    return {"fn": TaggedHead().eval(), "inputs": [(torch.randn(2, 8),), (torch.randn(3, 8),), (torch.randn(5, 8),)]}
