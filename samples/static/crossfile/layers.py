# expect-check: GL203@20
# expect-region: GL203@20 capture run.py:14 Decoder.forward>DecoderLayer.forward
"""Decoder layers; they call helpers from a sibling module."""

import torch
from torch import nn

from . import helpers
from .helpers import count_valid


class DecoderLayer(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU())

    def forward(self, x, mask):
        positions = helpers.build_positions(x)
        valid = count_valid(mask)
        bias = torch.zeros(x.shape[-1])
        return self.mlp(x + positions[None, :, None] + bias) * valid
