"""pytorch#1497: sglang wraps a helper in torch.compile on every forward.

Each call makes a new wrapper; with dynamic=True the helper recompiled until it hit
recompile_limit, and the graph replay then ran on another stream than its capture.
"""
# expect-check: GL103@23 GL103@32

import torch
from torch import nn


def get_masked_input_and_mask(input_ids, vocab_start: int, vocab_end: int):
    mask = (input_ids >= vocab_start) & (input_ids < vocab_end)
    return (input_ids - vocab_start) * mask, ~mask


class VocabParallelEmbedding(nn.Module):
    def __init__(self, vocab: int, hidden: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab, hidden))

    def forward(self, input_ids):
        masked = torch.compile(get_masked_input_and_mask, dynamic=True)
        ids, mask = masked(input_ids, 0, self.weight.shape[0])
        return nn.functional.embedding(ids, self.weight) * (~mask).unsqueeze(-1)


def serve(requests):
    embed = VocabParallelEmbedding(32, 8)
    outputs = []
    for ids in requests:
        step = torch.compile(embed)
        outputs.append(step(ids))
    return outputs
