# expect-check: none
# expect-trace: verdict=capture GL202@45
# trace-only: GL202@45 the sync is inside the op's CPU kernel, which the static rules treat as an opaque torch.ops call
"""A host sync inside an op given its kernel with `torch.library.Library.impl`.

The older custom-op API (`Library.define` + `Library.impl`, or the `torch.library.impl`
decorator) is what many serving projects and torch_npu-style extensions use. The aten graph has
one opaque node for the op, yet its Python kernel runs on every call: here it reads the counts
on the host (`counts.tolist()`), a sync a captured graph cannot do (torchair#236). The capture
audit looks inside the kernel and reports the call's line, with the line inside the kernel.
Fix: give the op a device kernel that needs no host values (e.g.
`torch.repeat_interleave(x, counts, dim=0, output_size=n)` with `n` known in advance).
"""

import torch
from torch import nn

LIBRARY = torch.library.Library("graphlint_samples", "DEF")  # kept alive: it owns the registrations
LIBRARY.define("expand_by_count(Tensor x, Tensor counts, int total) -> Tensor")


def expand_by_count(x: torch.Tensor, counts: torch.Tensor, total: int) -> torch.Tensor:
    rows = [x[i : i + 1].expand(n, -1) for i, n in enumerate(counts.tolist())]
    return torch.cat(rows)


def expand_by_count_shape(x: torch.Tensor, counts: torch.Tensor, total: int) -> torch.Tensor:
    return x.new_empty(total, x.shape[1])


LIBRARY.impl("expand_by_count", expand_by_count, "CPU")
LIBRARY.impl("expand_by_count", expand_by_count_shape, "Meta")


class ExpandByCount(nn.Module):
    """Repeats each token by its count (as in MoE token dispatch), through the library op."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        hidden = self.proj(x)
        total = x.shape[0] * 2  # the caller knows the total (here: every count is 2)
        return torch.ops.graphlint_samples.expand_by_count(hidden, counts, total)


model = ExpandByCount()
example_inputs = (torch.randn(3, 8), torch.tensor([2, 2, 2]))

if __name__ == "__main__":
    compiled = torch.compile(model, mode="reduce-overhead")
    print(compiled(*example_inputs).shape)
