# expect-check: none
# expect-trace: verdict=capture GL204@27
# trace-only: GL204@27 which ops have NPU kernels is known only from torch_npu's kernel list
"""An op with no NPU kernel inside the captured forward: it falls back to the CPU.

torch_npu 2.13.0 implements `lgamma` neither as `lgamma` nor as `lgamma.out`, and it does not
decompose, so on the NPU it runs through the CPU fallback: a device→host copy, the CPU kernel
and a copy back, which a captured graph cannot contain (torchair#236 hit the same with
`gelu.out` in an older torch_npu). The static checker does not know kernel lists and reports
nothing; the trace reads torch_npu's list (GL204). Needs torch_npu, installed or offline
(`graphlint torchair fetch`); without it the trace says the check was skipped.
Fix: an equivalent made of supported ops, or compute it outside the captured region.
"""

import torch
from torch import nn


class LogGammaHead(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rates = nn.functional.softplus(self.proj(x)) + 1.0
        # log Γ(rate): no NPU kernel in torch_npu 2.13.0
        return torch.lgamma(rates).sum(-1)


model = LogGammaHead()
example_inputs = (torch.randn(4, 8),)

if __name__ == "__main__":
    compiled = torch.compile(model, mode="reduce-overhead")
    print(compiled(*example_inputs).shape)
