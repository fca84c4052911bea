# str() of a size that dynamo made dynamic (torchair#602): the second input has another batch
# size, dynamo recompiles with a symbolic size, and str() of that SymInt breaks the graph.
# The static checker sees the same line (GL102), and the trace report marks it confirmed.
# expect-trace: verdict=dynamo GB0059@21
# expect-check: GL102@21
import torch
from torch import nn


class TaggedLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.cache: dict[str, torch.Tensor] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.shape[0]
        # A cache key from a size (npugraph_ex's scope name from aic_num): with a dynamic batch this is
        # str(SymInt), which dynamo cannot trace. Fix: torch._dynamo.config.automatic_dynamic_shapes = False
        y = self.proj(x)
        key = "batch_" + str(batch)
        return y * len(key)


# How the application compiles the layer; graphlint traces the uncompiled layer itself.
serve = torch.compile(TaggedLayer())


def graphlint_target():
    torch.manual_seed(0)
    layer = TaggedLayer().eval()
    return {"fn": layer, "inputs": [(torch.randn(4, 16),), (torch.randn(6, 16),), (torch.randn(8, 16),)]}


# torch 2.14 files str() of a SymInt under GB6053 ("tp_repr_impl not implemented"), not GB0059;
# the hint (torchair#602) follows the break's meaning, not its code.
# expect-trace[torch 2.14]: verdict=dynamo GB6053@21
