"""pytorch#1474: torch.repeat_interleave without dim is very slow on NPU.

Grouped-query attention repeats keys/values per head; without dim the input is flattened
and aclnnRepeatInterleave runs with little parallelism. Pass dim (and int32 repeats).
Flagged where it costs: in compiled code, on inputs not known to be 1-D.
"""
# expect-check: GL302@15 GL302@20

import torch
from torch import nn


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, kv_heads, seqlen, head_dim = hidden_states.shape
    flat = torch.repeat_interleave(hidden_states, n_rep)
    return flat.view(batch, kv_heads * n_rep, seqlen, head_dim)


def expand_lengths(lengths: torch.Tensor, n_rep: int) -> torch.Tensor:
    return lengths.repeat_interleave(n_rep)


def repeat_kv_fast(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    return torch.repeat_interleave(hidden_states, n_rep, dim=1)


def head_ids(n_heads: int, n_rep: int) -> torch.Tensor:
    return torch.arange(n_heads, device="npu").repeat_interleave(n_rep)  # 1-D: nothing to flatten


def setup_lengths(lengths: torch.Tensor) -> torch.Tensor:
    return lengths.repeat_interleave(2)  # eager setup code, never compiled


class Attention(nn.Module):
    def forward(self, keys: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        slow = repeat_kv(keys, 2) + repeat_kv_fast(keys, 2)
        return slow, expand_lengths(lengths, 2), head_ids(4, 2)


model = torch.compile(Attention())
