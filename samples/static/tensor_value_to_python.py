"""A speech encoder's padding mask built from the batch's lengths, the way many CTC and
conformer encoders build it.

`int(lengths.max())` turns a tensor's value into a Python number. Under torch.compile dynamo
must read it on the host: with `capture_scalar_outputs=False` (the default) that is a graph break
("Unsupported Tensor.item() call", GB0124) on every call, and under graph capture a device sync.
Fix: take the size from a shape (`features.shape[1]`), and keep the mask a tensor comparison.
"""
# expect-check: GL107@23
# expect-trace: verdict=dynamo GB0124@23

import torch
from torch import nn


class PaddingMask(nn.Module):
    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, features: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        # the longest utterance, as a Python int: dynamo breaks the graph here
        max_len = int(lengths.max())
        positions = torch.arange(max_len, device=features.device)
        mask = positions[None, :] < lengths[:, None]
        return self.proj(features[:, :max_len]) * mask[..., None]


encoder = torch.compile(PaddingMask())


def graphlint_target():
    torch.manual_seed(0)
    return {"fn": PaddingMask().eval(), "inputs": [(torch.randn(2, 10, 32), torch.tensor([7, 10]))]}
