# expect-trace: verdict=accuracy
# expect-check: none
"""An in-place kernel registered as a custom op without declaring what it mutates.

``scale_`` writes into ``q`` (as fused in-place RoPE or norm kernels do, flashinfer#403), but
``mutates_args=()`` tells torch.compile it is a pure function returning nothing. Eager and dynamo
run it as written; AOTAutograd's functionalization trusts the declaration and drops the call, so
``aot_eager`` (and every backend built on it: inductor, torchair) returns the unscaled attention:
the accuracy layer. torch says such a declaration "MUST be accurate, otherwise, the behavior is
undefined" (pytorch#129614). Fix: ``mutates_args=("q",)``.
"""

import torch
from torch import nn


@torch.library.custom_op("graphlint_samples::scale_", mutates_args=())
def scale_(q: torch.Tensor, factor: float) -> None:
    q.mul_(factor)


@scale_.register_fake
def _(q: torch.Tensor, factor: float) -> None:
    return None


class Scores(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(8, 8)
        self.k = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = self.q(x)
        scale_(q, 8**-0.5)  # in place, before the product
        return (q @ self.k(x).T).softmax(-1)


torch.manual_seed(0)
model = Scores().eval()
example_inputs = (torch.randn(4, 8),)
