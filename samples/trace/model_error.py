# The model itself is wrong: the eager stage fails, before graph mode is involved (layer model).
# expect-trace: verdict=model GT001@19
# expect-check: none
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(32, 8)
        self.bias = nn.Parameter(torch.zeros(6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x)
        # A bias of the wrong width: eager raises here, so no compile setting can help;
        # graphlint names layer "model" and this line. Fix: torch.zeros(8).
        scale = y.softmax(-1)
        return scale + self.bias


def graphlint_target():
    torch.manual_seed(0)
    return Head().eval(), (torch.randn(4, 32),)
