"""torchair#310: a helper carries its own @torch.compile inside a model that vLLM compiles.

Replay then fails with "Cannot prepare for replay": the inner compile nests a second capture in
the first. Fix: drop the helper's decorator; the model-level compile traces it anyway.
"""
# expect-check: GL101@23
# expect-region: GL101@23 capture nested_compile.py:49 Qwen2MoeBlock.forward>token_drop

import torch
import torchair
from torch import nn

config = torchair.CompilerConfig()
config.mode = "reduce-overhead"
npu_backend = torchair.get_npu_backend(compiler_config=config)


class Router(nn.Module):
    def forward(self, hidden):
        return hidden.softmax(-1)


@torch.compile(dynamic=True)
def token_drop(scores, capacity: int):
    top = scores.topk(capacity, dim=0).indices
    return scores.index_select(0, top.flatten())


class Qwen2MoeBlock(nn.Module):
    def __init__(self, hidden: int, capacity: int):
        super().__init__()
        self.router = Router()
        self.proj = nn.Linear(hidden, hidden)
        self.capacity = capacity

    def forward(self, hidden):
        scores = self.router(hidden)
        kept = token_drop(scores, self.capacity)
        return self.proj(kept)


def graphlint_target():
    block = Qwen2MoeBlock(16, 4)
    return block, (torch.randn(8, 16),)


if __name__ == "__main__":
    block = Qwen2MoeBlock(16, 4)
    model = torch.compile(block, backend=npu_backend, dynamic=False)
    print(model(torch.randn(8, 16)).shape)
