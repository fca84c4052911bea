# expect-check: none
"""The model: a stack of decoder layers."""

from torch import nn

from .layers import DecoderLayer


class Decoder(nn.Module):
    def __init__(self, hidden: int, depth: int):
        super().__init__()
        self.layers = nn.ModuleList([DecoderLayer(hidden) for _ in range(depth)])

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return x
