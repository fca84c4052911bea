"""pytorch#1474: torch.repeat_interleave without dim is very slow on NPU.

Grouped-query attention repeats keys/values per head; without dim the input is flattened
and aclnnRepeatInterleave runs with little parallelism. Pass dim (and int32 repeats).
"""
# expect-check: GL302@13 GL302@18

import torch


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, kv_heads, seqlen, head_dim = hidden_states.shape
    flat = torch.repeat_interleave(hidden_states, n_rep)
    return flat.view(batch, kv_heads * n_rep, seqlen, head_dim)


def expand_lengths(lengths: torch.Tensor, n_rep: int) -> torch.Tensor:
    return lengths.repeat_interleave(n_rep)


def repeat_kv_fast(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    return torch.repeat_interleave(hidden_states, n_rep, dim=1)
