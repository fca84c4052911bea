# expect-check: none
# expect-trace: verdict=capture GL202@32
# trace-only: GL202@32 the sync is inside torch.repeat_interleave; the static rules cannot see it
# torch_npu 2.6.0.post5 and 2.8.0.post5 (the torch_npu of torch 2.6 and 2.8) have no NPU kernel
# for repeat_interleave.Tensor (2.7.1 and 2.10 on have it): there it also falls back to the CPU.
# expect-trace[torch 2.6 2.8]: verdict=capture GL202@32 GL204@32
# trace-only[torch 2.6 2.8]: GL202@32 the sync is inside torch.repeat_interleave; the static rules cannot see it
# trace-only[torch 2.6 2.8]: GL204@32 which ops have NPU kernels is known only from torch_npu's kernel list
"""A sync hidden inside a library call: the static checker and the trace differ here.

`torch.repeat_interleave(hidden, counts, dim=0)` with a tensor of counts allocates an output whose
length is `counts.sum()`, a value only the device knows: the host waits for it, which a captured
graph cannot do (torchair#236). Nothing on the line looks like a sync (no `.item()`, no mask),
so `graphlint check` reports nothing; the trace sees the data-dependent output shape in the aten
graph. Fix: pass `output_size=` (a host int known in advance), or pad to a fixed length.
"""

import torch
from torch import nn


class ExpandByCount(nn.Module):
    """Repeats each token by its count (as in MoE token dispatch)."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        hidden = self.proj(x)
        # the output length is counts.sum(), known only on the device
        expanded = torch.repeat_interleave(hidden, counts, dim=0)
        return expanded


model = ExpandByCount()
example_inputs = (torch.randn(3, 8), torch.tensor([1, 2, 3]))

if __name__ == "__main__":
    compiled = torch.compile(model, mode="reduce-overhead")
    print(compiled(*example_inputs).shape)
