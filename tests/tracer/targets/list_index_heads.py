"""Multi-query attention in Falcon's shape: the key and value heads are picked from the fused
projection with list indices (``fused[..., [-2], :]``), which on the audit's meta device become
an index tensor torch creates mid-trace; after it, a host tensor copied to the device."""

import torch

HEADS, HEAD_DIM = 2, 4


class ListIndexHeads(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.qkv = torch.nn.Linear(8, (HEADS + 2) * HEAD_DIM)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fused = self.qkv(x).view(x.shape[0], x.shape[1], HEADS + 2, HEAD_DIM)
        query, key, value = fused[..., :-2, :], fused[..., [-2], :], fused[..., [-1], :]
        scores = (query @ key.transpose(-1, -2)).softmax(-1)
        positions = torch.arange(x.shape[1]).to(x.device)
        return (scores @ value).flatten(2) + positions[None, :, None]


model = ListIndexHeads()
example_inputs = (torch.randn(2, 3, 8),)
