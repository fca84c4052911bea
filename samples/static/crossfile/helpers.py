# expect-check: GL201@11 GL203@11 GL202@15
# expect-region: GL201@11 capture run.py:14 Decoder.forward>DecoderLayer.forward>build_positions
# expect-region: GL203@11 capture run.py:14 Decoder.forward>DecoderLayer.forward>build_positions
# expect-region: GL202@15 capture run.py:14 Decoder.forward>DecoderLayer.forward>count_valid
"""Shared helpers: harmless in eager code, wrong inside a captured graph."""

import torch


def build_positions(x):
    return torch.arange(x.shape[1]).to(x.device)


def count_valid(mask):
    return int(mask.sum().item())
